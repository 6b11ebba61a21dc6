/*
 * lowlevel.h: the kernel-facing layer's own header (lowlevel.c, lowlevel_io.c):
 * the context a request hands down, the answers and the node lookups both
 * files use, and the requests on open files that lowlevel_io.c serves.
 */
#ifndef MAFSBXFS_LOWLEVEL_H
#define MAFSBXFS_LOWLEVEL_H

#include "ctx.h"
#include "mfs.h"
#include "node.h"

#include <fuse_lowlevel.h>

/* The context of the request at hand (ctx.h), handed down to the operations. */
struct mfs *mfs_ll_begin(fuse_req_t req, struct mfs_ctx *c);
/* The request was answered, which frees it: later operations watch nothing. */
void mfs_ll_answered(struct mfs_ctx *c);
void mfs_ll_reply_err(fuse_req_t req, int r);
/* The entry of the node `n` just looked up (whose stat is `st`), its lookup counted. */
int mfs_ll_make_entry(struct mfs *fs, const struct mfs_node *n, const struct stat *st, struct fuse_entry_param *e);
/* The node `ino` with its kind's operations, or false with the request answered. */
bool mfs_ll_node(fuse_req_t req, struct mfs *fs, fuse_ino_t ino, struct mfs_node *n);
/* The child `name` of `parent`, with its kind's operations. */
int mfs_ll_child(struct mfs *fs, fuse_ino_t parent, const char *name, struct mfs_node *n);
/* An error of the tree's (a name it cannot hold), not of the node table's. */
bool mfs_ll_tree_error(int r);
/* The same for a change: a name the tree cannot hold is EPERM. */
int mfs_ll_child_for_change(struct mfs *fs, fuse_ino_t parent, const char *name, struct mfs_node *n);

/* lowlevel_io.c */
void mfs_ll_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void mfs_ll_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, struct fuse_file_info *fi);
void mfs_ll_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void mfs_ll_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		  struct fuse_file_info *fi);
void mfs_ll_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void mfs_ll_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);
void mfs_ll_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void mfs_ll_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void mfs_ll_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void mfs_ll_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void mfs_ll_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);

#endif
