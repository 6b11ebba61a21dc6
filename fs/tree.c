/*
 * tree.c: which kind of node a name under a node is (doc/protocol.md "The tree").
 *
 *   /                          root
 *   /.ctl, /.ctl/{acquire,dispose,exec,declarations,engine}
 *   /by-scope[/S[/T[/A[/KIND]]]]
 *   /NAME, /NAME/status, /NAME/egress, /NAME/execs[/ID[/FILE]]
 *   /NAME/work[/REL], /NAME/root[/REL]
 *
 * A node's kind is decided once, at its LOOKUP, from its parent's kind and
 * its name (mfs_tree_child); the node table keeps it (nodes.c), the
 * kernel-facing layer gives it its kind's operations (kinds.c), and every
 * later request on the node goes straight to them. The names of the fixed
 * tree (the .ctl files among them: mfs_ctl_kind_name) live here once, in
 * `rows`. Pure text work: whether NAME exists, or REL exists in the guest,
 * is the kinds' business. A component over 255 bytes is ENAMETOOLONG and a
 * backslash under work/ or root/ is EINVAL
 * (mafsbxfs(1) READING AND WRITING FILES); a name the tree cannot hold is
 * ENOENT without asking the engine.
 */
#include "mfs.h"
#include "node.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"

static void set_type(struct mfs_node *n, enum mfs_node_type t)
{
	n->type = t;
}

static int lookup_none(const struct mfs_node *dir, const char *name, struct mfs_node *n)
{
	(void)dir;
	(void)name;
	(void)n;
	return -ENOENT;
}

/*
 * The fixed names of the tree, one row each, in the order a listing gives
 * them: the lookup of a fixed name and the listing of a fixed directory
 * both come from here (mfs_tree_list). `sub` is the ctl kind of a .ctl
 * transaction file, the file of a detached exec's.
 */
static const struct row {
	enum mfs_node_type parent;
	const char *name;
	enum mfs_node_type kind;
	int sub;
	mode_t type;                 /* S_IFDIR or S_IFREG: the listing's */
} rows[] = {
	{ MFS_N_ROOT, ".ctl", MFS_N_CTL_DIR, 0, S_IFDIR },
	{ MFS_N_ROOT, "by-scope", MFS_N_BYSCOPE, 0, S_IFDIR },
	{ MFS_N_CTL_DIR, "acquire", MFS_N_CTL_FILE, MFS_CTL_ACQUIRE, S_IFREG },
	{ MFS_N_CTL_DIR, "dispose", MFS_N_CTL_FILE, MFS_CTL_DISPOSE, S_IFREG },
	{ MFS_N_CTL_DIR, "exec", MFS_N_CTL_FILE, MFS_CTL_EXEC, S_IFREG },
	{ MFS_N_CTL_DIR, "declarations", MFS_N_CTL_DECLARATIONS, 0, S_IFREG },
	{ MFS_N_CTL_DIR, "engine", MFS_N_CTL_ENGINE, 0, S_IFREG },
	{ MFS_N_SBX_DIR, "status", MFS_N_SBX_STATUS, 0, S_IFREG },
	{ MFS_N_SBX_DIR, "egress", MFS_N_SBX_EGRESS, 0, S_IFREG },
	{ MFS_N_SBX_DIR, "work", MFS_N_WORK, 0, S_IFDIR },
	{ MFS_N_SBX_DIR, "root", MFS_N_ROOTFS, 0, S_IFDIR },
	{ MFS_N_SBX_DIR, "execs", MFS_N_EXECS, 0, S_IFDIR },
	{ MFS_N_EXEC_DIR, "stdout", MFS_N_EXEC_FILE, MFS_EXEC_STDOUT, S_IFREG },
	{ MFS_N_EXEC_DIR, "stderr", MFS_N_EXEC_FILE, MFS_EXEC_STDERR, S_IFREG },
	{ MFS_N_EXEC_DIR, "status", MFS_N_EXEC_FILE, MFS_EXEC_STATUS, S_IFREG },
	{ MFS_N_EXEC_DIR, "wait", MFS_N_EXEC_FILE, MFS_EXEC_WAIT, S_IFREG },
};

#define N_ROWS (sizeof(rows) / sizeof(rows[0]))

/* A fixed name of `dir`'s: 1 and n set, else 0. */
static int lookup_row(const struct mfs_node *dir, const char *name, struct mfs_node *n)
{
	for (size_t i = 0; i < N_ROWS; i++)
		if (rows[i].parent == dir->type && !strcmp(name, rows[i].name)) {
			set_type(n, rows[i].kind);
			if (rows[i].kind == MFS_N_CTL_FILE)
				n->ctl_kind = (enum mfs_ctl_kind)rows[i].sub;
			else if (rows[i].kind == MFS_N_EXEC_FILE)
				n->exec_file = (enum mfs_exec_file)rows[i].sub;
			return 1;
		}
	return 0;
}

int mfs_dir_entry(void *buf, fuse_fill_dir_t filler, const char *name, mode_t type)
{
	struct stat st;
	memset(&st, 0, sizeof(st));
	st.st_mode = type;
	return filler(buf, name, &st, 0, 0);
}

const char *mfs_ctl_kind_name(enum mfs_ctl_kind k)
{
	for (size_t i = 0; i < N_ROWS; i++)
		if (rows[i].kind == MFS_N_CTL_FILE && rows[i].sub == (int)k)
			return rows[i].name;
	return "?";
}

int mfs_tree_list(enum mfs_node_type dir, void *buf, fuse_fill_dir_t filler)
{
	mfs_dir_entry(buf, filler, ".", S_IFDIR);
	mfs_dir_entry(buf, filler, "..", S_IFDIR);
	for (size_t i = 0; i < N_ROWS; i++)
		if (rows[i].parent == dir)
			mfs_dir_entry(buf, filler, rows[i].name, rows[i].type);
	return 0;
}

