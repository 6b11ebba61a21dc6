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
 * its name (mfs_tree_child, in rows.c, reading this module's rows); the node table keeps it (nodes.c), the
 * kernel-facing layer gives it its kind's operations (kinds.c), and every
 * later request on the node goes straight to them. The tree's shape is
 * `mfs_tree_rows`, this module's rows of the one table (rows.h): the fixed
 * names and the patterns of the names no row holds. Pure text work:
 * whether NAME exists, or REL exists in the guest, is the kinds' business.
 * A component over 255 bytes is ENAMETOOLONG and a backslash under work/
 * or root/ is EINVAL (mafsbxfs(1) READING AND WRITING FILES); a name the
 * tree cannot hold is ENOENT without asking the engine.
 */
#include "mfs.h"
#include "node.h"
#include "rows.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"

/* ---- the patterns: the names no fixed row holds ------------------------------ */

/* /NAME: only workload names can exist. */
static int match_sandbox(const struct mfs_node *dir, const char *name, struct mfs_node *n)
{
	(void)dir;
	if (strlen(name) != MAFSBX_NAME_LEN || !mafsbx_is_workload_name(name))
		return -ENOENT;
	strcpy(n->name, name);
	return 0;
}

/* by-scope/S/T/A: three levels of directories, then the links. */
static int match_byscope_dir(const struct mfs_node *dir, const char *name, struct mfs_node *n)
{
	(void)name;
	if (dir->depth >= 3)
		return -ENOENT;
	n->depth = dir->depth + 1;
	return 0;
}

static int match_byscope_link(const struct mfs_node *dir, const char *name, struct mfs_node *n)
{
	(void)name;
	if (dir->depth != 3)
		return -ENOENT;
	n->depth = 4;
	return 0;
}

/* Below work/ and root/: any name but one with a backslash. */
static int match_files(const struct mfs_node *dir, const char *name, struct mfs_node *n)
{
	(void)dir;
	(void)n;
	return strchr(name, '\\') ? -EINVAL : 0;
}

static int match_exec(const struct mfs_node *dir, const char *name, struct mfs_node *n)
{
	(void)dir;
	size_t il = strlen(name);
	if (il != MFS_EXEC_ID_LEN || strspn(name, "0123456789abcdef") < il)
		return -ENOENT;
	memcpy(n->exec_id, name, il + 1);
	return 0;
}

/* The cache policies and refusals of the tree's kinds (doc/protocol.md "Errors"). */
#define FIXED .refuse = EPERM, .refuse_write = EPERM
#define READ_ONLY .refuse = EPERM, .refuse_write = EACCES, .cache = MFS_KIND_DIRECT_IO
#define READ_ONLY_LIVE .refuse = EPERM, .refuse_write = EACCES, .cache = MFS_KIND_DIRECT_IO | MFS_KIND_NO_CACHE
#define LIVE .cache = MFS_KIND_NO_CACHE
/* A guest's file: its mode is the guest's (0777 here says so). */
#define GUEST(k, err) .kind = k, .mode = S_IFDIR | 0777, .refuse = err, .refuse_write = err

/*
 * The tree's shape, in the order a listing gives it: the root, by-scope/, a
 * sandbox's directory and what is in it (the .ctl files are ctl.c's and the
 * verbs'). A sandbox's own files show the mount's -o umask (kinds.c).
 */
const struct mfs_row mfs_tree_rows[] = {
	{ MFS_N_ROOT, "/", NULL, MFS_N_ROOT, 0, S_IFDIR | 0755, FIXED },
	{ MFS_N_ROOT, "by-scope", NULL, MFS_N_BYSCOPE, 0, S_IFDIR | 0555, FIXED },
	{ MFS_N_BYSCOPE, NULL, match_byscope_dir, MFS_N_BYSCOPE, 0, S_IFDIR | 0555, FIXED },
	{ MFS_N_BYSCOPE, NULL, match_byscope_link, MFS_N_BYSCOPE_LINK, 0, S_IFLNK | 0777, FIXED },
	{ MFS_N_ROOT, NULL, match_sandbox, MFS_N_SBX_DIR, 0, S_IFDIR | 0755, FIXED, .cache = MFS_KIND_RMDIR_TXN },
	{ MFS_N_SBX_DIR, "status", NULL, MFS_N_SBX_STATUS, 0, S_IFREG | 0444, READ_ONLY },
	{ MFS_N_SBX_DIR, "egress", NULL, MFS_N_SBX_EGRESS, 0, S_IFREG | 0444, READ_ONLY },
	{ MFS_N_SBX_DIR, "work", NULL, GUEST(MFS_N_WORK, EPERM) },
	{ MFS_N_SBX_DIR, "root", NULL, GUEST(MFS_N_ROOTFS, EROFS) },
	{ MFS_N_WORK, NULL, match_files, GUEST(MFS_N_WORK, EPERM) },
	{ MFS_N_ROOTFS, NULL, match_files, GUEST(MFS_N_ROOTFS, EROFS) },
	{ MFS_N_SBX_DIR, "execs", NULL, MFS_N_EXECS, 0, S_IFDIR | 0555, FIXED, LIVE },
	{ MFS_N_EXECS, NULL, match_exec, MFS_N_EXEC_DIR, 0, S_IFDIR | 0555, FIXED, LIVE },
	{ MFS_N_EXEC_DIR, "stdout", NULL, MFS_N_EXEC_FILE, MFS_EXEC_STDOUT, S_IFREG | 0444, READ_ONLY_LIVE },
	{ MFS_N_EXEC_DIR, "stderr", NULL, MFS_N_EXEC_FILE, MFS_EXEC_STDERR, S_IFREG | 0444, READ_ONLY_LIVE },
	{ MFS_N_EXEC_DIR, "status", NULL, MFS_N_EXEC_FILE, MFS_EXEC_STATUS, S_IFREG | 0444, READ_ONLY_LIVE },
	{ MFS_N_EXEC_DIR, "wait", NULL, MFS_N_EXEC_FILE, MFS_EXEC_WAIT, S_IFREG | 0444, READ_ONLY_LIVE },
	MFS_ROWS_END,
};


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
