/*
 * root.c: which sandboxes the mount shows (doc/protocol.md "The tree").
 *
 * The engine's labels are the record: the root lists every workload that
 * mafsbx_sandbox_list() returns (name prefix + the four identity labels, no
 * proxies), filtered by -o scope. The list is kept as a refcounted snapshot
 * (sorted by name, read as a stream: src/engine/listreader.h): a listing of the root
 * asks the engine once, when it starts (offset 0), and its directory handle
 * reads every later chunk from that list; lookups reuse a snapshot younger
 * than the attribute timeout and ask the engine for one name on a miss
 * (negative answers are never cached, so a sandbox made by another host
 * appears at once). Below by-scope/SCOPE[/THREAD[/AGENT]] the engine is asked
 * for those only (label filters), kept in a few slots beside the full list. acquire/dispose drop the snapshot and tell the
 * kernel (mfs_invalidate_path) that the root, by-scope/ and NAME changed.
 *
 * by-scope/SCOPE/THREAD/AGENT/KIND[@CALL] -> ../../../../NAME uses the label
 * values as stored. A label value that cannot be a file name (empty, ".",
 * "..", a '/', over 255 bytes: only possible for hand-made containers) hides
 * that sandbox from by-scope/ but not from the root.
 *
 * by-scope/'s own answers are byscope.c's; the per-sandbox extras of the
 * mount (outputs declared by a later acquire, files written through the
 * mount) are extras.c's.
 */
#include "mfs.h"
#include "rows.h"
#include "mount.h"

#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "names.h"
#include "sandbox.h"

void mfs_list_clear(struct mfs *fs)
{
	if (fs->snap)
		mfs_snapshot_put(fs->snap);
	fs->snap = NULL;
	for (size_t k = 0; k < MFS_SCOPED_SLOTS; k++) {
		mfs_snapshot_put(fs->scoped[k]);
		fs->scoped[k] = NULL;
	}
}

bool mfs_in_scope(const struct mfs *fs, const struct mafsbx_sandbox_info *i)
{
	if (!fs->scope_label[0])
		return true;
	return i->scope && !strcmp(i->scope, fs->scope_label);
}

/* ---- snapshots ---------------------------------------------------------- */

void mfs_snapshot_put(struct mfs_snapshot *s)
{
	if (!s)
		return;
	if (atomic_fetch_sub(&s->refs, 1) == 1) {
		size_t n = s->n;
		mafsbx_sandbox_info_free_array(s->a, s->n);
		free(s);
		/* A large list's memory goes back to the system, not to the heap's free lists. */
		if (n >= 1000)
			malloc_trim(0);
	}
}

static int cmp_info_name(const void *a, const void *b)
{
	return strcmp(((const struct mafsbx_sandbox_info *)a)->name, ((const struct mafsbx_sandbox_info *)b)->name);
}

/* Ask the engine for the list (of the labels `want`, or of the mount's scope when NULL). */
static struct mfs_snapshot *snapshot_fetch(struct mfs *fs, const char (*want)[64], struct mafsbx_error *err)
{
	struct mfs_snapshot *s = calloc(1, sizeof(*s));
	if (!s) {
		mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
		return NULL;
	}
	int r = want ? mafsbx_sandbox_list_labels(fs->backend, want[0], want[1][0] ? want[1] : NULL,
						  want[2][0] ? want[2] : NULL, 0, NULL, &s->a, &s->n, err)
		     : mafsbx_sandbox_list(fs->backend, fs->opt.scope, &s->a, &s->n, err);
	if (r < 0) {
		free(s);
		return NULL;
	}
	if (s->n > 1)
		qsort(s->a, s->n, sizeof(*s->a), cmp_info_name);
	if (want)
		memcpy(s->want, want, sizeof(s->want));
	atomic_init(&s->refs, 1);
	s->fetched_ms = mafsbx_now_ms();
	return s;
}

