/*
 * mount.c: what one mount holds for every operation (the `struct mfs` an
 * operation is handed in its request's context, ctx.h): the registry of
 * open handles, and what users other than the daemon's may hold: open
 * files, file calls that may wait and .ctl requests, per user and in one
 * pool all of them share. (The limit on .ctl requests running at once is
 * the transaction threads', txn.c.)
 *
 * The bottom of fs/: the node kinds (kinds.c, handles.c), work.c, ctl.c,
 * requests.c call here; this file calls only each handle's own discard
 * function (a pointer in the handle), never an operation. The mount's
 * start and end are lifecycle.c's.
 */
#include "mfs.h"
#include "mount.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "log.h"

#include "names.h"

/* A count per user with its bound, and the pool all of them share:
 * open files, file calls that may wait, .ctl requests. */
struct mfs_user_count;
struct mfs_user_table {
	struct mfs_user_count *users;  /* only users with something counted */
	size_t n, cap;
	unsigned bound;              /* per user, within the pool (open_bound_init) */
	unsigned pool;               /* all users but the daemon's together: below the daemon's limit */
	unsigned total;              /* counted now, all users together */
	bool pool_warned;            /* the pool's refusal was logged since it last drained to half */
	const char *what;            /* "open files": for the log */
	const char *pool_rule;       /* how the pool was sized: for the log */
};

/* The mount's open handles and the per-user counts: this file's own. */
struct mfs_handles {
	pthread_mutex_t lock;        /* guards everything below, and each handle's owner and charged */
	struct mfs_handle *list;
	struct mfs_user_table opens;    /* open handles per user (not the daemon's own) */
	struct mfs_user_table calls;    /* engine-plane file calls in flight per user (work.c) */
	struct mfs_user_table requests; /* .ctl requests running or queued per user (ctl.c) */
};

static void user_table_free(struct mfs_user_table *t);
static void open_bound_init(struct mfs *fs);

int mfs_handles_init(struct mfs *fs)
{
	struct mfs_handles *hs = calloc(1, sizeof(*hs));
	if (!hs)
		return -ENOMEM;
	pthread_mutex_init(&hs->lock, NULL);
	fs->handles = hs;
	open_bound_init(fs);
	return 0;
}

void mfs_handles_fini(struct mfs *fs)
{
	struct mfs_handles *hs = fs->handles;
	if (!hs)
		return;
	user_table_free(&hs->opens);
	user_table_free(&hs->calls);
	user_table_free(&hs->requests);
	pthread_mutex_destroy(&hs->lock);
	free(hs);
	fs->handles = NULL;
}

void mfs_user_counts(struct mfs *fs, enum mfs_user_kind kind, struct mfs_user_counts *out)
{
	struct mfs_handles *hs = fs->handles;
	const struct mfs_user_table *t = kind == MFS_USER_OPENS ? &hs->opens : kind == MFS_USER_CALLS ? &hs->calls
												  : &hs->requests;
	pthread_mutex_lock(&hs->lock);
	*out = (struct mfs_user_counts){ .bound = t->bound, .pool = t->pool, .total = t->total, .users = t->n };
	pthread_mutex_unlock(&hs->lock);
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
	pthread_mutex_lock(&fs->handles->lock);
	h->prev = NULL;
	h->next = fs->handles->list;
	if (fs->handles->list)
		fs->handles->list->prev = h;
	fs->handles->list = h;
	pthread_mutex_unlock(&fs->handles->lock);
}

void mfs_handle_unregister(struct mfs *fs, struct mfs_handle *h)
{
	if (!fs)
		return;
	pthread_mutex_lock(&fs->handles->lock);
	if (h->prev)
		h->prev->next = h->next;
	else if (fs->handles->list == h)
		fs->handles->list = h->next;
	if (h->next)
		h->next->prev = h->prev;
	h->prev = h->next = NULL;
	pthread_mutex_unlock(&fs->handles->lock);
	if (h->charged) {
		h->charged = false;
		mfs_open_uncharge(fs, h->owner);
	}
}

/* ---- per-user counts and the others' pool: open files, waiting calls ---------- */

/*
 * Every uid but the daemon's own is bounded twice: by its own count (the
 * per-user bound) and by the sum over all of them (the others' pool). A
 * local user with subordinate ids (/etc/subuid: 65,536 each on Debian) has
 * as many uids as it likes, so per-uid bounds alone let it take every
 * descriptor or worker thread; the pool is strictly smaller than the
 * daemon's limit, which leaves the mounting user a reserve no number of
 * uids can take.
 */
struct mfs_user_count {
	uid_t uid;
	unsigned n;
	bool warned;   /* the refusal was logged since the user was last under the bound */
};

/* The per-user bound inside the pool: one user alone never passes it. */
static unsigned within(unsigned bound, unsigned pool)
{
	return bound < pool ? bound : pool;
}

