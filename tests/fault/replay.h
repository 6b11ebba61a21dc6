/*
 * replay.h: stale answers for the fault relay (relay.c, `rule replay`): what
 * dockerd 26 does to GET /info, whose answer it shares among the calls
 * that arrive while it is being computed (a singleflight group), so that a
 * call may get an answer computed before it was made.
 */
#ifndef MAFSBX_FAULT_REPLAY_H
#define MAFSBX_FAULT_REPLAY_H

#include <stddef.h>

/*
 * An answer to `target` at least age_ms old, framed for a kept-alive
 * HTTP/1.1 connection with a fresh Date header (malloc'd, *len bytes), or
 * NULL when none is that old yet. The first call for a target starts
 * fetching it from the engine socket `engine` in the background, every
 * REPLAY_EVERY_MS from then on; NULL is returned until an answer is old
 * enough, and the request then goes to the engine as usual.
 */
char *replay_answer(const char *engine, const char *target, long age_ms, size_t *len);
/* Stop fetching (the thread is joined). */
void replay_stop(void);

#endif
