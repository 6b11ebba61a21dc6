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
 * This file also keeps the per-sandbox extras of the mount (outputs declared
 * by a later acquire, files written through the mount), keyed by container ID.
 */
#include "mfs.h"
#include "mount.h"

#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "names.h"
#include "sandbox.h"

static void extra_free(struct mfs_sbx_extra *x)
{
	for (size_t i = 0; i < x->n_outputs; i++)
		free(x->outputs[i]);
	for (size_t i = 0; i < x->n_written; i++)
		free(x->written[i]);
	free(x->outputs);
	free(x->written);
	free(x);
}

void mfs_list_clear(struct mfs *fs)
{
	if (fs->snap)
		mfs_snapshot_put(fs->snap);
	fs->snap = NULL;
	for (size_t k = 0; k < MFS_SCOPED_SLOTS; k++) {
		mfs_snapshot_put(fs->scoped[k]);
		fs->scoped[k] = NULL;
	}
	while (fs->extras) {
		struct mfs_sbx_extra *x = fs->extras;
		fs->extras = x->next;
		extra_free(x);
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
static struct mfs_snapshot *cached_covering(struct mfs *fs, const char (*want)[64], long long max_age_ms)
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
	struct mfs_snapshot *s = cached_covering(fs, (const char (*)[64])want, max_age_ms);
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

static long long lookup_age_ms(const struct mfs *fs)
{
	long long ms = (long long)(fs->opt.attr_timeout * 1000.0);
	return ms < 0 ? 0 : ms;
}

struct mfs_snapshot *mfs_sandbox_find(struct mfs *fs, const char *name, const struct mafsbx_sandbox_info **out,
				      struct mafsbx_error *err)
{
	return mfs_sandbox_find_age(fs, name, lookup_age_ms(fs), out, err);
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

/* ---- the root and by-scope ----------------------------------------------- */

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
	mfs_dir_entry(buf, filler, ".ctl", S_IFDIR);
	mfs_dir_entry(buf, filler, "by-scope", S_IFDIR);
	for (size_t i = 0; i < s->n; i++)
		if (mfs_dir_entry(buf, filler, s->a[i].name, S_IFDIR))
			break;
	mfs_snapshot_put(s);
	return 0;
}

static bool component_ok(const char *v)
{
	if (!v || !*v || !strcmp(v, ".") || !strcmp(v, "..") || strchr(v, '/') || strlen(v) > 255)
		return false;
	return true;
}

bool mfs_byscope_link_name(const struct mafsbx_sandbox_info *i, char *out, size_t size)
{
	if (!component_ok(i->scope) || !component_ok(i->thread) || !component_ok(i->agent) || !component_ok(i->kind))
		return false;
	int n;
	if (i->call && *i->call) {
		if (!component_ok(i->call))
			return false;
		n = snprintf(out, size, "%s@%s", i->kind, i->call);
	} else {
		n = snprintf(out, size, "%s", i->kind);
	}
	return n > 0 && (size_t)n < size && n <= 255;
}

/* Does sandbox i sit under by-scope/comp[0]/.../comp[depth-1]? */
static bool byscope_match(const struct mafsbx_sandbox_info *i, const struct mfs_node *n, int depth, char *link,
			  size_t linksz)
{
	if (!mfs_byscope_link_name(i, link, linksz))
		return false;
	const char *vals[4] = { i->scope, i->thread, i->agent, link };
	for (int d = 0; d < depth; d++)
		if (strcmp(vals[d], n->comp[d]))
			return false;
	return true;
}

/* The list by-scope/SCOPE/... lookups read (that scope's): 0 with *s set, or the errno. */
static int byscope_snapshot(struct mfs *fs, const struct mfs_node *n, struct mfs_snapshot **s)
{
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	*s = n->depth >= 1 ? mfs_scoped_get(fs, n->comp, n->depth < 3 ? n->depth : 3, lookup_age_ms(fs), &e)
			   : mfs_snapshot_get(fs, lookup_age_ms(fs), &e);
	return *s ? 0 : mafsbx_error_errno(&e, -EIO);
}

/* The sandbox under by-scope/comp[0]/.../comp[depth-1]: the first in the
 * list, or with `least_name` the one of least name (several containers can
 * share one key and kind, egress variants: a link must be stable). */
static const struct mafsbx_sandbox_info *byscope_find(const struct mfs_snapshot *s, const struct mfs_node *n,
						      int depth, bool least_name)
{
	char link[600];
	const struct mafsbx_sandbox_info *best = NULL;
	for (size_t i = 0; i < s->n; i++) {
		if (!byscope_match(&s->a[i], n, depth, link, sizeof(link)))
			continue;
		if (!least_name)
			return &s->a[i];
		if (!best || strcmp(s->a[i].name, best->name) < 0)
			best = &s->a[i];
	}
	return best;
}

/* How many containers a lookup's probe asks for (proxies match the same filters). */
#define BYSCOPE_PROBE_LIMIT 16
/* How old a list may be to say that a by-scope directory exists (as MFS_FILE_TARGET_MS for NAME). */
#define BYSCOPE_HIT_MS MFS_FILE_TARGET_MS

/*
 * Does the directory by-scope/SCOPE[/THREAD[/AGENT]] exist? From a young
 * list when there is one; else the engine is asked for a few containers of
 * those labels (a lookup of by-scope/SCOPE must not cost that scope's whole
 * list), and for the whole narrow list only when those few were all hidden
 * (proxies, unshowable labels). 1 yes, 0 no, or a negative errno.
 */
static int byscope_dir_probe(struct mfs *fs, const struct mfs_node *n)
{
	if (fs->scope_label[0] && strcmp(n->comp[0], fs->scope_label))
		return 0;
	char want[3][64] = { "", "", "" };
	for (int k = 0; k < 3 && k < n->depth; k++) {
		if (strlen(n->comp[k]) > MAFSBX_LABEL_VALUE_MAX)
			return 0;   /* no label value is longer */
		snprintf(want[k], sizeof(want[k]), "%s", n->comp[k]);
	}
	/*
	 * A list up to BYSCOPE_HIT_MS old answers yes (labels never change, and
	 * this mount's own acquire and dispose drop the lists): `ls -l` of a
	 * listed directory looks up each entry after the listing, which on a
	 * loaded engine can take longer than attr_timeout. A no needs a list
	 * younger than attr_timeout.
	 */
	long long age = lookup_age_ms(fs);
	struct mfs_snapshot *s = cached_covering(fs, (const char (*)[64])want, age > BYSCOPE_HIT_MS ? age : BYSCOPE_HIT_MS);
	if (s) {
		int r = byscope_find(s, n, n->depth, false) != NULL;
		bool young = mafsbx_now_ms() - s->fetched_ms <= age;
		mfs_snapshot_put(s);
		if (r || young)
			return r;
	}
	struct mfs_snapshot probe;
	memset(&probe, 0, sizeof(probe));
	size_t listed = 0;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	if (mafsbx_sandbox_list_labels(fs->backend, want[0], want[1][0] ? want[1] : NULL, want[2][0] ? want[2] : NULL,
				       BYSCOPE_PROBE_LIMIT, &listed, &probe.a, &probe.n, &e) < 0)
		return mafsbx_error_errno(&e, -EIO);
	int r = byscope_find(&probe, n, n->depth, false) != NULL;
	mafsbx_sandbox_info_free_array(probe.a, probe.n);
	if (r || listed < BYSCOPE_PROBE_LIMIT)
		return r;
	int fr = byscope_snapshot(fs, n, &s);
	if (fr < 0)
		return fr;
	r = byscope_find(s, n, n->depth, false) != NULL;
	mfs_snapshot_put(s);
	return r;
}

int mfs_byscope_getattr(struct mfs *fs, const struct mfs_node *n, struct stat *st)
{
	if (n->depth == 0) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
		return 0;
	}
	if (n->type != MFS_N_BYSCOPE_LINK) {
		int p = byscope_dir_probe(fs, n);
		if (p < 0)
			return p;
		if (!p)
			return -ENOENT;
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
		return 0;
	}
	struct mfs_snapshot *s;
	int r = byscope_snapshot(fs, n, &s);
	if (r < 0)
		return r;
	const struct mafsbx_sandbox_info *i = byscope_find(s, n, n->depth, false);
	if (i && n->type == MFS_N_BYSCOPE_LINK) {
		st->st_mode = S_IFLNK | 0777;
		st->st_nlink = 1;
		st->st_size = (off_t)strlen("../../../../") + MAFSBX_NAME_LEN;
		st->st_mtime = i->created;
	} else if (i) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
	}
	r = i ? 0 : -ENOENT;
	mfs_snapshot_put(s);
	return r;
}

