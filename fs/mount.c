/*
 * mount.c: the lifecycle of one mount: the `struct mfs` every operation
 * reaches through mfs_get() (a process-wide pointer: the daemon serves one
 * mount; unit tests install theirs with mfs_set_current()), its init and
 * teardown, the registry of open handles, and the limit on .ctl requests
 * running at once.
 *
 * The bottom of fs/: the operations (ops.c), work.c, requests.c call here;
 * this file calls only root.c's list teardown and each handle's own discard
 * function (a pointer in the handle), never an operation.
 */
#include "mfs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "log.h"

#include "names.h"

static struct mfs *current;

struct mfs *mfs_get(void)
{
	return current;
}

void mfs_set_current(struct mfs *fs)
{
	current = fs;
}

int mfs_init(struct mfs *fs)
{
	pthread_mutex_init(&fs->lock, NULL);
	pthread_mutex_init(&fs->handles_lock, NULL);
	fs->handles = NULL;
	fs->mount_time = time(NULL);
	fs->snap = NULL;
	fs->extras = NULL;
	atomic_init(&fs->requests_running, 0);
	/* Transactions run on their own threads (txn.c), as many as this. */
	fs->requests_max = (int)(fs->opt.max_requests ? fs->opt.max_requests : MFS_DEFAULT_MAX_REQUESTS);
	mfs_execs_init(fs);
	mfs_open_bound_init(fs);
	fs->scope_label[0] = '\0';
	if (fs->opt.scope)
		mafsbx_label_value(fs->opt.scope, fs->scope_label);
	return 0;
}

void mfs_fini(struct mfs *fs)
{
	mfs_execs_fini(fs);   /* before the handles: a `wait` reader is answered first */
	mfs_handles_discard_all(fs);
	mfs_passthrough_fini(fs);
	free(fs->user_opens);
	fs->user_opens = NULL;
	fs->n_user_opens = fs->cap_user_opens = 0;
	pthread_mutex_destroy(&fs->handles_lock);
	mfs_list_clear(fs);
	pthread_mutex_destroy(&fs->lock);
}

/* ---- the registry of open handles ---------------------------------------- */

struct mfs_handle *mfs_handle_of(const struct fuse_file_info *fi)
{
	return fi ? (struct mfs_handle *)(uintptr_t)fi->fh : NULL;
}

void mfs_handle_register(struct mfs *fs, const struct fuse_file_info *fi)
{
	struct mfs_handle *h = mfs_handle_of(fi);
	if (!fs || !h)
		return;
	pthread_mutex_lock(&fs->handles_lock);
	h->prev = NULL;
	h->next = fs->handles;
	if (fs->handles)
		fs->handles->prev = h;
	fs->handles = h;
	pthread_mutex_unlock(&fs->handles_lock);
}

void mfs_handle_unregister(struct mfs *fs, struct mfs_handle *h)
{
	if (!fs)
		return;
	pthread_mutex_lock(&fs->handles_lock);
	if (h->prev)
		h->prev->next = h->next;
	else if (fs->handles == h)
		fs->handles = h->next;
	if (h->next)
		h->next->prev = h->prev;
	h->prev = h->next = NULL;
	pthread_mutex_unlock(&fs->handles_lock);
	if (h->charged) {
		h->charged = false;
		mfs_open_uncharge(fs, h->owner);
	}
}

/* ---- open files per user ---------------------------------------------------- */

struct mfs_user_opens {
	uid_t uid;
	unsigned n;
	bool warned;   /* the refusal was logged since the user was last under the bound */
};

void mfs_open_bound_init(struct mfs *fs)
{
	fs->user_opens = NULL;
	fs->n_user_opens = fs->cap_user_opens = 0;
	if (fs->opt.max_open_per_user) {
		fs->open_per_user = fs->opt.max_open_per_user;
		return;
	}
	struct rlimit rl;
	rlim_t quarter = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? rl.rlim_cur / 4
											    : MFS_OPEN_PER_USER_MAX;
	fs->open_per_user = quarter < MFS_OPEN_PER_USER_MIN   ? MFS_OPEN_PER_USER_MIN
			    : quarter > MFS_OPEN_PER_USER_MAX ? MFS_OPEN_PER_USER_MAX
							      : (unsigned)quarter;
}

