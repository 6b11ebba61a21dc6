/*
 * kinds.c: the operations of each kind of node (node.h): the fixed tree
 * (the root, .ctl and its files, by-scope/), a sandbox's directory and its
 * read-only files (status, egress, execs/), and the doors to its files
 * (work/, root/: work.c). A kind's table is what a request on a node of
 * that kind may do; what it leaves out is refused with the errno of the
 * kind's row, and the mode and cache policy it shows are its row's too
 * (rows.h: tree.c's rows, ctl.c's, the verbs').
 *
 * Errors follow doc/protocol.md "Errors": writes to read-only virtual files
 * are EACCES; unlink/rename/symlink/link/chmod are EPERM; rmdir NAME disposes.
 */
#include "execs.h"
#include "mfs.h"
#include "mount.h"
#include "node.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "sandbox.h"

static void base_stat(struct mfs *fs, struct stat *st, mode_t mode)
{
	memset(st, 0, sizeof(*st));
	if (fs)
		st->st_mtime = st->st_ctime = st->st_atime = fs->mount_time;
	st->st_mode = mode;
	st->st_nlink = S_ISDIR(mode) ? 2 : 1;
	st->st_uid = getuid();
	st->st_gid = getgid();
	st->st_blksize = 4096;
}

/*
 * The attributes of a sandbox's read-only virtual file or directory
 * (NAME/status, NAME/egress, NAME/execs/...): the owner and umask the mount
 * gives the sandbox's files (-o uid, gid, umask, as work/ shows them), so
 * that with allow_other (default_permissions) whoever may not read the
 * sandbox's files may not read its status, egress log or command output
 * either.
 */
static void sandbox_file_stat(struct mfs *fs, struct stat *st, mode_t mode)
{
	base_stat(fs, st, mode & ~fs->opt.umask);
	st->st_uid = fs->opt.uid;
	st->st_gid = fs->opt.gid;
}

static int sandbox_exists(struct mfs *fs, const char *name, time_t *created)
{
	const struct mafsbx_sandbox_info *info;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	long long age = (long long)(fs->opt.attr_timeout * 1000.0);
	struct mfs_snapshot *s = mfs_sandbox_find_age(fs, name, age > MFS_FILE_TARGET_MS ? age : MFS_FILE_TARGET_MS,
						      &info, &e);
	if (!s)
		return mafsbx_error_errno(&e, -ENOENT);
	if (created)
		*created = (time_t)info->created;
	mfs_snapshot_put(s);
	return 0;
}

/* The size of a read-only file as read through the open handle `fi`, if any. */
static bool blob_size(const struct fuse_file_info *fi, struct stat *st)
{
	struct mfs_handle *h = mfs_handle_of(fi);
	if (!h || h->type != MFS_H_BLOB)
		return false;
	st->st_size = (off_t)((struct mfs_blob *)h)->len;
	return true;
}

/* ---- the root and by-scope/ ---------------------------------------------- */

static int dir_getattr(struct mfs_ctx *c, const struct mfs_node *n, struct stat *st, struct fuse_file_info *fi)
{
	(void)fi;
	base_stat(c->fs, st, mfs_kind_mode(n->type));
	return 0;
}

/* A listing's handle keeps the list it started with. */
static int listdir_opendir(struct mfs_ctx *c, const struct mfs_node *n, struct fuse_file_info *fi)
{
	struct mfs *fs = c->fs;
	(void)n;
	int r = mfs_listdir_open(fs, fi);
	if (r == 0)
		mfs_handle_register(fs, fi);
	return r;
}

static int root_readdir(struct mfs_ctx *c, const struct mfs_node *n, void *buf, fuse_fill_dir_t filler, off_t off,
			struct fuse_file_info *fi)
{
	struct mfs *fs = c->fs;
	(void)n;
	return mfs_root_readdir(fs, fi, off, buf, filler);
}

static int byscope_getattr(struct mfs_ctx *c, const struct mfs_node *n, struct stat *st, struct fuse_file_info *fi)
{
	struct mfs *fs = c->fs;
	(void)fi;
	base_stat(fs, st, mfs_kind_mode(n->type));
	return mfs_byscope_getattr(fs, n, st);
}

