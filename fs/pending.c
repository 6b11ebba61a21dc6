/*
 * pending.c: a request answered later from another thread, with its
 * caller's interrupts (pending.h says how the two sides meet), and the
 * watch of a file call: a caller being killed cancels its wait.
 */
#include "mfs.h"
#include "pending.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cancel.h"
#include "ctx.h"

static void pending_put(struct pending *p)
{
	if (atomic_fetch_sub(&p->refs, 1) != 1)
		return;
	pthread_mutex_destroy(&p->mu);
	free(p);   /* the first member of what was allocated */
}

/* Whether `pid` (in the daemon's pid namespace) is being killed: a fatal
 * signal leaves SIGKILL pending on every thread of its process. A caller
 * that cannot be seen (no pid, gone already, no /proc) counts as dying. */
static bool caller_dying(pid_t pid)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	__do_close int fd = pid > 0 ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (n <= 0)
		return true;
	buf[n] = '\0';
	static const char *const fields[] = { "\nSigPnd:", "\nShdPnd:" };
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		const char *at = strstr(buf, fields[i]);
		if (at && (strtoull(at + strlen(fields[i]), NULL, 16) & (1ULL << (SIGKILL - 1))))
			return true;
	}
	return false;
}

static void pending_interrupted(fuse_req_t req, void *arg)
{
	struct pending *p = arg;
	if (p->fatal_only && !caller_dying(p->pid))
		return;   /* a caught signal: the request goes on */
	pthread_mutex_lock(&p->mu);
	bool mine = p->state == PENDING_WAITING;
	if (p->state == PENDING_SETUP)
		p->interrupted = true;
	else if (mine)
		p->state = PENDING_ANSWERED;
	pthread_mutex_unlock(&p->mu);
	if (!mine)
		return;
	if (p->withdraw && p->withdraw(p))
		pending_put(p);   /* the work's reference: it will not call back */
	fuse_reply_err(req, EINTR);
	pending_put(p);   /* the answer's */
}

/* Set up `p` (zeroed, the first member of its allocation) for `req`; the
 * interrupt function is registered (an interrupt already there is recorded). */
void mfs_pending_start(struct pending *p, fuse_req_t req, bool fatal_only, void (*answer)(struct pending *p),
			  bool (*withdraw)(struct pending *p))
{
	const struct fuse_ctx *cx = fuse_req_ctx(req);
	p->req = req;
	p->pid = cx ? cx->pid : 0;
	p->fatal_only = fatal_only;
	p->answer = answer;
	p->withdraw = withdraw;
	atomic_init(&p->refs, 2);
	pthread_mutex_init(&p->mu, NULL);
	p->state = PENDING_SETUP;
	fuse_req_interrupt_func(req, pending_interrupted, p);
}

/* The work was not handed on: nothing else has `p`; the caller answers. */
void mfs_pending_abandon(struct pending *p)
{
	fuse_req_interrupt_func(p->req, NULL, NULL);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

/* The end of the setup: the work was handed on, and calls mfs_pending_done()
 * when it ends (unless withdrawn). Whatever came meanwhile is answered now. */
void mfs_pending_armed(struct pending *p)
{
	pthread_mutex_lock(&p->mu);
	bool interrupted = p->interrupted, finished = p->finished;
	p->state = interrupted || finished ? PENDING_ANSWERED : PENDING_WAITING;
	pthread_mutex_unlock(&p->mu);
	if (!interrupted && !finished)
		return;
	fuse_req_interrupt_func(p->req, NULL, NULL);
	if (finished) {
		p->answer(p);
	} else {
		if (p->withdraw && p->withdraw(p))
			pending_put(p);   /* the work's */
		fuse_reply_err(p->req, EINTR);
	}
	pending_put(p);   /* the answer's */
}

/* The work ended (any thread): answer, unless an interrupt did. */
void mfs_pending_done(struct pending *p)
{
	pthread_mutex_lock(&p->mu);
	bool mine = p->state == PENDING_WAITING;
	if (p->state == PENDING_SETUP)
		p->finished = true;   /* mfs_pending_armed() answers */
	else if (mine)
		p->state = PENDING_ANSWERED;
	pthread_mutex_unlock(&p->mu);
	if (mine) {
		fuse_req_interrupt_func(p->req, NULL, NULL);   /* waits out an interrupt in progress */
		p->answer(p);
		pending_put(p);
	}
	pending_put(p);   /* the work's */
}

/*
 * A file call (work/, root/) of the request at hand, which may wait for a
 * freeze behind an exec (the engine plane, -o frozen_reads; work.c): a
 * caller being killed cancels the wait (src/base/cancel.h: the freezer
 * gives up with EINTR, nothing paused). Only a dying caller, as for the
 * .ctl writes: a stat that failed EINTR on a caught signal would surprise
 * every program that does not retry it. The flag is the request's (ctx.h); end()
 * clears the interrupt function (waiting out a call in progress) before the
 * request is answered.
 */
static void call_interrupted(fuse_req_t req, void *arg)
{
	const struct fuse_ctx *cx = fuse_req_ctx(req);
	if (caller_dying(cx ? cx->pid : 0))
		atomic_store((atomic_bool *)arg, true);
}

void mfs_watch_begin(struct mfs_ctx *c)
{
	if (c->watches++ > 0 || !c->req)
		return;   /* nested, or the request was answered */
	atomic_store(&c->cancel, false);
	mafsbx_cancel_watch(&c->cancel);
	fuse_req_interrupt_func(c->req, call_interrupted, &c->cancel);
}

void mfs_watch_end(struct mfs_ctx *c)
{
	if (!c->watches || --c->watches > 0 || !c->req)
		return;
	fuse_req_interrupt_func(c->req, NULL, NULL);
	mafsbx_cancel_watch(NULL);
}