/* The others' pool of open files: half the daemon's descriptors. */
static unsigned open_pool_of(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return MFS_OPEN_OTHERS_MAX;
	rlim_t half = rl.rlim_cur / 2;
	return half > MFS_OPEN_OTHERS_MAX ? MFS_OPEN_OTHERS_MAX : (unsigned)half;
}

static void open_bound_init(struct mfs *fs)
{
	fs->handles->opens = (struct mfs_user_table){ .what = "open files", .pool_rule = "half the open-file limit" };
	fs->handles->calls = (struct mfs_user_table){ .what = "file calls that may wait",
						  .pool_rule = "half of -o max_threads" };
	unsigned threads = fs->opt.max_threads ? fs->opt.max_threads : MFS_DEFAULT_MAX_THREADS;
	/* Half the workers: a waiting call holds one; the other half stays the mounting user's. */
	fs->handles->calls.pool = threads / 2;
	unsigned calls = fs->opt.max_calls_per_user ? fs->opt.max_calls_per_user : (threads / 4 ? threads / 4 : 1);
	fs->handles->calls.bound = within(calls, fs->handles->calls.pool);
	fs->handles->opens.pool = open_pool_of();
	unsigned opens = fs->opt.max_open_per_user;
	if (!opens) {
		/* a quarter of the descriptors (half the pool), within these bounds */
		unsigned quarter = fs->handles->opens.pool / 2;
		opens = quarter < MFS_OPEN_PER_USER_MIN	  ? MFS_OPEN_PER_USER_MIN
			: quarter > MFS_OPEN_PER_USER_MAX ? MFS_OPEN_PER_USER_MAX
							  : quarter;
	}
	fs->handles->opens.bound = within(opens, fs->handles->opens.pool);
	/* .ctl requests (reached by another uid only with CAP_DAC_OVERRIDE over
	 * the mounting user's 0600 files): half the transaction threads */
	fs->handles->requests = (struct mfs_user_table){ .what = ".ctl requests running or waiting",
						     .pool_rule = "half of -o max_requests" };
	fs->handles->requests.pool = fs->requests_max > 0 ? (unsigned)fs->requests_max / 2 : 0;
	fs->handles->requests.bound = fs->handles->requests.pool;
	log_info("users other than uid %u share one pool of %u open files, %u file calls that may wait (of %u "
		 "worker threads) and %u .ctl requests; each of them holds at most %u open files and %u calls",
		 (unsigned)getuid(), fs->handles->opens.pool, fs->handles->calls.pool, threads, fs->handles->requests.pool,
		 fs->handles->opens.bound, fs->handles->calls.bound);
}

static void user_table_free(struct mfs_user_table *t)
{
	free(t->users);
	t->users = NULL;
	t->n = t->cap = 0;
}

/* handles->lock held: the entry of `uid`, or NULL. */
static struct mfs_user_count *user_entry(struct mfs_user_table *t, uid_t uid)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->users[i].uid == uid)
			return &t->users[i];
	return NULL;
}

/* handles->lock held: drop an entry with nothing counted. */
static void user_entry_drop(struct mfs_user_table *t, struct mfs_user_count *u)
{
	*u = t->users[--t->n];
}

enum charge { CHARGED = 0, USER_FULL = 1, POOL_FULL = 2 };

/* Count one for `uid` in `t`: CHARGED, -ENOMEM, USER_FULL (the user is at
 * its bound) or POOL_FULL (all other users together are at the pool);
 * *first: the refusal is the first since the user (or the pool) was last
 * under it, and is to be logged. */
static int user_charge(struct mfs *fs, struct mfs_user_table *t, uid_t uid, bool *first)
{
	pthread_mutex_lock(&fs->handles->lock);
	struct mfs_user_count *u = user_entry(t, uid);
	if (!u) {
		if (mafsbx_array_grow(&t->users, &t->cap, t->n + 1, sizeof(*t->users), 8, 0) < 0) {
			pthread_mutex_unlock(&fs->handles->lock);
			return -ENOMEM;
		}
		u = &t->users[t->n++];
		*u = (struct mfs_user_count){ .uid = uid };
	}
	int r = CHARGED;
	if (u->n >= t->bound && t->bound < t->pool) {
		*first = !u->warned;
		u->warned = true;
		r = USER_FULL;
	} else if (t->total >= t->pool) {
		/* once per time the pool fills: 65,536 uids must not write 65,536 lines */
		*first = !t->pool_warned;
		t->pool_warned = true;
		r = POOL_FULL;
		if (u->n == 0)
			user_entry_drop(t, u);
	} else {
		u->n++;
		t->total++;
	}
	pthread_mutex_unlock(&fs->handles->lock);
	return r;
}

