/*
 * ctx.h: the request at hand, as the kernel-facing layer (lowlevel.c)
 * hands it down to the node and handle operations: the mount, who asks
 * (uid, gid, pid), and the caller's watch (a file call that may wait for a
 * freeze gives way when its caller is being killed). No thread-local and no
 * global accessor holds any of it: an operation reads what it was given.
 *
 * The watch is the kernel-facing layer's own (it registers the FUSE
 * interrupt): it is reached through the two function pointers it sets, so
 * that the layers below never call up. A request with none (a unit test, a
 * transaction thread, a release after the answer) leaves them NULL.
 */
#ifndef MAFSBXFS_CTX_H
#define MAFSBXFS_CTX_H

#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>

struct mfs;

struct mfs_ctx {
	struct mfs *fs;
	bool known;                  /* uid, gid, pid are a FUSE request's caller's */
	uid_t uid;
	gid_t gid;
	pid_t pid;
	/* The caller's watch (lowlevel.c): begin and end are paired, nested calls count. */
	void (*watch_begin)(struct mfs_ctx *c);
	void (*watch_end)(struct mfs_ctx *c);
	void *req;                   /* the FUSE request watched; NULL once answered */
	atomic_bool cancel;          /* set by the interrupt of a dying caller */
	unsigned watches;
	/* work.c: this request's engine-plane call counted for another user. */
	bool call_charged, call_watched;
	uid_t call_uid;
};

/* A context with no caller (unit tests, transaction threads). */
static inline void mfs_ctx_plain(struct mfs_ctx *c, struct mfs *fs)
{
	*c = (struct mfs_ctx){ .fs = fs };
}

#endif