/* handles_lock held: the entry of `uid`, or NULL. */
static struct mfs_user_opens *user_entry(struct mfs *fs, uid_t uid)
{
	for (size_t i = 0; i < fs->n_user_opens; i++)
		if (fs->user_opens[i].uid == uid)
			return &fs->user_opens[i];
	return NULL;
}

int mfs_open_charge(struct mfs *fs, uid_t uid)
{
	if (uid == getuid())
		return 0;   /* the daemon's own user: bounded by the process's limit alone */
	pthread_mutex_lock(&fs->handles_lock);
	struct mfs_user_opens *u = user_entry(fs, uid);
	if (!u) {
		if (fs->n_user_opens == fs->cap_user_opens) {
			size_t nc = fs->cap_user_opens ? fs->cap_user_opens * 2 : 8;
			struct mfs_user_opens *a = realloc(fs->user_opens, nc * sizeof(*a));
			if (!a) {
				pthread_mutex_unlock(&fs->handles_lock);
				return -ENOMEM;
			}
			fs->user_opens = a;
			fs->cap_user_opens = nc;
		}
		u = &fs->user_opens[fs->n_user_opens++];
		*u = (struct mfs_user_opens){ .uid = uid };
	}
	if (u->n >= fs->open_per_user) {
		bool first = !u->warned;
		u->warned = true;
		pthread_mutex_unlock(&fs->handles_lock);
		if (first)
			log_warn("uid %u holds %u open files on this mount, the most one user may (-o max_open_per_user=%u): "
				 "its further opens fail with EMFILE until it closes some",
				 (unsigned)uid, fs->open_per_user, fs->open_per_user);
		return -EMFILE;
	}
	u->n++;
	pthread_mutex_unlock(&fs->handles_lock);
	return 0;
}

void mfs_open_uncharge(struct mfs *fs, uid_t uid)
{
	if (uid == getuid())
		return;
	pthread_mutex_lock(&fs->handles_lock);
	struct mfs_user_opens *u = user_entry(fs, uid);
	if (u && u->n > 0 && --u->n == 0)
		*u = fs->user_opens[--fs->n_user_opens];   /* no entry kept for a user with nothing open */
	else if (u && u->n < fs->open_per_user)
		u->warned = false;
	pthread_mutex_unlock(&fs->handles_lock);
}

void mfs_open_charged(struct mfs *fs, const struct fuse_file_info *fi, uid_t uid)
{
	if (uid == getuid())
		return;
	struct mfs_handle *h = mfs_handle_of(fi);
	if (!h) {
		mfs_open_uncharge(fs, uid);   /* an open that holds nothing (a virtual directory) */
		return;
	}
	pthread_mutex_lock(&fs->handles_lock);
	h->owner = uid;
	h->charged = true;
	pthread_mutex_unlock(&fs->handles_lock);
}

int mfs_handles_each(struct mfs *fs, int (*fn)(struct mfs_handle *h, void *arg), void *arg)
{
	int r = 0;
	pthread_mutex_lock(&fs->handles_lock);
	for (struct mfs_handle *h = fs->handles; h && r == 0; h = h->next)
		r = fn(h, arg);
	pthread_mutex_unlock(&fs->handles_lock);
	return r;
}

void mfs_handles_discard_all(struct mfs *fs)
{
	pthread_mutex_lock(&fs->handles_lock);
	struct mfs_handle *h = fs->handles;
	fs->handles = NULL;
	pthread_mutex_unlock(&fs->handles_lock);
	while (h) {
		struct mfs_handle *next = h->next;
		if (h->discard)
			h->discard(h);
		h = next;
	}
}

/* ---- the request limit ------------------------------------------------------ */

int mfs_request_enter(struct mfs *fs, const char *what, struct mafsbx_error *err)
{
	int running = atomic_fetch_add(&fs->requests_running, 1);
	if (running < fs->requests_max)
		return 0;
	atomic_fetch_sub(&fs->requests_running, 1);
	return mafsbx_error_set_full(err, MAFSBX_EK_CONFLICT, EBUSY, "RuntimeError",
				     "%s: %d requests are running already, the most this mount allows "
				     "(raise -o max_requests)",
				     what, running);
}

void mfs_request_leave(struct mfs *fs)
{
	atomic_fetch_sub(&fs->requests_running, 1);
}
