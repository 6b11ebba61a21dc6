/*
 * fs_paths.c: the daemon's node and handle operations by path, for the unit
 * tests that drive them without a mount (test_fs_ctl.c): a path is walked
 * from the root as the kernel's lookups would (fs/tree.c), and the node's
 * kind answers (fs/kinds.c); an open file's handle answers as in
 * fs/lowlevel.c. The same refusals as the daemon's: a name the tree cannot
 * hold is EPERM where a change would make it. The operations get a
 * context with no caller (ctx.h), on the mount fs_paths_set() names.
 */
#include "fs_paths.h"

#include <errno.h>
#include <string.h>

#include "node.h"

static struct mfs *mounted;

void fs_paths_set(struct mfs *fs)
{
	mounted = fs;
}

/* A request with no caller, as a unit test makes it. */
#define CTX(c) struct mfs_ctx c; mfs_ctx_plain(&c, mounted)

/* The node `path` names, with its kind's operations. */
static int walk(const char *path, struct mfs_node *n)
{
	int r = mfs_tree_walk(path, n);
	if (r == 0)
		n->ops = mfs_kind_ops(n->type);
	return r;
}

static int walk_for_change(const char *path, struct mfs_node *n)
{
	int r = walk(path, n);
	return r == -ENOENT ? -EPERM : r;
}

static int op_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	CTX(c);
	struct mfs_node n;
	int r = walk(path, &n);
	if (r == 0)
		r = n.ops->getattr(&c, &n, st, fi);
	mfs_node_clear(&n);
	return r;
}

static int op_open(const char *path, struct fuse_file_info *fi)
{
	CTX(c);
	struct mfs_node n;
	int r = walk(path, &n);
	if (r == 0)
		r = n.ops->open ? n.ops->open(&c, &n, fi) : -EISDIR;
	mfs_node_clear(&n);
	return r;
}

static int op_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	CTX(c);
	struct mfs_node n;
	int r = walk_for_change(path, &n);
	if (r == 0)
		r = mfs_node_create(&c, &n, mode, fi);
	mfs_node_clear(&n);
	return r;
}

static int op_mkdir(const char *path, mode_t mode)
{
	CTX(c);
	struct mfs_node n;
	int r = walk_for_change(path, &n);
	if (r == 0)
		r = mfs_node_mkdir(&c, &n, mode);
	mfs_node_clear(&n);
	return r;
}

static int op_unlink(const char *path)
{
	CTX(c);
	struct mfs_node n;
	int r = walk_for_change(path, &n);
	if (r == 0)
		r = mfs_node_unlink(&c, &n);
	mfs_node_clear(&n);
	return r;
}

static int op_rmdir(const char *path)
{
	CTX(c);
	struct mfs_node n;
	int r = walk_for_change(path, &n);
	if (r == 0)
		r = mfs_node_rmdir(&c, &n);
	mfs_node_clear(&n);
	return r;
}

static int op_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	CTX(c);
	(void)fi;
	struct mfs_node n;
	int r = walk_for_change(path, &n);
	if (r == 0)
		r = mfs_node_chmod(&c, &n, mode);
	mfs_node_clear(&n);
	return r;
}

static int op_rename(const char *from, const char *to, unsigned int flags)
{
	CTX(c);
	if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT))
		return -EINVAL;
	struct mfs_node a, b;
	memset(&b, 0, sizeof(b));
	int r = walk_for_change(from, &a);
	if (r == 0)
		r = walk_for_change(to, &b);
	if (r == 0)
		r = mfs_node_rename(&c, &a, &b, flags);
	mfs_node_clear(&a);
	mfs_node_clear(&b);
	return r;
}

static int op_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	CTX(c);
	int r;
	if (mfs_handle_truncate(&c, fi, size, &r))
		return r;
	struct mfs_node n;
	if ((r = walk(path, &n)) == 0)
		r = mfs_node_truncate(&c, &n, size);
	mfs_node_clear(&n);
	return r;
}

static int op_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
	CTX(c);
	if (mfs_handle_is_ctl(fi))
		return 0;
	struct mfs_node n;
	int r = walk(path, &n);
	if (r == 0)
		r = mfs_node_utimens(&c, &n, tv, fi);
	mfs_node_clear(&n);
	return r;
}

static int op_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	CTX(c);
	(void)path;
	return mfs_handle_read(&c, fi, buf, size, off);
}

static int op_write(const char *path, const char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	CTX(c);
	(void)path;
	return mfs_handle_write(&c, fi, buf, size, off);
}

static int op_flush(const char *path, struct fuse_file_info *fi)
{
	CTX(c);
	(void)path;
	return mfs_handle_flush(&c, fi);
}

static int op_release(const char *path, struct fuse_file_info *fi)
{
	CTX(c);
	(void)path;
	return mfs_handle_release(&c, fi);
}

const struct fuse_operations mfs_operations = {
	.getattr = op_getattr,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.rename = op_rename,
	.chmod = op_chmod,
	.truncate = op_truncate,
	.open = op_open,
	.read = op_read,
	.write = op_write,
	.flush = op_flush,
	.release = op_release,
	.create = op_create,
	.utimens = op_utimens,
};
