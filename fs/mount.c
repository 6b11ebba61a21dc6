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

static void user_table_free(struct mfs_user_table *t);

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
	user_table_free(&fs->user_opens);
	user_table_free(&fs->user_calls);
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

/* ---- per-user counts: open files, engine-plane calls -------------------------- */

struct mfs_user_count {
	uid_t uid;
	unsigned n;
	bool warned;   /* the refusal was logged since the user was last under the bound */
};

void mfs_open_bound_init(struct mfs *fs)
{
	fs->user_opens = (struct mfs_user_table){ 0 };
	fs->user_calls = (struct mfs_user_table){ 0 };
	if (fs->opt.max_calls_per_user) {
		fs->user_calls.bound = fs->opt.max_calls_per_user;
	} else {
		unsigned threads = fs->opt.max_threads ? fs->opt.max_threads : MFS_DEFAULT_MAX_THREADS;
		fs->user_calls.bound = threads / 4 ? threads / 4 : 1;
	}
	if (fs->opt.max_open_per_user) {
		fs->user_opens.bound = fs->opt.max_open_per_user;
		return;
	}
	struct rlimit rl;
	rlim_t quarter = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? rl.rlim_cur / 4
											    : MFS_OPEN_PER_USER_MAX;
	fs->user_opens.bound = quarter < MFS_OPEN_PER_USER_MIN   ? MFS_OPEN_PER_USER_MIN
			       : quarter > MFS_OPEN_PER_USER_MAX ? MFS_OPEN_PER_USER_MAX
								 : (unsigned)quarter;
}

static void user_table_free(struct mfs_user_table *t)
{
	free(t->users);
	t->users = NULL;
	t->n = t->cap = 0;
}

/* handles_lock held: the entry of `uid`, or NULL. */
static struct mfs_user_count *user_entry(struct mfs_user_table *t, uid_t uid)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->users[i].uid == uid)
			return &t->users[i];
	return NULL;
}

/* Count one for `uid` in `t`: 0, -ENOMEM, or 1 when the user is at the
 * bound (*first: this refusal is the first since it was last under it). */
static int user_charge(struct mfs *fs, struct mfs_user_table *t, uid_t uid, bool *first)
{
	pthread_mutex_lock(&fs->handles_lock);
	struct mfs_user_count *u = user_entry(t, uid);
	if (!u) {
		if (mafsbx_array_grow(&t->users, &t->cap, t->n + 1, sizeof(*t->users), 8, 0) < 0) {
			pthread_mutex_unlock(&fs->handles_lock);
			return -ENOMEM;
		}
		u = &t->users[t->n++];
		*u = (struct mfs_user_count){ .uid = uid };
	}
	if (u->n >= t->bound) {
		*first = !u->warned;
		u->warned = true;
		pthread_mutex_unlock(&fs->handles_lock);
		return 1;
	}
	u->n++;
	pthread_mutex_unlock(&fs->handles_lock);
	return 0;
}

static void user_uncharge(struct mfs *fs, struct mfs_user_table *t, uid_t uid)
{
	pthread_mutex_lock(&fs->handles_lock);
	struct mfs_user_count *u = user_entry(t, uid);
	if (u && u->n > 0 && --u->n == 0)
		*u = t->users[--t->n];   /* no entry kept for a user with nothing counted */
	else if (u && u->n < t->bound)
		u->warned = false;
	pthread_mutex_unlock(&fs->handles_lock);
}

int mfs_open_charge(struct mfs *fs, uid_t uid)
{
	if (uid == getuid())
		return 0;   /* the daemon's own user: bounded by the process's limit alone */
	bool first = false;
	int r = user_charge(fs, &fs->user_opens, uid, &first);
	if (r <= 0)
		return r;
	if (first)
		log_warn("uid %u holds %u open files on this mount, the most one user may (-o max_open_per_user=%u): "
			 "its further opens fail with EMFILE until it closes some",
			 (unsigned)uid, fs->user_opens.bound, fs->user_opens.bound);
	return -EMFILE;
}

void mfs_open_uncharge(struct mfs *fs, uid_t uid)
{
	if (uid == getuid())
		return;
	user_uncharge(fs, &fs->user_opens, uid);
}

int mfs_call_charge(struct mfs *fs, uid_t uid)
{
	if (uid == getuid())
		return 0;   /* the daemon's own user: bounded by the worker threads alone */
	bool first = false;
	int r = user_charge(fs, &fs->user_calls, uid, &first);
	if (r <= 0)
		return r;
	if (first)
		log_warn("uid %u has %u engine-plane file calls waiting on this mount, the most one user may "
			 "(-o max_calls_per_user=%u): its further calls fail with EBUSY until some end",
			 (unsigned)uid, fs->user_calls.bound, fs->user_calls.bound);
	return -EBUSY;
}

void mfs_call_uncharge(struct mfs *fs, uid_t uid)
{
	if (uid == getuid())
		return;
	user_uncharge(fs, &fs->user_calls, uid);
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