struct mfs_snapshot *mfs_snapshot_get(struct mfs *fs, long long max_age_ms, struct mafsbx_error *err)
{
	pthread_mutex_lock(&fs->lock);
	struct mfs_snapshot *s = fs->snap;
	if (s && max_age_ms >= 0 && mafsbx_now_ms() - s->fetched_ms <= max_age_ms) {
		atomic_fetch_add(&s->refs, 1);
		pthread_mutex_unlock(&fs->lock);
		return s;
	}
	pthread_mutex_unlock(&fs->lock);

	/* Ask outside the lock: a slow engine must not stall every lookup. */
	s = snapshot_fetch(fs, NULL, err);
	if (!s)
		return NULL;
	pthread_mutex_lock(&fs->lock);
	if (!fs->snap || fs->snap->fetched_ms <= s->fetched_ms) {
		struct mfs_snapshot *old = fs->snap;
		atomic_fetch_add(&s->refs, 1);
		fs->snap = s;
		pthread_mutex_unlock(&fs->lock);
		mfs_snapshot_put(old);
	} else {
		pthread_mutex_unlock(&fs->lock);
	}
	return s;
}

/* Does a list asked for `have` hold every sandbox of `want`? ("" is any.) */
static bool covers(const char (*have)[64], const char (*want)[64])
{
	for (int k = 0; k < 3; k++)
		if (have[k][0] && strcmp(have[k], want[k]))
			return false;
	return true;
}

/* A young list that holds every sandbox of `want` (the full one or a wider scoped one), or NULL. */
struct mfs_snapshot *mfs_scoped_cached(struct mfs *fs, const char (*want)[64], long long max_age_ms)
{
	if (max_age_ms < 0)
		return NULL;
	long long now = mafsbx_now_ms();
	pthread_mutex_lock(&fs->lock);
	struct mfs_snapshot *s = NULL;
	if (fs->snap && now - fs->snap->fetched_ms <= max_age_ms)
		s = fs->snap;
	for (size_t k = 0; !s && k < MFS_SCOPED_SLOTS; k++)
		if (fs->scoped[k] && covers(fs->scoped[k]->want, want) && now - fs->scoped[k]->fetched_ms <= max_age_ms)
			s = fs->scoped[k];
	if (s)
		atomic_fetch_add(&s->refs, 1);
	pthread_mutex_unlock(&fs->lock);
	return s;
}

struct mfs_snapshot *mfs_scoped_get(struct mfs *fs, const char *const *comp, int depth, long long max_age_ms,
				    struct mafsbx_error *err)
{
	if (fs->scope_label[0] && strcmp(comp[0], fs->scope_label)) {
		mafsbx_error_set(err, MAFSBX_EK_NO_CONTAINER, "scope '%s' is not this mount's", comp[0]);
		return NULL;
	}
	char want[3][64] = { "", "", "" };
	bool possible = true;
	for (int k = 0; k < 3 && k < depth; k++) {
		/* No label value is longer: nothing to ask for. */
		possible = possible && strlen(comp[k]) <= MAFSBX_LABEL_VALUE_MAX;
		snprintf(want[k], sizeof(want[k]), "%s", comp[k]);
	}
	long long now = mafsbx_now_ms();
	struct mfs_snapshot *s = mfs_scoped_cached(fs, (const char (*)[64])want, max_age_ms);
	if (s)
		return s;

	if (!possible) {
		s = calloc(1, sizeof(*s));
		if (!s) {
			mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
			return NULL;
		}
		atomic_init(&s->refs, 1);
		s->fetched_ms = now;
		return s;
	}
	s = snapshot_fetch(fs, (const char (*)[64])want, err);
	if (!s)
		return NULL;
	/* Keep it in the slot of the same labels, else the oldest. */
	pthread_mutex_lock(&fs->lock);
	size_t slot = 0;
	for (size_t k = 0; k < MFS_SCOPED_SLOTS; k++) {
		if (fs->scoped[k] && !memcmp(fs->scoped[k]->want, want, sizeof(want))) {
			slot = k;
			break;
		}
		if (!fs->scoped[k] || (fs->scoped[slot] && fs->scoped[k]->fetched_ms < fs->scoped[slot]->fetched_ms))
			slot = k;
	}
	struct mfs_snapshot *old = NULL;
	if (!fs->scoped[slot] || fs->scoped[slot]->fetched_ms <= s->fetched_ms) {
		old = fs->scoped[slot];
		atomic_fetch_add(&s->refs, 1);
		fs->scoped[slot] = s;
	}
	pthread_mutex_unlock(&fs->lock);
	mfs_snapshot_put(old);
	return s;
}

