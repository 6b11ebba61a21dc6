/*
 * node.h: the kinds of node of the tree and their operations.
 *
 * A node (struct mfs_node, mfs.h) gets its kind at its LOOKUP (tree.c,
 * from its parent's kind and its name) and keeps it in the node table
 * (nodes.c); a request on the node calls its kind's operations
 * (n->ops->op(ctx, n, ...), the tables in kinds.c) with no path classified
 * again. An operation a kind leaves NULL is refused with the errno of the
 * kind's row (rows.h; the mfs_node_* helpers below): `refuse` for a change
 * of the namespace or the mode (EPERM on the fixed tree, EROFS under
 * root/), `refuse_write` for a change of the content (EACCES for a
 * read-only virtual file).
 * Answers follow doc/protocol.md "Errors".
 */
#ifndef MAFSBXFS_NODE_H
#define MAFSBXFS_NODE_H

#include <errno.h>

#include "ctx.h"
#include "mfs.h"
#include "rows.h"

struct mfs_node_ops {
	int (*getattr)(struct mfs_ctx *c, const struct mfs_node *n, struct stat *st, struct fuse_file_info *fi);
	int (*readlink)(struct mfs_ctx *c, const struct mfs_node *n, char *buf, size_t size);
	/* open and opendir register the handle they put in fi->fh. */
	int (*open)(struct mfs_ctx *c, const struct mfs_node *n, struct fuse_file_info *fi);
	int (*opendir)(struct mfs_ctx *c, const struct mfs_node *n, struct fuse_file_info *fi);
	int (*readdir)(struct mfs_ctx *c, const struct mfs_node *n, void *buf, fuse_fill_dir_t filler, off_t off,
		       struct fuse_file_info *fi);
	/* On a node looked up but not yet made (the kind its name would have). */
	int (*create)(struct mfs_ctx *c, const struct mfs_node *n, mode_t mode, struct fuse_file_info *fi);
	int (*mkdir)(struct mfs_ctx *c, const struct mfs_node *n, mode_t mode);
	int (*unlink)(struct mfs_ctx *c, const struct mfs_node *n);
	int (*rmdir)(struct mfs_ctx *c, const struct mfs_node *n);
	/* Both ends of the same kind (else refused). */
	int (*rename)(struct mfs_ctx *c, const struct mfs_node *from, const struct mfs_node *to, unsigned flags);
	int (*chmod)(struct mfs_ctx *c, const struct mfs_node *n, mode_t mode);
	int (*truncate)(struct mfs_ctx *c, const struct mfs_node *n, off_t size);
	int (*utimens)(struct mfs_ctx *c, const struct mfs_node *n, const struct timespec tv[2],
		       struct fuse_file_info *fi);
};

/* The operations of a kind (kinds.c). */
const struct mfs_node_ops *mfs_kind_ops(enum mfs_node_type t);

/* tree.c: the root node; the child `name` of `dir` (0, -ENOENT, -EINVAL,
 * -ENAMETOOLONG; pure); the path-derived fields once n->path is set; an
 * absolute path walked from the root, n->path its copy (the unit tests'
 * way in: the daemon looks names up one at a time). */
void mfs_tree_root(struct mfs_node *n);
int mfs_tree_child(const struct mfs_node *dir, const char *name, struct mfs_node *n);
int mfs_tree_bind(struct mfs_node *n);
/* A kind whose operations read the node's path (n->path, n->rel, n->comp). */
bool mfs_tree_needs_path(enum mfs_node_type t);
int mfs_tree_walk(const char *path, struct mfs_node *n);
/* The listing of a fixed directory (.ctl, NAME, NAME/execs/ID): ".", "..",
 * then the tree's rows under it (tree.c holds each name once). */
int mfs_tree_list(enum mfs_node_type dir, void *buf, fuse_fill_dir_t filler);
/* Free what the node holds (its path). */
void mfs_node_clear(struct mfs_node *n);

/* nodes.c (which knows kinds, not their operations: the caller sets n->ops,
 * mfs_kind_ops): the node `id` as the table keeps it (its path copied only
 * for a kind that needs it): 0, -ESTALE for a node we do not hold, -ENOMEM. */
