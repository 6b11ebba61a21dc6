/*
 * target.c: a sandbox's plane target for one file call of a request
 * (work.c): NAME resolved through the sandbox list (mfs_target_of), the
 * call counted for another user, the caller's watch begun, and all of it
 * undone by mfs_target_put(); a call on a container that is gone retried
 * once with a fresh lookup; a plane error turned into the errno.
 */
#include "ctx.h"
#include "mfs.h"
#include "mount.h"
#include "target.h"

#include <errno.h>
#include <unistd.h>

#include "log.h"
#include "sandbox.h"

/* The errno of a failed plane call, logged unless it is an ordinary answer. */
int mfs_plane_errno(const char *what, const struct mfs_node *n, const struct mafsbx_error *e, int r)
{
	int en = -mafsbx_error_errno(e, r < 0 ? r : -EIO);
	if (en != ENOENT && en != EEXIST && en != ENOTEMPTY && en != ELOOP && en != EACCES)
		log_debug("%s %s/%s/%s: %s", what, n->name, n->type == MFS_N_ROOTFS ? "root" : "work", n->rel,
			  e->message);
	return -en;
}

/*
 * File calls resolve NAME through a sandbox list up to this old (or
 * attr_timeout, if longer): a name's container changes only when the sandbox
 * is disposed and made again, and a call on a container that is gone fails
 * with EK_NO_CONTAINER, upon which it is retried once with a fresh lookup
 * (mfs_retry_stale). Asking the engine for every path component would cost
 * milliseconds where the local plane costs microseconds.
 */
bool mfs_retry_stale(struct mfs *fs, int attempt, int r, const struct mafsbx_error *e)
{
	if (r >= 0 || attempt > 0 || e->kind != MAFSBX_EK_NO_CONTAINER)
		return false;
	mfs_snapshot_invalidate(fs);
	return true;
}

/*
 * The caller of the plane call in progress on this thread, from mfs_target_of()
 * to mfs_target_put(): the plane charges an open's spool to whoever opens it,
 * and asks for them per thread (mafsbx_plane_config.caller_uid), below
 * the request's context it was not handed.
 */
static __thread const struct mfs_ctx *plane_caller;

bool mfs_work_caller_uid(uid_t *uid)
{
	const struct mfs_ctx *c = plane_caller;
	*uid = c ? c->uid : 0;
	return c && c->known;
}

/*
 * Another user's calls on the engine plane are bounded (mfs_call_charge):
 * each may wait for a freeze behind an exec of the sandbox, holding a FUSE
 * worker thread. So may a local-plane open for reading with -o frozen_reads
 * (its copy is made under a freeze): open_file() counts it too. mfs_target_of()
 * counts the call and mfs_target_put() returns it; the two are paired on one
 * request, whose context (ctx.h) keeps the charge.
 */
/* Count this request's call for its caller when that is another user. 0 or -EBUSY. */
int mfs_charge_call(struct mfs_ctx *c)
{
	if (c->call_charged || !c->known || c->uid == getuid())
		return 0;
	int r = mfs_call_charge(c->fs, c->uid);
	if (r == 0) {
		c->call_charged = true;
		c->call_uid = c->uid;
	}
	return r;
}

/* The plane target of a sandbox. Returns the snapshot holding `info` (the
 * caller puts it with target_put) or NULL with the errno in *errp (EBUSY:
 * the caller, another user, has its most engine-plane calls waiting).
 * `fresh`: ask the engine. */
struct mfs_snapshot *mfs_target_of(struct mfs_ctx *c, const char *name, const struct mafsbx_sandbox_info **info,
				      struct mafsbx_plane_target *t, int *errp, bool fresh)
{
	struct mfs *fs = c->fs;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	long long age = (long long)(fs->opt.attr_timeout * 1000.0);
	if (age < MFS_FILE_TARGET_MS)
		age = MFS_FILE_TARGET_MS;
	struct mfs_snapshot *s = mfs_sandbox_find_age(fs, name, fresh ? -1 : age, info, &e);
	if (!s) {
		*errp = mafsbx_error_errno(&e, -ENOENT);
		return NULL;
	}
	t->id = (*info)->id;
	t->name = (*info)->name;
	t->work_dir = (*info)->work_dir ? (*info)->work_dir : MAFSBX_DEFAULT_WORK_DIR;
	c->call_charged = false;
	if (c->known && c->uid != getuid() && mafsbx_plane_which(fs->planes, t, NULL, 0) == MAFSBX_PK_ENGINE) {
		int r = mfs_charge_call(c);
		if (r < 0) {
			mfs_snapshot_put(s);
			*errp = r;
			return NULL;
		}
	}
	/* every plane: the engine's waits for a freeze, and -o frozen_reads' local ones */
	c->call_watched = true;
	if (c->watch_begin)
		c->watch_begin(c);
	plane_caller = c;
	return s;
}

/* The end of a call that mfs_target_of() began. */
void mfs_target_put(struct mfs_ctx *c, struct mfs_snapshot *s)
{
	mfs_snapshot_put(s);
	plane_caller = NULL;
	if (c->call_watched) {
		c->call_watched = false;
		if (c->watch_end)
			c->watch_end(c);
	}
	if (c->call_charged) {
		c->call_charged = false;
		mfs_call_uncharge(c->fs, c->call_uid);
	}
}

enum mafsbx_plane_base mfs_base_of(const struct mfs_node *n)
{
	return n->type == MFS_N_ROOTFS ? MAFSBX_BASE_ROOT : MAFSBX_BASE_WORK;
}
