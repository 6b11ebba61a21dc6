/* fs_paths.h: the daemon's operations by path, for unit tests (fs_paths.c). */
#ifndef MAFSBX_TEST_FS_PATHS_H
#define MAFSBX_TEST_FS_PATHS_H

#include "mfs.h"

extern const struct fuse_operations mfs_operations;
/* The mount the operations serve (NULL: none). */
void fs_paths_set(struct mfs *fs);

#endif