int mfs_byscope_readdir(struct mfs *fs, const struct mfs_node *n, struct fuse_file_info *fi, off_t off, void *buf,
			fuse_fill_dir_t filler)
{
	int r = -EIO;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	/* A listing always asks the engine, as the root's does: below a scope, for that scope only. */
	struct mfs_snapshot *s = n->depth >= 1 ? listing_snapshot(fi, off, fetch_scope, fs, n, &e)
					       : listing_snapshot(fi, off, fetch_all, fs, NULL, &e);
	if (!s)
		return mafsbx_error_errno(&e, r);
	mfs_dir_entry(buf, filler, ".", S_IFDIR);
	mfs_dir_entry(buf, filler, "..", S_IFDIR);
	char link[600];
	bool any = n->depth == 0;
	/* Names seen so far at this level, to list each once. */
	const char **seen = calloc(s->n + 1, sizeof(*seen));
	size_t nseen = 0;
	char **owned = calloc(s->n + 1, sizeof(*owned));
	if (!seen || !owned) {
		free(seen);
		free(owned);
		mfs_snapshot_put(s);
		return -ENOMEM;
	}
	for (size_t i = 0; i < s->n; i++) {
		if (!byscope_match(&s->a[i], n, n->depth, link, sizeof(link)))
			continue;
		any = true;
		const char *vals[4] = { s->a[i].scope, s->a[i].thread, s->a[i].agent, link };
		const char *child = vals[n->depth];
		bool dup = false;
		for (size_t k = 0; k < nseen && !dup; k++)
			dup = !strcmp(seen[k], child);
		if (dup)
			continue;
		owned[nseen] = strdup(child);
		if (!owned[nseen])
			break;
		seen[nseen] = owned[nseen];
		nseen++;
		mfs_dir_entry(buf, filler, child, n->depth == 3 ? S_IFLNK : S_IFDIR);
	}
	for (size_t k = 0; k < nseen; k++)
		free(owned[k]);
	free(owned);
	free(seen);
	mfs_snapshot_put(s);
	return any ? 0 : -ENOENT;
}

