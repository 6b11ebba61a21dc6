/*
 * cancel.h: a thread's cancellation flag, for the waits that can be long (a
 * file call waiting for a freeze behind an exec, src/freeze/freeze.c).
 *
 * The caller points its own thread at an atomic flag for the length of a
 * call; another thread sets the flag (the daemon's FUSE interrupt handler,
 * when the caller is killed); the long waits poll mafsbx_cancelled() and
 * give up with EINTR, having done nothing. A thread pointed at no flag is
 * never cancelled, so every other user of the library is unchanged.
 */
#ifndef MAFSBX_CANCEL_H
#define MAFSBX_CANCEL_H

#include <stdatomic.h>
#include <stdbool.h>

/* This thread's waits watch *flag from now on (NULL: none). The flag must
 * outlive the watch. */
void mafsbx_cancel_watch(atomic_bool *flag);
/* Whether this thread's flag is set. */
bool mafsbx_cancelled(void);

#endif
