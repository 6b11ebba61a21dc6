/*
 * cancel.c: the thread's cancellation flag (cancel.h). One pointer per
 * thread; the flag itself belongs to the caller.
 */
#include "cancel.h"

#include <stddef.h>

static _Thread_local atomic_bool *watched;

void mafsbx_cancel_watch(atomic_bool *flag)
{
	watched = flag;
}

bool mafsbx_cancelled(void)
{
	return watched && atomic_load(watched);
}