int mfs_byscope_readlink(struct mfs *fs, const struct mfs_node *n, char *buf, size_t size)
{
	struct mfs_snapshot *s;
	int r = byscope_snapshot(fs, n, &s);
	if (r < 0)
		return r;
	const struct mafsbx_sandbox_info *best = byscope_find(s, n, 4, true);
	r = best ? 0 : -ENOENT;
	if (best)
		snprintf(buf, size, "../../../../%s", best->name);
	mfs_snapshot_put(s);
	return r;
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

/* ---- extras ---------------------------------------------------------------- */

/* Must be called under fs->lock. */
static struct mfs_sbx_extra *extra_get(struct mfs *fs, const char *id, bool create)
{
	for (struct mfs_sbx_extra *x = fs->extras; x; x = x->next)
		if (!strcmp(x->id, id))
			return x;
	if (!create)
		return NULL;
	struct mfs_sbx_extra *x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	snprintf(x->id, sizeof(x->id), "%s", id);
	x->next = fs->extras;
	fs->extras = x;
	return x;
}

static int strv_add_unique(char ***v, size_t *n, const char *s)
{
	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*v)[i], s))
			return 0;
	char **nv = realloc(*v, (*n + 1) * sizeof(**v));
	if (!nv)
		return -ENOMEM;
	*v = nv;
	if (!(nv[*n] = strdup(s)))
		return -ENOMEM;
	(*n)++;
	return 0;
}

int mfs_extra_add_outputs(struct mfs *fs, const char *id, char *const *outputs, size_t n)
{
	int r = 0;
	pthread_mutex_lock(&fs->lock);
	struct mfs_sbx_extra *x = extra_get(fs, id, true);
	if (!x)
		r = -ENOMEM;
	for (size_t i = 0; x && r == 0 && i < n; i++)
		r = strv_add_unique(&x->outputs, &x->n_outputs, outputs[i]);
	pthread_mutex_unlock(&fs->lock);
	return r;
}

int mfs_extra_add_written(struct mfs *fs, const char *id, const char *rel)
{
	int r = 0;
	pthread_mutex_lock(&fs->lock);
	struct mfs_sbx_extra *x = extra_get(fs, id, true);
	r = x ? strv_add_unique(&x->written, &x->n_written, rel) : -ENOMEM;
	pthread_mutex_unlock(&fs->lock);
	return r;
}

void mfs_extra_drop(struct mfs *fs, const char *id)
{
	pthread_mutex_lock(&fs->lock);
	struct mfs_sbx_extra **pp = &fs->extras;
	while (*pp) {
		if (!strcmp((*pp)->id, id)) {
			struct mfs_sbx_extra *x = *pp;
			*pp = x->next;
			extra_free(x);
			break;
		}
		pp = &(*pp)->next;
	}
	pthread_mutex_unlock(&fs->lock);
}

void mfs_strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

char **mfs_extra_paths(struct mfs *fs, const struct mafsbx_sandbox_info *info, bool written, size_t *np)
{
	char **v = NULL;
	size_t n = 0;
	int r = 0;
	for (size_t i = 0; r == 0 && i < info->n_outputs; i++)
		r = strv_add_unique(&v, &n, info->outputs[i]);
	pthread_mutex_lock(&fs->lock);
	struct mfs_sbx_extra *x = extra_get(fs, info->id, false);
	for (size_t i = 0; x && r == 0 && i < x->n_outputs; i++)
		r = strv_add_unique(&v, &n, x->outputs[i]);
	for (size_t i = 0; x && written && r == 0 && i < x->n_written; i++)
		r = strv_add_unique(&v, &n, x->written[i]);
	pthread_mutex_unlock(&fs->lock);
	char **nv = r == 0 ? realloc(v, (n + 1) * sizeof(*v)) : NULL;
	if (!nv) {
		for (size_t i = 0; i < n; i++)
			free(v[i]);
		free(v);
		*np = 0;
		return NULL;
	}
	nv[n] = NULL;
	*np = n;
	return nv;
}