static void user_uncharge(struct mfs *fs, struct mfs_user_table *t, uid_t uid)
{
	pthread_mutex_lock(&fs->handles->lock);
	struct mfs_user_count *u = user_entry(t, uid);
	if (u && u->n > 0) {
		t->total--;
		if (--u->n == 0)
			user_entry_drop(t, u);   /* no entry kept for a user with nothing counted */
		else if (u->n < t->bound)
			u->warned = false;
	}
	/* the pool's refusal is logged again only once it has drained to half:
	 * a pool held full by many uids is one event, not one per release */
	if (t->total <= t->pool / 2)
		t->pool_warned = false;
	pthread_mutex_unlock(&fs->handles->lock);
}

/* The pool's refusal, logged once (see user_charge): names the pool. */
static void pool_refused(const struct mfs_user_table *t, uid_t uid)
{
	log_warn("the others' pool is full: users other than uid %u together hold %u %s on this mount, the most "
		 "all of them may (%s); uid %u and every other such user are refused until some end, while "
		 "uid %u keeps the rest",
		 (unsigned)getuid(), t->pool, t->what, t->pool_rule, (unsigned)uid, (unsigned)getuid());
}

int mfs_open_charge(struct mfs *fs, uid_t uid)
{
	if (uid == getuid())
		return 0;   /* the daemon's own user: bounded by the process's limit alone */
	bool first = false;
	int r = user_charge(fs, &fs->handles->opens, uid, &first);
	if (r <= 0)
		return r;
	if (first && r == POOL_FULL)
		pool_refused(&fs->handles->opens, uid);
	else if (first)
		log_warn("uid %u holds %u open files on this mount, the most one user may (-o max_open_per_user=%u): "
			 "its further opens fail with EMFILE until it closes some",
			 (unsigned)uid, fs->handles->opens.bound, fs->handles->opens.bound);
	return -EMFILE;
}

void mfs_open_uncharge(struct mfs *fs, uid_t uid)
{
	if (uid == getuid())
		return;
	user_uncharge(fs, &fs->handles->opens, uid);
}

int mfs_call_charge(struct mfs *fs, uid_t uid)
{
	if (uid == getuid())
		return 0;   /* the daemon's own user: bounded by the worker threads alone */
	bool first = false;
	int r = user_charge(fs, &fs->handles->calls, uid, &first);
	if (r <= 0)
		return r;
	if (first && r == POOL_FULL)
		pool_refused(&fs->handles->calls, uid);
	else if (first)
		log_warn("uid %u has %u engine-plane file calls waiting on this mount (or -o frozen_reads reads), "
			 "the most one user may (-o max_calls_per_user=%u): its further calls fail with EBUSY until "
			 "some end",
			 (unsigned)uid, fs->handles->calls.bound, fs->handles->calls.bound);
	return -EBUSY;
}

void mfs_call_uncharge(struct mfs *fs, uid_t uid)
{
	if (uid == getuid())
		return;
	user_uncharge(fs, &fs->handles->calls, uid);
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
	pthread_mutex_lock(&fs->handles->lock);
	h->owner = uid;
	h->charged = true;
	pthread_mutex_unlock(&fs->handles->lock);
}

int mfs_request_charge(struct mfs *fs, struct mfs_handle *h)
{
	if (!fs || !h)
		return 0;
	pthread_mutex_lock(&fs->handles->lock);
	bool other = h->charged;   /* opened by a user other than the daemon's (mfs_open_charged) */
	uid_t uid = h->owner;
	pthread_mutex_unlock(&fs->handles->lock);
	if (!other)
		return 0;
	bool first = false;
	int r = user_charge(fs, &fs->handles->requests, uid, &first);
	if (r < 0)
		return r;
	if (r == CHARGED)
		return 1;
	if (first)
		pool_refused(&fs->handles->requests, uid);
	return -EBUSY;
}

void mfs_request_uncharge(struct mfs *fs, struct mfs_handle *h)
{
	pthread_mutex_lock(&fs->handles->lock);
	uid_t uid = h->owner;
	pthread_mutex_unlock(&fs->handles->lock);
	user_uncharge(fs, &fs->handles->requests, uid);
}

int mfs_handles_each(struct mfs *fs, int (*fn)(struct mfs_handle *h, void *arg), void *arg)
{
	int r = 0;
	pthread_mutex_lock(&fs->handles->lock);
	for (struct mfs_handle *h = fs->handles->list; h && r == 0; h = h->next)
		r = fn(h, arg);
	pthread_mutex_unlock(&fs->handles->lock);
	return r;
}

void mfs_handles_discard_all(struct mfs *fs)
{
	pthread_mutex_lock(&fs->handles->lock);
	struct mfs_handle *h = fs->handles->list;
	fs->handles->list = NULL;
	pthread_mutex_unlock(&fs->handles->lock);
	while (h) {
		struct mfs_handle *next = h->next;
		if (h->discard)
			h->discard(h);
		h = next;
	}
}