void mfs_snapshot_invalidate(struct mfs *fs)
{
	struct mfs_snapshot *old[MFS_SCOPED_SLOTS + 1];
	pthread_mutex_lock(&fs->lock);
	old[0] = fs->snap;
	fs->snap = NULL;
	for (size_t k = 0; k < MFS_SCOPED_SLOTS; k++) {
		old[k + 1] = fs->scoped[k];
		fs->scoped[k] = NULL;
	}
	pthread_mutex_unlock(&fs->lock);
	for (size_t k = 0; k <= MFS_SCOPED_SLOTS; k++)
		mfs_snapshot_put(old[k]);
}

const struct mafsbx_sandbox_info *mfs_snapshot_find(const struct mfs_snapshot *s, const char *name)
{
	if (!s || !s->n)
		return NULL;
	struct mafsbx_sandbox_info key;
	snprintf(key.name, sizeof(key.name), "%s", name);
	if (strlen(name) >= sizeof(key.name))
		return NULL;
	return bsearch(&key, s->a, s->n, sizeof(*s->a), cmp_info_name);
}

/* ---- listing handles ------------------------------------------------------ */

void mfs_listdir_release(struct mfs_listdir *d)
{
	if (!d)
		return;
	mfs_snapshot_put(d->snap);
	free(d);
}

static void listdir_discard(struct mfs_handle *h)
{
	mfs_listdir_release((struct mfs_listdir *)h);
}

int mfs_listdir_open(struct mfs *fs, struct fuse_file_info *fi)
{
	(void)fs;
	struct mfs_listdir *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->h.type = MFS_H_LIST;
	d->h.discard = listdir_discard;
	fi->fh = (uint64_t)(uintptr_t)d;
	return 0;
}

/*
 * The list a listing reads: a listing starts (offset 0) with a fresh one,
 * asked of the engine, and reads every later chunk from it (one engine call
 * per listing, and offsets that stay put). `fetch` gets the fresh list.
 */
static struct mfs_snapshot *listing_snapshot(struct fuse_file_info *fi, off_t off,
					     struct mfs_snapshot *(*fetch)(struct mfs *, const void *,
									  struct mafsbx_error *),
					     struct mfs *fs, const void *arg, struct mafsbx_error *err)
{
	struct mfs_handle *h = fi ? mfs_handle_of(fi) : NULL;
	struct mfs_listdir *d = h && h->type == MFS_H_LIST ? (struct mfs_listdir *)h : NULL;
	if (d && d->snap && off > 0) {
		atomic_fetch_add(&d->snap->refs, 1);
		return d->snap;
	}
	struct mfs_snapshot *s = fetch(fs, arg, err);
	if (s && d) {
		mfs_snapshot_put(d->snap);
		atomic_fetch_add(&s->refs, 1);
		d->snap = s;
	}
	return s;
}

static struct mfs_snapshot *fetch_all(struct mfs *fs, const void *arg, struct mafsbx_error *err)
{
	(void)arg;
	return mfs_snapshot_get(fs, -1, err);
}

static struct mfs_snapshot *fetch_scope(struct mfs *fs, const void *arg, struct mafsbx_error *err)
{
	const struct mfs_node *n = arg;
	return mfs_scoped_get(fs, n->comp, n->depth < 3 ? n->depth : 3, -1, err);
}

