/*
 * mount.h: what one mount holds for every operation (mount.c): the
 * registry of open handles, and what users other than the daemon's may
 * hold (open files, file calls that may wait, .ctl requests) per user and
 * in one pool they share. The registry and the counts are mount.c's own
 * (struct mfs_handles); the limit on requests running at once is mfs.h's.
 */
#ifndef MAFSBXFS_MOUNT_H
#define MAFSBXFS_MOUNT_H

#define FUSE_USE_VERSION 312

#include <fuse.h>
#include <stddef.h>
#include <sys/types.h>

struct mfs;
struct mfs_handle;

/* The registry and the counts made (fs->handles): 0, or -ENOMEM; and freed. */
int mfs_handles_init(struct mfs *fs);
void mfs_handles_fini(struct mfs *fs);

/* The handle in fi->fh (NULL for none). */
struct mfs_handle *mfs_handle_of(const struct fuse_file_info *fi);
/* Add the handle just opened into fi->fh to the mount's list / take it out. */
void mfs_handle_register(struct mfs *fs, const struct fuse_file_info *fi);
void mfs_handle_unregister(struct mfs *fs, struct mfs_handle *h);
/*
 * The per-user bound on open files, for mounts other users reach
 * (allow_other): each uid but the daemon's own may hold at most
 * mfs_user_counts(MFS_USER_OPENS).bound handles, and all of them together at
 * most its pool (half the open-file limit), so that no user, however
 * many uids it has, can take every descriptor of the daemon (or the memory
 * behind the engine plane's spools) from the mounting user. mfs_open_charge
 * counts one open for `uid` before the open does its work: 0, or -EMFILE
 * (logged once per user as it reaches its bound, once for the pool). The
 * open then either hands the count to its handle (mfs_open_charged: the
 * handle's release returns it) or returns it (mfs_open_uncharge).
 */
int mfs_open_charge(struct mfs *fs, uid_t uid);
void mfs_open_uncharge(struct mfs *fs, uid_t uid);
void mfs_open_charged(struct mfs *fs, const struct fuse_file_info *fi, uid_t uid);
/*
 * The per-user bound on file calls in flight that may wait for a freeze
 * (engine plane; -o frozen_reads opens): each waits (behind an exec, up to
 * the freezer's wait) on a FUSE worker thread, so another user's stats could
 * hold every worker. Each uid but the daemon's own may have at most
 * its bound (MFS_USER_CALLS) of them at once, all of them together at most
 * its pool (half of max_threads): mfs_call_charge counts one (0),
 * or refuses (-EBUSY, logged once per user as it reaches its bound, once for
 * the pool); mfs_call_uncharge returns it.
 */
int mfs_call_charge(struct mfs *fs, uid_t uid);
void mfs_call_uncharge(struct mfs *fs, uid_t uid);
/*
 * The others' pool of .ctl requests: a request on a handle another user
 * opened (running, or waiting for a transaction thread) counts against
 * the MFS_USER_REQUESTS pool, half of -o max_requests, so that the mounting
 * user's requests always find threads. 1 when counted (return it with
 * mfs_request_uncharge once the request ends), 0 for the daemon's own
 * user (nothing counted), -EBUSY past the pool (logged once), -ENOMEM.
 */
int mfs_request_charge(struct mfs *fs, struct mfs_handle *h);
void mfs_request_uncharge(struct mfs *fs, struct mfs_handle *h);

/* Call fn on each open handle (under the registry's lock, so fn must not
 * open or close one) until it returns nonzero; returns that value, or 0. */
int mfs_handles_each(struct mfs *fs, int (*fn)(struct mfs_handle *h, void *arg), void *arg);
/*
 * Free every handle still open (at unmount the kernel sends no release for
 * files left open) through its discard function. Unsent writes are dropped:
 * a file nobody closed is not sent half-written.
 */
void mfs_handles_discard_all(struct mfs *fs);

/* One of the per-user counts as it stands now (.ctl/engine, tests). */
enum mfs_user_kind { MFS_USER_OPENS, MFS_USER_CALLS, MFS_USER_REQUESTS };
struct mfs_user_counts {
	unsigned bound;              /* per user */
	unsigned pool;               /* all users but the daemon's together */
	unsigned total;              /* counted now */
	size_t users;                /* users with something counted */
};
void mfs_user_counts(struct mfs *fs, enum mfs_user_kind kind, struct mfs_user_counts *out);

#endif