static int byscope_readdir(struct mfs_ctx *c, const struct mfs_node *n, void *buf, fuse_fill_dir_t filler, off_t off,
			   struct fuse_file_info *fi)
{
	struct mfs *fs = c->fs;
	return mfs_byscope_readdir(fs, n, fi, off, buf, filler);
}

static int byscope_readlink(struct mfs_ctx *c, const struct mfs_node *n, char *buf, size_t size)
{
	return mfs_byscope_readlink(c->fs, n, buf, size);
}

static int link_open(struct mfs_ctx *c, const struct mfs_node *n, struct fuse_file_info *fi)
{
	(void)n;
	(void)fi;
	return -ELOOP;
}

static const struct mfs_node_ops root_ops = {
	.getattr = dir_getattr, .opendir = listdir_opendir, .readdir = root_readdir,
};

static const struct mfs_node_ops byscope_ops = {
	.getattr = byscope_getattr, .opendir = listdir_opendir, .readdir = byscope_readdir,
};

static const struct mfs_node_ops byscope_link_ops = {
	.getattr = byscope_getattr, .readlink = byscope_readlink, .open = link_open,
};

/* ---- .ctl/ ------------------------------------------------------------------ */

static int ctl_dir_readdir(struct mfs_ctx *c, const struct mfs_node *n, void *buf, fuse_fill_dir_t filler, off_t off,
			   struct fuse_file_info *fi)
{
	(void)off;
	(void)fi;
	return mfs_tree_list(n->type, buf, filler);
}

static int ctl_getattr(struct mfs_ctx *c, const struct mfs_node *n, struct stat *st, struct fuse_file_info *fi)
{
	(void)fi;
	base_stat(c->fs, st, mfs_kind_mode(n->type));
	return 0;
}

static int ctl_open(struct mfs_ctx *c, const struct mfs_node *n, struct fuse_file_info *fi)
{
	struct mfs *fs = c->fs;
	struct mfs_ctl *ch = mfs_ctl_open(fs, n->ctl_kind);
	if (!ch)
		return -ENOMEM;
	fi->fh = (uint64_t)(uintptr_t)ch;
	fi->direct_io = (mfs_kind_cache(n->type) & MFS_KIND_DIRECT_IO) != 0;
	fi->nonseekable = 1;
	mfs_handle_register(fs, fi);
	return 0;
}

static int ctl_create(struct mfs_ctx *c, const struct mfs_node *n, mode_t mode, struct fuse_file_info *fi)
{
	(void)mode;
	return ctl_open(c, n, fi);
}

/* O_TRUNC of `echo req > ctl`; a handle's truncate is ctl.c's. */
static int ctl_truncate(struct mfs_ctx *c, const struct mfs_node *n, off_t size)
{
	(void)n;
	return size == 0 ? 0 : -EINVAL;
}

static int ctl_utimens(struct mfs_ctx *c, const struct mfs_node *n, const struct timespec tv[2],
		       struct fuse_file_info *fi)
{
	(void)n;
	(void)tv;
	(void)fi;
	return 0;
}

static const struct mfs_node_ops ctl_dir_ops = {
	.getattr = dir_getattr, .readdir = ctl_dir_readdir,
};

static const struct mfs_node_ops ctl_file_ops = {
	.getattr = ctl_getattr, .open = ctl_open, .create = ctl_create,
	.truncate = ctl_truncate, .utimens = ctl_utimens,
};

/* ---- the read-only virtual files ---------------------------------------------- */

/* The builders of the shared texts (texts.c): `arg` is the node. */
static int build_blob(struct mfs *fs, void *arg, char **text, size_t *len, struct mafsbx_error *err)
{
	const struct mfs_node *n = arg;
	if (n->type == MFS_N_CTL_DECLARATIONS)
		return mfs_declarations_text(fs, text, len, err);
	if (n->type == MFS_N_CTL_ENGINE)
		return mfs_engine_text(fs, text, len, err);
	if (n->type == MFS_N_SBX_EGRESS)
		return mfs_egress_text(fs, n->name, text, len, err);
	return mfs_status_text(fs, n->name, text, len, err);
}