/* The names no row holds: a pattern per kind of directory. */

/* /NAME: only workload names can exist. */
static int lookup_root(const struct mfs_node *dir, const char *name, struct mfs_node *n)
{
	(void)dir;
	if (strlen(name) != MAFSBX_NAME_LEN || !mafsbx_is_workload_name(name))
		return -ENOENT;
	strcpy(n->name, name);
	set_type(n, MFS_N_SBX_DIR);
	return 0;
}

/* by-scope/S/T/A: three levels of directories, then the links. */
static int lookup_byscope(const struct mfs_node *dir, const char *name, struct mfs_node *n)
{
	(void)name;
	n->depth = dir->depth + 1;
	set_type(n, n->depth == 4 ? MFS_N_BYSCOPE_LINK : MFS_N_BYSCOPE);
	return 0;
}

/* Below work/ and root/: any name but one with a backslash. */
static int lookup_files(const struct mfs_node *dir, const char *name, struct mfs_node *n)
{
	if (strchr(name, '\\'))
		return -EINVAL;
	set_type(n, dir->type);
	return 0;
}

static int lookup_execs(const struct mfs_node *dir, const char *name, struct mfs_node *n)
{
	(void)dir;
	size_t il = strlen(name);
	if (il != MFS_EXEC_ID_LEN || strspn(name, "0123456789abcdef") < il)
		return -ENOENT;
	memcpy(n->exec_id, name, il + 1);
	set_type(n, MFS_N_EXEC_DIR);
	return 0;
}

typedef int (*lookup_fn)(const struct mfs_node *dir, const char *name, struct mfs_node *n);

static const lookup_fn lookups[] = {
	[MFS_N_ROOT] = lookup_root,
	[MFS_N_BYSCOPE] = lookup_byscope,
	[MFS_N_WORK] = lookup_files,
	[MFS_N_ROOTFS] = lookup_files,
	[MFS_N_EXECS] = lookup_execs,
};

int mfs_tree_child(const struct mfs_node *dir, const char *name, struct mfs_node *n)
{
	memset(n, 0, sizeof(*n));
	if (strlen(name) > NAME_MAX)
		return -ENAMETOOLONG;
	/* A child names what its parent names (the sandbox, the exec). */
	memcpy(n->name, dir->name, sizeof(n->name));
	memcpy(n->exec_id, dir->exec_id, sizeof(n->exec_id));
	if (lookup_row(dir, name, n))
		return 0;
	size_t t = (size_t)dir->type;
	lookup_fn fn = t < sizeof(lookups) / sizeof(lookups[0]) && lookups[t] ? lookups[t] : lookup_none;
	return fn(dir, name, n);
}

void mfs_tree_root(struct mfs_node *n)
{
	memset(n, 0, sizeof(*n));
	set_type(n, MFS_N_ROOT);
}

bool mfs_tree_needs_path(enum mfs_node_type t)
{
	return t == MFS_N_WORK || t == MFS_N_ROOTFS || t == MFS_N_BYSCOPE || t == MFS_N_BYSCOPE_LINK;
}

/*
 * Point the node's path-derived fields into n->path (set by the caller):
 * `rel` below work/ or root/ ("/" NAME "/work/" REL, NAME of a fixed
 * length), and by-scope's components (copied into n->buf). 0, or -ENOENT
 * for a by-scope path the buffer cannot hold.
 */
int mfs_tree_bind(struct mfs_node *n)
{
	if (n->type == MFS_N_WORK || n->type == MFS_N_ROOTFS) {
		const char *p = n->path + 1 + MAFSBX_NAME_LEN + 5;   /* past "/NAME/work" */
		n->rel = *p ? p + 1 : p;
		return 0;
	}
	if (n->type != MFS_N_BYSCOPE && n->type != MFS_N_BYSCOPE_LINK)
		return 0;
	const char *rest = n->path + strlen("/by-scope");
	if (!*rest)
		return 0;
	if (strlen(rest + 1) >= sizeof(n->buf))
		return -ENOENT;
	strcpy(n->buf, rest + 1);
	char *c = n->buf;
	for (int i = 0; i < n->depth; i++) {
		n->comp[i] = c;
		char *s = strchr(c, '/');
		if (s)
			*s++ = '\0';
		c = s;
	}
	return 0;
}

void mfs_node_clear(struct mfs_node *n)
{
	free(n->path);
	n->path = NULL;
}

int mfs_tree_walk(const char *path, struct mfs_node *n)
{
	memset(n, 0, sizeof(*n));
	if (!path || path[0] != '/')
		return -ENOENT;
	for (const char *c = path + 1; *c;) {   /* a long name is ENAMETOOLONG wherever it is */
		const char *s = strchr(c, '/');
		if ((s ? (size_t)(s - c) : strlen(c)) > NAME_MAX)
			return -ENAMETOOLONG;
		c = s ? s + 1 : c + strlen(c);
	}
	struct mfs_node dir;
	mfs_tree_root(&dir);
	const char *p = path + 1;
	while (*p) {
		const char *s = strchr(p, '/');
		size_t len = s ? (size_t)(s - p) : strlen(p);
		char name[NAME_MAX + 1];
		memcpy(name, p, len);
		name[len] = '\0';
		int r = len ? mfs_tree_child(&dir, name, n) : -ENOENT;
		if (r < 0)
			return r;
		dir = *n;
		p = s ? s + 1 : p + len;
	}
	*n = dir;
	if (!(n->path = strdup(path)))
		return -ENOMEM;
	int r = mfs_tree_bind(n);
	if (r < 0)
		mfs_node_clear(n);
	return r;
}
