/*
 * rows.c: the table of the tree (rows.h): the modules' rows and the .ctl
 * verbs in one list, and the answers drawn from it: the child a name is
 * (LOOKUP), the fixed names of a directory (the listing), and a kind's
 * mode, cache policy and refusals. The table is constant: nothing here
 * locks; the index of a kind's row is built once (pthread_once).
 *
 * Adding a module's rows is one line in `modules`; adding a .ctl verb is
 * one X(NAME) in `VERBS` (its file, verb_NAME.c, holds the rest). A
 * verb's number is its place in `verbs`: MFS_CTL_ACQUIRE, _DISPOSE and
 * _EXEC (mfs.h) name the first three, which the unit test checks.
 */
#include "node.h"
#include "rows.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static const struct mfs_row *const modules[] = { mfs_ctl_rows, mfs_tree_rows };

/* The .ctl verbs, in their order under .ctl/: X(NAME) is the verb
 * mfs_verb_NAME of fs/verb_NAME.c, its one line of registration. */
#define VERBS(X) X(acquire) X(dispose) X(exec)

#define DECLARE_VERB(v) extern const struct mfs_verb mfs_verb_##v;
#define LIST_VERB(v) &mfs_verb_##v,
VERBS(DECLARE_VERB)
static const struct mfs_verb *const verbs[] = { VERBS(LIST_VERB) };

#define N_MODULES (sizeof(modules) / sizeof(modules[0]))
#define N_VERBS (sizeof(verbs) / sizeof(verbs[0]))

/* What every verb's row shares: a write-then-read transaction file, one
 * inode per open, never cached. */
static struct mfs_row verb_row(size_t i)
{
	return (struct mfs_row){ .parent = MFS_N_CTL_DIR, .name = verbs[i]->name, .kind = MFS_N_CTL_FILE,
				 .sub = (int)i, .mode = S_IFREG | 0600,
				 .cache = MFS_KIND_NO_CACHE | MFS_KIND_FRESH | MFS_KIND_DIRECT_IO,
				 .refuse = EPERM, .refuse_write = EPERM };
}

/* Row i of the whole table: the verbs, then the modules' rows (so .ctl
 * lists its verbs first and the root .ctl before by-scope, as always). */
const struct mfs_row *mfs_rows_at(size_t i, struct mfs_row *scratch)
{
	if (i < N_VERBS) {
		*scratch = verb_row(i);
		return scratch;
	}
	i -= N_VERBS;
	for (size_t m = 0; m < N_MODULES; m++)
		for (const struct mfs_row *r = modules[m]; r->kind; r++, i--)
			if (i == 0)
				return r;
	return NULL;
}

const struct mfs_verb *mfs_verb_at(enum mfs_ctl_kind kind)
{
	return (size_t)kind < N_VERBS ? verbs[kind] : NULL;
}

size_t mfs_verb_count(void)
{
	return N_VERBS;
}

const char *mfs_ctl_kind_name(enum mfs_ctl_kind k)
{
	const struct mfs_verb *v = mfs_verb_at(k);
	return v ? v->name : "?";
}

/* The root's own row sits in no directory: never a child. */
static bool is_child_of(const struct mfs_row *r, enum mfs_node_type dir)
{
	return r->parent == dir && r->kind != MFS_N_ROOT;
}

static void take_row(const struct mfs_row *r, struct mfs_node *n)
{
	n->type = r->kind;
	if (r->kind == MFS_N_CTL_FILE)
		n->ctl_kind = (enum mfs_ctl_kind)r->sub;
	else if (r->kind == MFS_N_EXEC_FILE)
		n->exec_file = (enum mfs_exec_file)r->sub;
}

int mfs_rows_lookup(const struct mfs_node *dir, const char *name, struct mfs_node *n)
{
	struct mfs_row scratch;
	const struct mfs_row *r;
	for (size_t i = 0; (r = mfs_rows_at(i, &scratch)); i++)
		if (is_child_of(r, dir->type) && r->name && !strcmp(r->name, name)) {
			take_row(r, n);
			return 0;
		}
	/* No fixed name: the patterns, in order; the first that is not ENOENT answers. */
	for (size_t i = 0; (r = mfs_rows_at(i, &scratch)); i++) {
		if (!is_child_of(r, dir->type) || !r->match)
			continue;
		int e = r->match(dir, name, n);
		if (e == 0)
			take_row(r, n);
		if (e != -ENOENT)
			return e;
	}
	return -ENOENT;
}

int mfs_rows_list(enum mfs_node_type dir, void *buf, fuse_fill_dir_t filler)
{
	struct mfs_row scratch;
	const struct mfs_row *r;
	for (size_t i = 0; (r = mfs_rows_at(i, &scratch)); i++)
		if (is_child_of(r, dir) && r->name && mfs_dir_entry(buf, filler, r->name, r->mode & S_IFMT))
			return 0;   /* the kernel's buffer is full */
	return 0;
}

