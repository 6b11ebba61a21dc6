/*
 * passthrough.h: FUSE passthrough for local-plane reads (passthrough.c):
 * the backing ids the kernel holds per node and the counts .ctl/engine
 * shows, all of it passthrough.c's own (struct mfs_passthrough).
 */
#ifndef MAFSBXFS_PASSTHROUGH_H
#define MAFSBXFS_PASSTHROUGH_H

#define FUSE_USE_VERSION 312

#include <fuse.h>
#include <jansson.h>
#include <stdint.h>

struct mfs;
struct fuse_conn_info;
struct fuse_req;

/* At the mount's init: ask the kernel for passthrough where the build, the plane and the kernel allow it. */
void mfs_passthrough_init(struct mfs *fs, struct fuse_conn_info *conn);
void mfs_passthrough_fini(struct mfs *fs);
/*
 * After a successful open of `path` (fi->fh set), before its reply: hand a
 * local-plane read to the kernel. -ESTALE: the node holds another file
 * open; the path was given a new node, and the open must be answered ESTALE
 * (after its release) so that the kernel looks it up again.
 */
int mfs_passthrough_open(struct mfs *fs, struct fuse_req *req, uint64_t ino, const char *path,
			 struct fuse_file_info *fi);
/* Before the release of an open: give back its node's backing id. */
void mfs_passthrough_release(struct mfs *fs, struct fuse_req *req, const struct fuse_file_info *fi);
/* A read of a work/ or rootfs/ file the daemon served (not the kernel): counted for .ctl/engine. */
void mfs_passthrough_count_read(struct mfs *fs);
/* .ctl/engine's "passthrough": on, why not, and the counts. */
json_t *mfs_passthrough_json(struct mfs *fs);

#endif