static int blob_open(struct mfs_ctx *c, const struct mfs_node *n, struct fuse_file_info *fi)
{
	struct mfs *fs = c->fs;
	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC))
		return -EACCES;
	/* the text's key is its path below the mount, its names the rows' */
	char key[300];
	bool ctl = n->type == MFS_N_CTL_DECLARATIONS || n->type == MFS_N_CTL_ENGINE;
	snprintf(key, sizeof(key), "%s/%s", ctl ? mfs_kind_row(MFS_N_CTL_DIR)->name : n->name,
		 mfs_kind_row(n->type)->name);
	int r = mfs_blob_open(fs, key, build_blob, (void *)n, fi);
	if (r == 0)
		mfs_handle_register(fs, fi);
	return r;
}

static int ctl_blob_getattr(struct mfs_ctx *c, const struct mfs_node *n, struct stat *st, struct fuse_file_info *fi)
{
	base_stat(c->fs, st, mfs_kind_mode(n->type));
	blob_size(fi, st);
	return 0;
}

static int sandbox_blob_getattr(struct mfs_ctx *c, const struct mfs_node *n, struct stat *st,
				struct fuse_file_info *fi)
{
	struct mfs *fs = c->fs;
	time_t created = 0;
	if (blob_size(fi, st)) {
		off_t size = st->st_size;
		sandbox_file_stat(fs, st, mfs_kind_mode(n->type));
		st->st_size = size;
		return 0;
	}
	int r = sandbox_exists(fs, n->name, &created);
	if (r < 0)
		return r;
	sandbox_file_stat(fs, st, mfs_kind_mode(n->type));
	st->st_mtime = st->st_ctime = st->st_atime = created;
	return 0;
}

static const struct mfs_node_ops ctl_blob_ops = {
	.getattr = ctl_blob_getattr, .open = blob_open,
};

static const struct mfs_node_ops sandbox_blob_ops = {
	.getattr = sandbox_blob_getattr, .open = blob_open,
};

/* ---- NAME/ ------------------------------------------------------------------- */

static int sandbox_getattr(struct mfs_ctx *c, const struct mfs_node *n, struct stat *st, struct fuse_file_info *fi)
{
	struct mfs *fs = c->fs;
	(void)fi;
	time_t created = 0;
	int r = sandbox_exists(fs, n->name, &created);
	if (r < 0)
		return r;
	base_stat(fs, st, mfs_kind_mode(n->type));   /* the mount's: rmdir disposes, as the root's modes allow */
	st->st_mtime = st->st_ctime = st->st_atime = created;
	return 0;
}

static int sandbox_readdir(struct mfs_ctx *c, const struct mfs_node *n, void *buf, fuse_fill_dir_t filler, off_t off,
			   struct fuse_file_info *fi)
{
	struct mfs *fs = c->fs;
	(void)off;
	(void)fi;
	int r = sandbox_exists(fs, n->name, NULL);
	return r < 0 ? r : mfs_tree_list(n->type, buf, filler);
}

/* The errno of a dispose reply's failures ({"code", "detail"}): the first
 * unreachable or timeout decides, any other failure is EIO. */
static int dispose_errno(const char *name, const json_t *reply)
{
	const json_t *fails = json_object_get(reply, "failures");
	int r = 0;
	size_t i;
	const json_t *f;
	json_array_foreach(fails, i, f) {
		const char *code = json_string_value(json_object_get(f, "code"));
		const char *detail = json_string_value(json_object_get(f, "detail"));
		log_warn("rmdir %s: %s: %s", name, code ? code : "?", detail ? detail : "");
		if (r == 0 || r == -EIO) {
			if (code && !strcmp(code, mafsbx_disposal_code_name(MAFSBX_DISPOSAL_UNREACHABLE)))
				r = -ENOTCONN;
			else if (code && !strcmp(code, mafsbx_disposal_code_name(MAFSBX_DISPOSAL_TIMEOUT)))
				r = -ETIMEDOUT;
			else
				r = -EIO;
		}
	}
	return r;
}