/* The index of each kind's first row, built once. */
static struct mfs_row kind_rows[MFS_ROWS_MAX_KIND + 1];
static pthread_once_t kind_once = PTHREAD_ONCE_INIT;

static void index_kinds(void)
{
	struct mfs_row scratch;
	const struct mfs_row *r;
	for (size_t i = 0; (r = mfs_rows_at(i, &scratch)); i++)
		if ((size_t)r->kind < sizeof(kind_rows) / sizeof(kind_rows[0]) && !kind_rows[r->kind].kind)
			kind_rows[r->kind] = *r;
}

const struct mfs_row *mfs_kind_row(enum mfs_node_type t)
{
	static const struct mfs_row none = { .refuse = EPERM, .refuse_write = EPERM, .cache = MFS_KIND_NO_CACHE };
	pthread_once(&kind_once, index_kinds);
	if ((size_t)t >= sizeof(kind_rows) / sizeof(kind_rows[0]) || !kind_rows[t].kind)
		return &none;
	return &kind_rows[t];
}

unsigned mfs_kind_cache(enum mfs_node_type t)
{
	return mfs_kind_row(t)->cache;
}

mode_t mfs_kind_mode(enum mfs_node_type t)
{
	return mfs_kind_row(t)->mode;
}

/* ---- the rules of the table (the unit test holds them to it) ------------------ */

static bool has_kind(const struct mfs_row *rows, size_t n, enum mfs_node_type k)
{
	for (size_t i = 0; i < n; i++)
		if (rows[i].kind == k)
			return true;
	return false;
}

/* Row i against the table: -EINVAL with `why`, else 0. */
static int check_row(const struct mfs_row *rows, size_t n, size_t i, char *why, size_t len)
{
	const struct mfs_row *r = &rows[i];
	const char *what = r->name ? r->name : "a pattern";
	if (!r->kind || (unsigned)r->kind > MFS_ROWS_MAX_KIND || !!r->name == !!r->match || !r->mode || !r->refuse || !r->refuse_write) {
		snprintf(why, len, "row %zu (%s): needs a kind (at most MFS_ROWS_MAX_KIND), a name or a pattern (not both), a mode and its refusals",
			 i, what);
		return -EINVAL;
	}
	if (!has_kind(rows, n, r->parent)) {
		snprintf(why, len, "row %zu (%s): no row is its parent (kind %d)", i, what, (int)r->parent);
		return -EINVAL;
	}
	for (size_t j = 0; j < i; j++) {
		const struct mfs_row *o = &rows[j];
		if (o->parent == r->parent && o->name && r->name && !strcmp(o->name, r->name)) {
			snprintf(why, len, "row %zu: '%s' is there twice in the same directory", i, r->name);
			return -EINVAL;
		}
		if (o->kind == r->kind && (o->mode != r->mode || o->cache != r->cache || o->refuse != r->refuse ||
					   o->refuse_write != r->refuse_write)) {
			snprintf(why, len, "row %zu (%s): its kind's mode, cache or refusals differ from row %zu's", i,
				 what, j);
			return -EINVAL;
		}
	}
	return 0;
}

int mfs_rows_check(const struct mfs_row *rows, size_t n, const struct mfs_verb *const *vs, size_t nv, char *why,
		   size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (check_row(rows, n, i, why, len) < 0)
			return -EINVAL;
	for (size_t i = 0; i < nv; i++) {
		const struct mfs_verb *v = vs[i];
		if (!v->name || !v->parse || !v->run || !v->subject || !v->reply || !v->free_spec) {
			snprintf(why, len, "verb %zu (%s): needs a name and its parse, run, subject, reply and free_spec",
				 i, v->name ? v->name : "?");
			return -EINVAL;
		}
	}
	return 0;
}

/* ---- the tree's generic answers, from the table ---------------------------- */

int mfs_dir_entry(void *buf, fuse_fill_dir_t filler, const char *name, mode_t type)
{
	struct stat st;
	memset(&st, 0, sizeof(st));
	st.st_mode = type;
	return filler(buf, name, &st, 0, 0);
}

int mfs_tree_list(enum mfs_node_type dir, void *buf, fuse_fill_dir_t filler)
{
	mfs_dir_entry(buf, filler, ".", S_IFDIR);
	mfs_dir_entry(buf, filler, "..", S_IFDIR);
	return mfs_rows_list(dir, buf, filler);
}

int mfs_tree_child(const struct mfs_node *dir, const char *name, struct mfs_node *n)
{
	memset(n, 0, sizeof(*n));
	if (strlen(name) > NAME_MAX)
		return -ENAMETOOLONG;
	/* A child names what its parent names (the sandbox, the exec). */
	memcpy(n->name, dir->name, sizeof(n->name));
	memcpy(n->exec_id, dir->exec_id, sizeof(n->exec_id));
	return mfs_rows_lookup(dir, name, n);
}

void mfs_tree_root(struct mfs_node *n)
{
	memset(n, 0, sizeof(*n));
	n->type = MFS_N_ROOT;
}
