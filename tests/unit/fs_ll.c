/*
 * fs_ll.c: the daemon's low-level handlers (fs/lowlevel.c, lowlevel_io.c)
 * driven by path for unit tests (fs_ll.h): every call is one fake request
 * (fuse_shim.c) handed to mfs_lowlevel_ops as libfuse's session loop hands
 * it, and the answer recorded there is turned back into a return value.
 * The mount is started and ended as main.c does it, so a .ctl write that
 * completes a request runs on the daemon's transaction threads, under its
 * one request limit (-o max_requests), and is answered from there.
 */
#include "fs_ll.h"

#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static struct mfs *mounted;
static uid_t caller;
static bool caller_set;
static pid_t caller_pid;

void fsll_start(struct mfs *fs)
{
	assert_int_equal(mfs_init(fs), 0);
	assert_int_equal(mfs_lowlevel_start(fs), 0);
	mounted = fs;
	caller_set = false;
	caller_pid = 0;
}

void fsll_stop(struct mfs *fs)
{
	assert_true(mfs_lowlevel_stop(fs));
	mfs_lowlevel_free(fs);
	mfs_fini(fs);
	mounted = NULL;
}

void fsll_as(uid_t uid)
{
	caller = uid;
	caller_set = true;
}

void fsll_pid(pid_t pid)
{
	caller_pid = pid;
}

static struct fuse_req *req(void)
{
	assert_non_null(mounted);
	struct fuse_req *r = shim_req(mounted, caller_set ? caller : getuid());
	if (caller_pid)
		r->ctx.pid = caller_pid;
	return r;
}

/* The answer as a return value; `out` (if any) gets a read's bytes. */
static int result_of(struct fuse_req *r, char *out, size_t size)
{
	shim_wait(r);
	int v = 0;
	if (r->answer == SHIM_ERR)
		v = -r->err;
	else if (r->answer == SHIM_WRITE) {
		/* a count no write can have: an error sent as a count (the kernel would take it as bytes) */
		if (r->count > INT_MAX)
			fail_msg("a write answered with the count %zu", r->count);
		v = (int)r->count;
	}
	else if (r->answer == SHIM_BUF) {
		assert_true(r->len <= size);
		if (out)
			memcpy(out, r->buf, r->len);
		v = (int)r->len;
	}
	return v;
}

int fsll_result(struct fuse_req *r)
{
	int v = result_of(r, NULL, SIZE_MAX);
	shim_free(r);
	return v;
}

/* Look `path` up name by name from the root; *ino the last node's. */
int fsll_lookup(const char *path, fuse_ino_t *ino, struct fuse_entry_param *e)
{
	char copy[PATH_MAX];
	snprintf(copy, sizeof(copy), "%s", path);
	fuse_ino_t at = FUSE_ROOT_ID;
	struct fuse_entry_param last;
	memset(&last, 0, sizeof(last));
	char *save = NULL;
	for (char *name = strtok_r(copy, "/", &save); name; name = strtok_r(NULL, "/", &save)) {
		struct fuse_req *r = req();
		mfs_lowlevel_ops.lookup(r, at, name);
		int v = result_of(r, NULL, 0);
		if (r->answer == SHIM_ENTRY) {
			last = r->entry;
			at = r->entry.ino;
		}
		shim_free(r);
		if (v < 0)
			return v;
	}
	*ino = at;
	if (e)
		*e = last;
	return 0;
}

/* The parent of `path` looked up, and its last name. */
static int parent_of(const char *path, fuse_ino_t *parent, char name[NAME_MAX + 1])
{
	const char *slash = strrchr(path, '/');
	assert_non_null(slash);
	snprintf(name, NAME_MAX + 1, "%s", slash + 1);
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	return fsll_lookup(dir, parent, NULL);
}

/* A request for the node `path` names (*ino), or NULL with *v the lookup's error. */
static struct fuse_req *req_on(const char *path, fuse_ino_t *ino, int *v)
{
	*v = fsll_lookup(path, ino, NULL);
	return *v < 0 ? NULL : req();
}

int fsll_getattr(const char *path, struct stat *st)
{
	fuse_ino_t ino;
	int v;
	struct fuse_req *r = req_on(path, &ino, &v);
	if (!r)
		return v;
	mfs_lowlevel_ops.getattr(r, ino, NULL);
	if ((v = result_of(r, NULL, 0)) == 0 && r->answer == SHIM_ATTR)
		*st = r->attr;
	shim_free(r);
	return v;
}

int fsll_open(const char *path, struct fuse_file_info *fi)
{
	fuse_ino_t ino;
	int v;
	struct fuse_req *r = req_on(path, &ino, &v);
	if (!r)
		return v;
	mfs_lowlevel_ops.open(r, ino, fi);
	if ((v = result_of(r, NULL, 0)) == 0 && r->answer == SHIM_OPEN)
		*fi = r->fi;
	shim_free(r);
	return v;
}