/* rmdir NAME: the sandbox shown there is disposed by the request runner, as
 * {"name": NAME} written to .ctl/dispose would be (the same limit and
 * bookkeeping); its failures become the errno. */
static int sandbox_rmdir(struct mfs_ctx *c, const struct mfs_node *n)
{
	struct mfs *fs = c->fs;
	const char *name = n->name;
	const struct mafsbx_sandbox_info *info;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	struct mfs_snapshot *s = mfs_sandbox_find(fs, name, &info, &e);
	if (!s)
		return mafsbx_error_errno(&e, -ENOENT);
	mfs_snapshot_put(s);
	if (!fs->run)
		return -EIO;
	json_t *req = json_pack("{s:s}", "name", name);
	if (!req)
		return -ENOMEM;
	json_t *reply = NULL;
	mafsbx_error_clear(&e);
	int r = fs->run(fs, MFS_CTL_DISPOSE, req, &reply, &e);
	json_decref(req);
	if (r < 0) {
		log_warn("rmdir %s: %s", name, e.message);
		r = mafsbx_error_errno(&e, r);
	} else {
		r = dispose_errno(name, reply);
	}
	json_decref(reply);
	return r;
}

static const struct mfs_node_ops sandbox_ops = {
	.getattr = sandbox_getattr, .readdir = sandbox_readdir, .rmdir = sandbox_rmdir,
};

/* ---- NAME/execs/ (execs.c) --------------------------------------------------- */

static int execs_getattr(struct mfs_ctx *c, const struct mfs_node *n, struct stat *st, struct fuse_file_info *fi)
{
	struct mfs *fs = c->fs;
	(void)fi;
	int r = sandbox_exists(fs, n->name, NULL);
	if (r < 0)
		return r;
	sandbox_file_stat(fs, st, mfs_kind_mode(n->type));
	return 0;
}

static int execs_readdir(struct mfs_ctx *c, const struct mfs_node *n, void *buf, fuse_fill_dir_t filler, off_t off,
			 struct fuse_file_info *fi)
{
	struct mfs *fs = c->fs;
	(void)off;
	(void)fi;
	int r = sandbox_exists(fs, n->name, NULL);
	return r < 0 ? r : mfs_execs_list(fs, n->name, buf, filler);
}

static int exec_getattr(struct mfs_ctx *c, const struct mfs_node *n, struct stat *st, struct fuse_file_info *fi)
{
	struct mfs *fs = c->fs;
	(void)fi;
	return mfs_exec_getattr(fs, n, st);
}

static int exec_dir_readdir(struct mfs_ctx *c, const struct mfs_node *n, void *buf, fuse_fill_dir_t filler, off_t off,
			    struct fuse_file_info *fi)
{
	struct mfs *fs = c->fs;
	(void)off;
	(void)fi;
	return mfs_exec_exists(fs, n->name, n->exec_id) ? mfs_tree_list(n->type, buf, filler) : -ENOENT;
}

/* rmdir NAME/execs/ID: cancel a running command, forget a finished one. */
static int exec_dir_rmdir(struct mfs_ctx *c, const struct mfs_node *n)
{
	struct mfs *fs = c->fs;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	int r = mfs_exec_remove(fs, n->name, n->exec_id, &e);
	if (r < 0)
		log_warn("rmdir %s/execs/%s: %s", n->name, n->exec_id, e.message);
	return r < 0 ? mafsbx_error_errno(&e, r) : 0;
}

static int exec_file_open(struct mfs_ctx *c, const struct mfs_node *n, struct fuse_file_info *fi)
{
	struct mfs *fs = c->fs;
	int r = mfs_exec_open(fs, n, fi);
	if (r == 0)
		mfs_handle_register(fs, fi);
	return r;
}

static const struct mfs_node_ops execs_ops = {
	.getattr = execs_getattr, .readdir = execs_readdir,
};

static const struct mfs_node_ops exec_dir_ops = {
	.getattr = exec_getattr, .readdir = exec_dir_readdir, .rmdir = exec_dir_rmdir,
};

static const struct mfs_node_ops exec_file_ops = {
	.getattr = exec_getattr, .open = exec_file_open,
};