int mfs_nodes_get(struct mfs_nodes *t, uint64_t id, struct mfs_node *n);
/* The same with its path whatever its kind (a listing names its children). */
int mfs_nodes_get_path(struct mfs_nodes *t, uint64_t id, struct mfs_node *n);
/* The child `name` of node `parent`, with its path (the table's key). */
int mfs_nodes_child(struct mfs_nodes *t, uint64_t parent, const char *name, struct mfs_node *n);
/* One more kernel lookup of the node `n` (its kind kept with it; n->ops set). */
int mfs_nodes_ref_node(struct mfs_nodes *t, const struct mfs_node *n, uint64_t *id);

/* handles.c: a request on the open handle in fi->fh, by its kind. */
int mfs_handle_read(struct mfs_ctx *c, struct fuse_file_info *fi, char *buf, size_t size, off_t off);
int mfs_handle_write(struct mfs_ctx *c, struct fuse_file_info *fi, const char *buf, size_t size, off_t off);
int mfs_handle_flush(struct mfs_ctx *c, struct fuse_file_info *fi);
/* A truncate through the handle: true with *r its answer, false when the node answers. */
bool mfs_handle_truncate(struct mfs_ctx *c, struct fuse_file_info *fi, off_t size, int *r);
bool mfs_handle_is_ctl(const struct fuse_file_info *fi);
/* The last close of a file / a directory: the handle freed, fi->fh 0. */
int mfs_handle_release(struct mfs_ctx *c, struct fuse_file_info *fi);
int mfs_handle_releasedir(struct mfs_ctx *c, struct fuse_file_info *fi);
/* Open a snapshot of the shared text `key` (texts.c) as a read-only file. */
int mfs_blob_open(struct mfs *fs, const char *key, mfs_text_build_fn build, void *arg, struct fuse_file_info *fi);

/* The refusals of an operation a kind does not have (its row's). */
static inline int mfs_node_refusal(const struct mfs_node *n, bool write)
{
	const struct mfs_row *r = mfs_kind_row(n->type);
	return write ? r->refuse_write : r->refuse;
}

static inline int mfs_node_readlink(struct mfs_ctx *c, const struct mfs_node *n, char *buf, size_t size)
{
	return n->ops->readlink ? n->ops->readlink(c, n, buf, size) : -EINVAL;
}

static inline int mfs_node_mkdir(struct mfs_ctx *c, const struct mfs_node *n, mode_t mode)
{
	return n->ops->mkdir ? n->ops->mkdir(c, n, mode) : -mfs_node_refusal(n, false);
}

static inline int mfs_node_unlink(struct mfs_ctx *c, const struct mfs_node *n)
{
	return n->ops->unlink ? n->ops->unlink(c, n) : -mfs_node_refusal(n, false);
}

static inline int mfs_node_rmdir(struct mfs_ctx *c, const struct mfs_node *n)
{
	return n->ops->rmdir ? n->ops->rmdir(c, n) : -mfs_node_refusal(n, false);
}

static inline int mfs_node_chmod(struct mfs_ctx *c, const struct mfs_node *n, mode_t mode)
{
	return n->ops->chmod ? n->ops->chmod(c, n, mode) : -mfs_node_refusal(n, false);
}

static inline int mfs_node_create(struct mfs_ctx *c, const struct mfs_node *n, mode_t mode, struct fuse_file_info *fi)
{
	return n->ops->create ? n->ops->create(c, n, mode, fi) : -mfs_node_refusal(n, true);
}

static inline int mfs_node_truncate(struct mfs_ctx *c, const struct mfs_node *n, off_t size)
{
	return n->ops->truncate ? n->ops->truncate(c, n, size) : -mfs_node_refusal(n, true);
}

static inline int mfs_node_utimens(struct mfs_ctx *c, const struct mfs_node *n, const struct timespec tv[2],
				   struct fuse_file_info *fi)
{
	return n->ops->utimens ? n->ops->utimens(c, n, tv, fi) : -mfs_node_refusal(n, true);
}

static inline int mfs_node_rename(struct mfs_ctx *c, const struct mfs_node *a, const struct mfs_node *b, unsigned flags)
{
	if (mfs_node_refusal(a, false) == EROFS || mfs_node_refusal(b, false) == EROFS)
		return -EROFS;
	return a->ops == b->ops && a->ops->rename ? a->ops->rename(c, a, b, flags) : -EPERM;
}

static inline int mfs_node_readdir(struct mfs_ctx *c, const struct mfs_node *n, void *buf, fuse_fill_dir_t filler,
				   off_t off, struct fuse_file_info *fi)
{
	return n->ops->readdir ? n->ops->readdir(c, n, buf, filler, off, fi) : -ENOTDIR;
}

#endif