int fsll_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	fuse_ino_t parent;
	char name[NAME_MAX + 1];
	int v = parent_of(path, &parent, name);
	if (v < 0)
		return v;
	struct fuse_req *r = req();
	mfs_lowlevel_ops.create(r, parent, name, mode, fi);
	v = result_of(r, NULL, 0);
	if (r->answer == SHIM_CREATE)
		*fi = r->fi;
	shim_free(r);
	return v;
}

int fsll_read(struct fuse_file_info *fi, char *buf, size_t size, off_t off)
{
	struct fuse_req *r = req();
	mfs_lowlevel_ops.read(r, 0, size, off, fi);
	int v = result_of(r, buf, size);
	shim_free(r);
	return v;
}

struct fuse_req *fsll_write_start(struct fuse_file_info *fi, const char *buf, size_t size, off_t off)
{
	struct fuse_req *r = req();
	mfs_lowlevel_ops.write(r, 0, buf, size, off, fi);
	return r;
}

int fsll_write(struct fuse_file_info *fi, const char *buf, size_t size, off_t off)
{
	return fsll_result(fsll_write_start(fi, buf, size, off));
}

int fsll_flush(struct fuse_file_info *fi)
{
	struct fuse_req *r = req();
	mfs_lowlevel_ops.flush(r, 0, fi);
	return fsll_result(r);
}

int fsll_release(struct fuse_file_info *fi)
{
	struct fuse_req *r = req();
	mfs_lowlevel_ops.release(r, 0, fi);
	return fsll_result(r);
}

static int setattr(const char *path, struct stat *attr, int to_set, struct fuse_file_info *fi)
{
	fuse_ino_t ino;
	int v;
	struct fuse_req *r = req_on(path, &ino, &v);
	if (!r)
		return v;
	mfs_lowlevel_ops.setattr(r, ino, attr, to_set, fi);
	return fsll_result(r);
}

int fsll_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	struct stat attr;
	memset(&attr, 0, sizeof(attr));
	attr.st_size = size;
	return setattr(path, &attr, FUSE_SET_ATTR_SIZE, fi);
}

int fsll_utimens(const char *path)
{
	struct stat attr;
	memset(&attr, 0, sizeof(attr));
	return setattr(path, &attr, FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MTIME_NOW, NULL);
}

int fsll_chmod(const char *path, mode_t mode)
{
	struct stat attr;
	memset(&attr, 0, sizeof(attr));
	attr.st_mode = mode;
	return setattr(path, &attr, FUSE_SET_ATTR_MODE, NULL);
}

/* mkdir, unlink or rmdir of `path`, in its parent. */
enum name_op { OP_MKDIR, OP_UNLINK, OP_RMDIR };

static int on_name(const char *path, enum name_op op, mode_t mode)
{
	fuse_ino_t parent;
	char name[NAME_MAX + 1];
	int v = parent_of(path, &parent, name);
	if (v < 0)
		return v;
	struct fuse_req *r = req();
	if (op == OP_MKDIR)
		mfs_lowlevel_ops.mkdir(r, parent, name, mode);
	else if (op == OP_UNLINK)
		mfs_lowlevel_ops.unlink(r, parent, name);
	else
		mfs_lowlevel_ops.rmdir(r, parent, name);
	return fsll_result(r);
}

int fsll_mkdir(const char *path, mode_t mode)
{
	return on_name(path, OP_MKDIR, mode);
}

int fsll_unlink(const char *path)
{
	return on_name(path, OP_UNLINK, 0);
}

int fsll_rmdir(const char *path)
{
	return on_name(path, OP_RMDIR, 0);
}

int fsll_rename(const char *from, const char *to, unsigned flags)
{
	fuse_ino_t pa, pb;
	char na[NAME_MAX + 1], nb[NAME_MAX + 1];
	int v = parent_of(from, &pa, na);
	if (v == 0)
		v = parent_of(to, &pb, nb);
	if (v < 0)
		return v;
	struct fuse_req *r = req();
	mfs_lowlevel_ops.rename(r, pa, na, pb, nb, flags);
	return fsll_result(r);
}

int fsll_readdir(const char *path, bool plus, size_t size, struct fuse_req **out)
{
	fuse_ino_t ino;
	int v;
	*out = NULL;
	struct fuse_req *r = req_on(path, &ino, &v);
	if (!r)
		return v;
	struct fuse_file_info fi;
	memset(&fi, 0, sizeof(fi));
	mfs_lowlevel_ops.opendir(r, ino, &fi);
	v = fsll_result(r);
	if (v < 0)
		return v;
	r = req();
	(plus ? mfs_lowlevel_ops.readdirplus : mfs_lowlevel_ops.readdir)(r, ino, size, 0, &fi);
	v = result_of(r, NULL, SIZE_MAX);
	*out = r;
	struct fuse_req *rel = req();
	mfs_lowlevel_ops.releasedir(rel, ino, &fi);
	assert_int_equal(fsll_result(rel), 0);
	return v;
}
