/*
 * notify.c: the one notifier of fs/: a module that changed what the kernel
 * may have cached (a sandbox came or went, a rename exchanged two files)
 * says so here, by path, and the kernel is told by node (nodes.c) through
 * the mount's session. It calls nothing of fs/ but the node table, so that
 * the modules below the kernel-facing layer never call up to it.
 */
#include "mfs.h"

#include <fuse_lowlevel.h>

void mfs_invalidate_path(struct mfs *fs, const char *path)
{
	uint64_t id;
	/* Only the node: an entry invalidation takes the parent's lock, which
	 * the request that asks for this may hold (rmdir NAME). */
	if (fs->se && mfs_nodes_find(&fs->nodes, path, &id))
		fuse_lowlevel_notify_inval_inode(fs->se, id, 0, 0);
}
