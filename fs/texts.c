/*
 * texts.c: the shared texts of the read-only virtual files (NAME/status,
 * NAME/egress, .ctl/declarations, .ctl/engine, NAME/execs/ID/wait). One
 * text per object, shared by every open handle that reads it (refcounted)
 * and counted against the mount's reply budget (reply.c) for as long as a
 * handle holds it, so no number of opens and threads can make the daemon
 * hold more than the budget.
 *
 * An open (or a `wait` read) that finds a build of the same key running
 * joins it instead of building again; a text whose content is the same as
 * the one the key's handles already hold is dropped for that one. A key
 * marked stable (a finished exec's reply never changes) reuses the text
 * handles still hold without building at all. A text lives while handles
 * hold it; the last put frees it and gives its bytes back to the budget.
 *
 * Locks: one mutex for the process (the daemon serves one mount; unit tests
 * key entries by their mount too), held only around the list, never while
 * building; `built` wakes the joiners of a build.
 */
#include "mfs.h"

#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdlib.h>
#include <string.h>

#include "log.h"

/* Freed memory past this is given back to the system at once (mfs_memory_trim). */
#define MFS_TRIM_OVER ((size_t)4 * 1024 * 1024)
/* Blocks from this size on are mapped on their own (mfs_memory_init). */
#define MFS_MMAP_OVER ((size_t)256 * 1024)

struct mfs_text {
	struct mfs_text *next;       /* the live texts, newest first (texts_lock) */
	struct mfs *fs;
	char *key;
	unsigned refs;               /* handles and joiners holding it (texts_lock) */
	bool building, linked;
	struct mafsbx_error failed;  /* a failed build: what its joiners answer */
	char *data;                  /* immutable once built */
	size_t len;
	size_t charged;              /* reply budget held */
};

static pthread_mutex_t texts_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t built = PTHREAD_COND_INITIALIZER;
static struct mfs_text *texts;

/* With texts_lock held. */
static void unlink_locked(struct mfs_text *t)
{
	if (!t->linked)
		return;
	for (struct mfs_text **pp = &texts; *pp; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	t->linked = false;
}

/* With texts_lock held: the newest text of `key` that a new handle may share. */
static struct mfs_text *find_locked(struct mfs *fs, const char *key)
{
	for (struct mfs_text *t = texts; t; t = t->next)
		if (t->fs == fs && !strcmp(t->key, key) && !t->failed.err)
			return t;
	return NULL;
}

static void text_free(struct mfs_text *t)
{
	if (t->charged)
		mfs_reply_budget_put(t->fs, t->charged);
	size_t len = t->len;
	free(t->data);
	free(t->key);
	free(t);
	mfs_memory_trim(len);
}

void mfs_memory_init(void)
{
#ifdef __GLIBC__
	/* glibc raises its mmap threshold to the size of each big block freed
	 * (up to 32 MiB) and keeps up to twice that at the top of each thread's
	 * arena, which malloc_trim does not give back: a 30 MiB reply built once
	 * on each of 16 workers would stay in 16 arenas. A fixed threshold
	 * keeps big blocks out of the arenas. */
	(void)mallopt(M_MMAP_THRESHOLD, (int)MFS_MMAP_OVER);
	(void)mallopt(M_TRIM_THRESHOLD, (int)MFS_TRIM_OVER);
#endif
}

void mfs_memory_trim(size_t freed)
{
#ifdef __GLIBC__
	/* glibc keeps what a thread's arena freed for that arena: a big text
	 * built and freed on each of many workers would stay in all of them. */
	if (freed >= MFS_TRIM_OVER)
		malloc_trim(0);
#else
	(void)freed;
#endif
}

void mfs_text_put(struct mfs_text *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&texts_lock);
	bool last = --t->refs == 0;
	if (last)
		unlink_locked(t);
	pthread_mutex_unlock(&texts_lock);
	if (last)
		text_free(t);
}

