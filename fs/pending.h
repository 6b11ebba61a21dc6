/*
 * pending.h: requests of the kernel-facing layer (lowlevel.c) answered
 * later, from another thread, and the interrupts of their callers
 * (pending.c); the watch of a file call whose caller may be killed.
 */
#ifndef MAFSBXFS_PENDING_H
#define MAFSBXFS_PENDING_H

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

struct mfs_ctx;

/*
 * A request answered later from another thread (a `wait` read parked until
 * its command ends, a .ctl write whose transaction runs on a transaction
 * thread), which honours FUSE interrupts: a caller killed meanwhile waits in
 * state D until its request is answered, so an interrupt answers it with
 * EINTR at once. Exactly one of the interrupt and the work's end answers.
 *
 * libfuse calls the interrupt function with the request's own lock held, at
 * any time until the request is answered, even while another thread answers
 * it; fuse_req_interrupt_func(req, NULL, NULL) waits out a call in progress
 * and stops later ones. Hence:
 *  - while the request is set up (SETUP) neither side answers, each only
 *    records what happened, and the setup answers as it ends: an answer from
 *    inside fuse_req_interrupt_func() would free the request under libfuse,
 *    and an answer would let the kernel release the open file the setup uses;
 *  - the work's end clears the interrupt function before it answers;
 *  - the interrupt answers from inside the function (libfuse keeps the
 *    request for the call), after taking the work's callback back where it
 *    can (`withdraw`), before the answer lets the open file go.
 * Two references: the answer's and the work callback's.
 *
 * A request whose retry would do its work again (a .ctl write, rmdir NAME:
 * `fatal_only`) gives way only to a caller being killed: a caught signal
 * (SIGCHLD, a handler that returns) answered EINTR would make a caller that
 * retries, as Python does, run the request twice. The kernel interrupts a
 * request once, at the first signal: a caller that caught one and is
 * killed later waits for the work as before.
 */
enum pending_state { PENDING_SETUP, PENDING_WAITING, PENDING_ANSWERED };

struct pending {
	fuse_req_t req;
	pid_t pid;                           /* the caller */
	bool fatal_only;
	void (*answer)(struct pending *p);   /* the ordinary answer, once the work is done */
	bool (*withdraw)(struct pending *p); /* NULL, or: true when the work will not call back */
	atomic_int refs;
	pthread_mutex_t mu;                  /* the three below */
	enum pending_state state;
	bool interrupted, finished;          /* what happened during SETUP */
};

/* Set up `p` (zeroed, the first member of its allocation) for `req`; the
 * interrupt function is registered (an interrupt already there is recorded). */
void mfs_pending_start(struct pending *p, fuse_req_t req, bool fatal_only, void (*answer)(struct pending *p),
		       bool (*withdraw)(struct pending *p));
/* The work was not handed on: nothing else has `p`; the caller answers. */
void mfs_pending_abandon(struct pending *p);
/* The end of the setup: the work was handed on, and calls mfs_pending_done()
 * when it ends (unless withdrawn). Whatever came meanwhile is answered now. */
void mfs_pending_armed(struct pending *p);
/* The work ended (any thread): answer, unless an interrupt did. */
void mfs_pending_done(struct pending *p);

/* The watch of a file call of the request `c` (the context's watch_begin and watch_end). */
void mfs_watch_begin(struct mfs_ctx *c);
void mfs_watch_end(struct mfs_ctx *c);

#endif