/* ---- work/ and root/ (work.c) -------------------------------------------------- */

/* A guest's link target is never handed to the host kernel, which would
 * resolve it on the HOST (mafsbxfs(1) READING AND WRITING FILES). */
static int files_readlink(struct mfs_ctx *c, const struct mfs_node *n, char *buf, size_t size)
{
	(void)n;
	(void)buf;
	(void)size;
	return -ELOOP;
}

static int files_open(struct mfs_ctx *c, const struct mfs_node *n, struct fuse_file_info *fi)
{
	struct mfs *fs = c->fs;
	int r = mfs_work_open(c, n, fi);
	if (r == 0)
		mfs_handle_register(fs, fi);
	return r;
}

static int files_opendir(struct mfs_ctx *c, const struct mfs_node *n, struct fuse_file_info *fi)
{
	struct mfs *fs = c->fs;
	int r = mfs_work_opendir(c, n, fi);
	if (r == 0)
		mfs_handle_register(fs, fi);
	return r;
}

static int files_readdir(struct mfs_ctx *c, const struct mfs_node *n, void *buf, fuse_fill_dir_t filler, off_t off,
			 struct fuse_file_info *fi)
{
	struct mfs *fs = c->fs;
	(void)n;
	struct mfs_handle *h = mfs_handle_of(fi);
	if (!h || h->type != MFS_H_DIR)
		return -EBADF;
	return mfs_work_readdir(fs, (struct mfs_dir *)h, buf, filler, off);
}

static int work_create(struct mfs_ctx *c, const struct mfs_node *n, mode_t mode, struct fuse_file_info *fi)
{
	struct mfs *fs = c->fs;
	int r = mfs_work_create(c, n, mode, fi);
	if (r == 0)
		mfs_handle_register(fs, fi);
	return r;
}

static int work_unlink(struct mfs_ctx *c, const struct mfs_node *n)
{
	return mfs_work_remove(c, n, false);
}

/* work/ itself is where the guest works: never removed. */
static int work_rmdir(struct mfs_ctx *c, const struct mfs_node *n)
{
	return *n->rel ? mfs_work_remove(c, n, true) : -EBUSY;
}

static const struct mfs_node_ops work_ops = {
	.getattr = mfs_work_getattr, .readlink = files_readlink, .open = files_open,
	.opendir = files_opendir, .readdir = files_readdir, .create = work_create,
	.mkdir = mfs_work_mkdir, .unlink = work_unlink, .rmdir = work_rmdir, .rename = mfs_work_rename,
	.chmod = mfs_work_chmod, .truncate = mfs_work_truncate, .utimens = mfs_work_utimens,
};

static const struct mfs_node_ops rootfs_ops = {
	.getattr = mfs_work_getattr, .readlink = files_readlink, .open = files_open,
	.opendir = files_opendir, .readdir = files_readdir,
};

static const struct mfs_node_ops *const kinds[] = {
	[MFS_N_ROOT] = &root_ops,
	[MFS_N_CTL_DIR] = &ctl_dir_ops,
	[MFS_N_CTL_FILE] = &ctl_file_ops,
	[MFS_N_CTL_DECLARATIONS] = &ctl_blob_ops,
	[MFS_N_CTL_ENGINE] = &ctl_blob_ops,
	[MFS_N_BYSCOPE] = &byscope_ops,
	[MFS_N_BYSCOPE_LINK] = &byscope_link_ops,
	[MFS_N_SBX_DIR] = &sandbox_ops,
	[MFS_N_SBX_STATUS] = &sandbox_blob_ops,
	[MFS_N_SBX_EGRESS] = &sandbox_blob_ops,
	[MFS_N_WORK] = &work_ops,
	[MFS_N_ROOTFS] = &rootfs_ops,
	[MFS_N_EXECS] = &execs_ops,
	[MFS_N_EXEC_DIR] = &exec_dir_ops,
	[MFS_N_EXEC_FILE] = &exec_file_ops,
};

const struct mfs_node_ops *mfs_kind_ops(enum mfs_node_type t)
{
	return kinds[t];
}