struct mfs_snapshot *mfs_listing_get(struct mfs *fs, struct fuse_file_info *fi, off_t off, const struct mfs_node *n,
				     struct mafsbx_error *err)
{
	return n && n->depth >= 1 ? listing_snapshot(fi, off, fetch_scope, fs, n, err)
				  : listing_snapshot(fi, off, fetch_all, fs, NULL, err);
}

long long mfs_lookup_age_ms(const struct mfs *fs)
{
	long long ms = (long long)(fs->opt.attr_timeout * 1000.0);
	return ms < 0 ? 0 : ms;
}

struct mfs_snapshot *mfs_sandbox_find(struct mfs *fs, const char *name, const struct mafsbx_sandbox_info **out,
				      struct mafsbx_error *err)
{
	return mfs_sandbox_find_age(fs, name, mfs_lookup_age_ms(fs), out, err);
}

struct mfs_snapshot *mfs_sandbox_find_age(struct mfs *fs, const char *name, long long max_age_ms,
					  const struct mafsbx_sandbox_info **out, struct mafsbx_error *err)
{
	*out = NULL;
	if (!mafsbx_is_workload_name(name)) {
		mafsbx_error_set(err, MAFSBX_EK_NO_CONTAINER, "no sandbox named '%s'", name);
		return NULL;
	}
	struct mafsbx_error e2;
	mafsbx_error_clear(&e2);
	struct mfs_snapshot *s = mfs_snapshot_get(fs, max_age_ms, &e2);
	if (s) {
		const struct mafsbx_sandbox_info *i = mfs_snapshot_find(s, name);
		if (i) {
			*out = i;
			return s;
		}
		mfs_snapshot_put(s);
	}
	/* A miss (or no list): ask for this one name, never trusting a cached "no". */
	s = calloc(1, sizeof(*s));
	struct mafsbx_sandbox_info *one = calloc(1, sizeof(*one));
	if (!s || !one) {
		free(s);
		free(one);
		mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
		return NULL;
	}
	if (mafsbx_sandbox_lookup(fs->backend, name, one, err) < 0) {
		free(one);
		free(s);
		return NULL;
	}
	if (!mfs_in_scope(fs, one)) {
		mafsbx_sandbox_info_free_array(one, 1);
		free(s);
		mafsbx_error_set(err, MAFSBX_EK_NO_CONTAINER, "no sandbox named '%s' in scope '%s'", name,
				 fs->opt.scope);
		return NULL;
	}
	atomic_init(&s->refs, 1);
	s->a = one;
	s->n = 1;
	s->fetched_ms = mafsbx_now_ms();
	*out = one;
	return s;
}

/* ---- the root ----------------------------------------------- */

int mfs_root_readdir(struct mfs *fs, struct fuse_file_info *fi, off_t off, void *buf, fuse_fill_dir_t filler)
{
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	struct mfs_snapshot *s = listing_snapshot(fi, off, fetch_all, fs, NULL, &e);
	if (!s) {
		log_warn("listing the sandboxes: %s", e.message);
		return mafsbx_error_errno(&e, -EIO);
	}
	mfs_dir_entry(buf, filler, ".", S_IFDIR);
	mfs_dir_entry(buf, filler, "..", S_IFDIR);
	mfs_rows_list(MFS_N_ROOT, buf, filler);
	for (size_t i = 0; i < s->n; i++)
		if (mfs_dir_entry(buf, filler, s->a[i].name, S_IFDIR))
			break;
	mfs_snapshot_put(s);
	return 0;
}

void mfs_invalidate_sandbox(struct mfs *fs, const char *name)
{
	mfs_snapshot_invalidate(fs);
	/* Nodes the kernel does not hold have nothing to drop. */
	mfs_invalidate_path(fs, "/");
	mfs_invalidate_path(fs, "/by-scope");
	if (name && *name) {
		char p[128];
		snprintf(p, sizeof(p), "/%s", name);
		mfs_invalidate_path(fs, p);
		snprintf(p, sizeof(p), "/%s/status", name);
		mfs_invalidate_path(fs, p);
	}
}