const char *mfs_text_data(const struct mfs_text *t, size_t *len)
{
	*len = t->len;
	return t->data;
}

/* With texts_lock held: a joined build's outcome. 0 (*out set), or its errno. */
static int join_locked(struct mfs_text *t, struct mfs_text **out, struct mafsbx_error *err)
{
	t->refs++;
	while (t->building)
		pthread_cond_wait(&built, &texts_lock);
	if (!t->failed.err) {
		*out = t;
		return 0;
	}
	if (err)
		*err = t->failed;
	int r = -t->failed.err;
	if (--t->refs == 0) {   /* the builder has let go already */
		unlink_locked(t);
		pthread_mutex_unlock(&texts_lock);
		text_free(t);
		pthread_mutex_lock(&texts_lock);
	}
	return r;
}

/* With texts_lock held: an older text of n's key with the same bytes, or NULL. */
static struct mfs_text *same_locked(const struct mfs_text *n)
{
	for (struct mfs_text *t = texts; t; t = t->next)
		if (t != n && t->fs == n->fs && !t->building && !t->failed.err && !strcmp(t->key, n->key) &&
		    t->len == n->len && !memcmp(t->data, n->data, n->len))
			return t;
	return NULL;
}

/* The build of n ended (r: 0 or its errno, e its error): joiners woken. */
static int finish(struct mfs_text *n, int r, const struct mafsbx_error *e, struct mfs_text **out,
		  struct mafsbx_error *err)
{
	if (r == 0) {
		char what[160];
		snprintf(what, sizeof(what), "the text of %s (%zu bytes, shared by its open files)", n->key, n->len);
		struct mafsbx_error be;
		mafsbx_error_clear(&be);
		if (mfs_reply_budget_take(n->fs, n->len, what, &be) < 0) {
			log_warn("%s", be.message);
			e = &be;
			r = -be.err;
		} else {
			n->charged = n->len;
		}
	}
	pthread_mutex_lock(&texts_lock);
	n->building = false;
	pthread_cond_broadcast(&built);
	struct mfs_text *same = r == 0 && n->refs == 1 ? same_locked(n) : NULL;
	if (r < 0) {
		n->failed = *e;
		if (!n->failed.err)
			n->failed.err = -r;
		unlink_locked(n);   /* its joiners see the error; later opens build again */
	} else if (same) {
		same->refs++;   /* no handle holds n yet: the one already held serves */
		unlink_locked(n);
	}
	pthread_mutex_unlock(&texts_lock);
	if (r < 0 && err)
		*err = n->failed;
	if (r < 0 || same)
		mfs_text_put(n);
	*out = r < 0 ? NULL : same ? same : n;
	return r;
}

int mfs_text_get(struct mfs *fs, const char *key, bool stable, mfs_text_build_fn build, void *arg,
		 struct mfs_text **out, struct mafsbx_error *err)
{
	*out = NULL;
	struct mfs_text *n = calloc(1, sizeof(*n));
	if (n)
		n->key = strdup(key);
	if (!n || !n->key) {
		free(n);
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	}
	n->fs = fs;
	n->refs = 1;
	n->building = true;
	/* the look and the insertion under one hold: two first opens never both build */
	pthread_mutex_lock(&texts_lock);
	struct mfs_text *t = find_locked(fs, key);
	if (t && (t->building || stable)) {
		int r = join_locked(t, out, err);
		pthread_mutex_unlock(&texts_lock);
		free(n->key);
		free(n);
		return r;
	}
	n->next = texts;
	texts = n;
	n->linked = true;
	pthread_mutex_unlock(&texts_lock);
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	int r = build(fs, arg, &n->data, &n->len, &e);
	if (r < 0 && !e.err)
		mafsbx_error_set_full(&e, MAFSBX_EK_SYSTEM, -r, NULL, "%s: %s", key, strerror(-r));
	return finish(n, r, &e, out, err);
}
