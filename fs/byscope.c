/*
 * byscope.c: by-scope/SCOPE/THREAD/AGENT/KIND[@CALL] -> ../../../../NAME
 * (doc/protocol.md "The tree"), answered from the lists root.c keeps:
 * below a scope the engine is asked for that scope only (label filters).
 * The link uses the label values as stored. A label value that cannot be a
 * file name (empty, ".", "..", a '/', over 255 bytes: only possible for
 * hand-made containers) hides that sandbox from by-scope/ but not from the
 * root.
 */
#include "mfs.h"
#include "rows.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "names.h"
#include "sandbox.h"

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
	*s = n->depth >= 1 ? mfs_scoped_get(fs, n->comp, n->depth < 3 ? n->depth : 3, mfs_lookup_age_ms(fs), &e)
			   : mfs_snapshot_get(fs, mfs_lookup_age_ms(fs), &e);
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
	long long age = mfs_lookup_age_ms(fs);
	struct mfs_snapshot *s = mfs_scoped_cached(fs, (const char (*)[64])want, age > BYSCOPE_HIT_MS ? age : BYSCOPE_HIT_MS);
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
	/* the modes are the kinds' rows' (rows.h) */
	if (n->depth == 0) {
		st->st_mode = mfs_kind_mode(MFS_N_BYSCOPE);
		st->st_nlink = 2;
		return 0;
	}
	if (n->type != MFS_N_BYSCOPE_LINK) {
		int p = byscope_dir_probe(fs, n);
		if (p < 0)
			return p;
		if (!p)
			return -ENOENT;
		st->st_mode = mfs_kind_mode(MFS_N_BYSCOPE);
		st->st_nlink = 2;
		return 0;
	}
	struct mfs_snapshot *s;
	int r = byscope_snapshot(fs, n, &s);
	if (r < 0)
		return r;
	const struct mafsbx_sandbox_info *i = byscope_find(s, n, n->depth, false);
	if (i && n->type == MFS_N_BYSCOPE_LINK) {
		st->st_mode = mfs_kind_mode(MFS_N_BYSCOPE_LINK);
		st->st_nlink = 1;
		st->st_size = (off_t)strlen("../../../../") + MAFSBX_NAME_LEN;
		st->st_mtime = i->created;
	} else if (i) {
		st->st_mode = mfs_kind_mode(MFS_N_BYSCOPE);
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
	struct mfs_snapshot *s = mfs_listing_get(fs, fi, off, n, &e);
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
