/*
 * fs_ll.h: the daemon's low-level handlers (mfs_lowlevel_ops) driven by path
 * for unit tests (fs_ll.c), each call one fake request (fuse_shim.h)
 * answered as the kernel would see it: a path is looked up name by name
 * from the root, an open file is the fuse_file_info the open answered, and
 * a .ctl write that completes a request runs on the transaction threads.
 * Each returns what the answer said: 0 or a count, or -errno.
 */
#ifndef MAFSBX_TEST_FS_LL_H
#define MAFSBX_TEST_FS_LL_H

#include "fuse_shim.h"

/* The mount as main.c starts it (mfs_init, then the low-level layer's start) and ends it. */
void fsll_start(struct mfs *fs);
void fsll_stop(struct mfs *fs);
/* The uid the next requests come from (the test's own by default). */
void fsll_as(uid_t uid);
/* The pid the next requests come from (0: the test's own). */
void fsll_pid(pid_t pid);

int fsll_lookup(const char *path, fuse_ino_t *ino, struct fuse_entry_param *e);
int fsll_getattr(const char *path, struct stat *st);
int fsll_open(const char *path, struct fuse_file_info *fi);   /* fi->flags set by the caller */
int fsll_create(const char *path, mode_t mode, struct fuse_file_info *fi);
int fsll_read(struct fuse_file_info *fi, char *buf, size_t size, off_t off);
int fsll_write(struct fuse_file_info *fi, const char *buf, size_t size, off_t off);
/* A write whose answer is not waited for: the caller waits, interrupts, frees. */
struct fuse_req *fsll_write_start(struct fuse_file_info *fi, const char *buf, size_t size, off_t off);
int fsll_result(struct fuse_req *r);   /* wait, then the answer as the calls above give it; frees r */
int fsll_flush(struct fuse_file_info *fi);
int fsll_release(struct fuse_file_info *fi);
/* setattr: a size (on the open file fi, or by path with fi NULL), times, a mode. */
int fsll_truncate(const char *path, off_t size, struct fuse_file_info *fi);
int fsll_utimens(const char *path);
int fsll_chmod(const char *path, mode_t mode);
int fsll_mkdir(const char *path, mode_t mode);
int fsll_unlink(const char *path);
int fsll_rmdir(const char *path);
int fsll_rename(const char *from, const char *to, unsigned flags);
/* readdir (plus: readdirplus) of `path` from offset 0 in one answer of `size` bytes;
 * *r is the answer to walk with shim_dirent_next (the caller frees it). */
int fsll_readdir(const char *path, bool plus, size_t size, struct fuse_req **r);

#endif
