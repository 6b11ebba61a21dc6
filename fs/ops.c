/*
 * ops.c: the fuse_operations table. Each operation classifies the path
 * (tree.c) and hands off to the module owning that subtree; per-open state
 * is a handle in fi->fh whose first member says its type (a blob snapshot
 * of a read-only file, a .ctl channel, or a work/ spool), as lxcfs does.
 *
 * Errors follow doc/protocol.md "Errors": writes to read-only virtual files are
 * EACCES; unlink/rename/symlink/link/chmod are EPERM; rmdir NAME disposes.
 */
#include "mfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "log.h"
#include "sandbox.h"

static void blob_free(struct mfs_blob *b)
{
	mfs_text_put(b->text);
	free(b);
}

static void blob_discard(struct mfs_handle *h)
{
	blob_free((struct mfs_blob *)h);
}

static void base_stat(struct stat *st, mode_t mode)
{
	struct mfs *fs = mfs_get();
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
	base_stat(st, mode & ~fs->opt.umask);
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

static void *mfs_op_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	(void)conn;
	/* Paths are how every node is found; inode numbers are libfuse's. */
	cfg->nullpath_ok = 0;
	cfg->use_ino = 0;
	/* An open file keeps its own descriptor (local) or spool (engine): an
	 * unlink while it is open needs no .fuse_hidden rename in the guest. */
	cfg->hard_remove = 1;
	return mfs_get();
}

static int mfs_op_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	struct mfs *fs = mfs_get();
	struct mfs_node n;
	int r = mfs_classify(path, &n);
	if (r < 0)
		return r;
	struct mfs_handle *h = mfs_handle_of(fi);
	switch (n.type) {
	case MFS_N_ROOT:
	case MFS_N_CTL_DIR:
		base_stat(st, S_IFDIR | 0755);
		return 0;
	case MFS_N_CTL_FILE:
		base_stat(st, S_IFREG | 0600);
		return 0;
	case MFS_N_CTL_DECLARATIONS:
	case MFS_N_CTL_ENGINE:
		base_stat(st, S_IFREG | 0444);
		if (h && h->type == MFS_H_BLOB)
			st->st_size = (off_t)((struct mfs_blob *)h)->len;
		return 0;
	case MFS_N_BYSCOPE:
	case MFS_N_BYSCOPE_LINK:
		base_stat(st, S_IFDIR | 0555);
		return mfs_byscope_getattr(fs, &n, st);
	case MFS_N_SBX_DIR:
	case MFS_N_SBX_EGRESS:  /* egress: NAME/egress, read-only like status */
	case MFS_N_SBX_STATUS: {
		time_t created = 0;
		if (h && h->type == MFS_H_BLOB) {
			sandbox_file_stat(fs, st, S_IFREG | 0444);
			st->st_size = (off_t)((struct mfs_blob *)h)->len;
			return 0;
		}
		r = sandbox_exists(fs, n.name, &created);
		if (r < 0)
			return r;
		if (n.type == MFS_N_SBX_DIR)
			base_stat(st, S_IFDIR | 0755);   /* the mount's: rmdir disposes, as the root's modes allow */
		else
			sandbox_file_stat(fs, st, S_IFREG | 0444);
		st->st_mtime = st->st_ctime = st->st_atime = created;
		return 0;
	}
	case MFS_N_WORK:
	case MFS_N_ROOTFS:
		return mfs_work_getattr(fs, &n, st, fi);
	case MFS_N_EXECS:
		r = sandbox_exists(fs, n.name, NULL);
		if (r < 0)
			return r;
		sandbox_file_stat(fs, st, S_IFDIR | 0555);
		return 0;
	case MFS_N_EXEC_DIR:
	case MFS_N_EXEC_FILE:
		return mfs_exec_getattr(fs, &n, st);
	}
	return -ENOENT;
}

static int mfs_op_readlink(const char *path, char *buf, size_t size)
{
	struct mfs_node n;
	int r = mfs_classify(path, &n);
	if (r < 0)
		return r;
	/* A guest's link target is never handed to the host kernel, which would
	 * resolve it on the HOST (mafsbxfs(1) READING AND WRITING FILES). */
	if (n.type == MFS_N_WORK || n.type == MFS_N_ROOTFS)
		return -ELOOP;
	if (n.type != MFS_N_BYSCOPE_LINK)
		return -EINVAL;
	return mfs_byscope_readlink(mfs_get(), &n, buf, size);
}

static int mfs_op_mkdir(const char *path, mode_t mode)
{
	struct mfs_node n;
	int r = mfs_classify(path, &n);
	if (r < 0)
		return r == -ENOENT ? -EPERM : r;
	if (n.type == MFS_N_ROOTFS)
		return -EROFS;
	if (n.type != MFS_N_WORK)
		return -EPERM;
	return mfs_work_mkdir(mfs_get(), &n, mode);
}

static int mfs_op_eperm_path(const char *path)
{
	struct mfs_node n;
	int r = mfs_classify(path, &n);
	if (r < 0 && r != -ENOENT)
		return r;
	return -EPERM;
}

/* A path a sandbox-file mutation may name: 0 under work/, EROFS under root/,
 * EPERM for the fixed tree (or a path that cannot exist), else the text error. */
static int work_node(const char *path, struct mfs_node *n)
{
	int r = mfs_classify(path, n);
	if (r < 0)
		return r == -ENOENT ? -EPERM : r;
	if (n->type == MFS_N_ROOTFS)
		return -EROFS;
	return n->type == MFS_N_WORK ? 0 : -EPERM;
}

static int mfs_op_unlink(const char *path)
{
	struct mfs_node n;
	int r = work_node(path, &n);
	return r < 0 ? r : mfs_work_remove(mfs_get(), &n, false);
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
static int rmdir_sandbox(struct mfs *fs, const char *name)
{
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

static int mfs_op_rmdir(const char *path)
{
	struct mfs *fs = mfs_get();
	struct mfs_node n;
	int r = mfs_classify(path, &n);
	if (r < 0 && r != -ENOENT)
		return r;
	if (r == 0 && n.type == MFS_N_ROOTFS)
		return -EROFS;
	if (r == 0 && n.type == MFS_N_WORK)
		return *n.rel ? mfs_work_remove(fs, &n, true) : -EBUSY;
	if (r == 0 && n.type == MFS_N_EXEC_DIR) {
		struct mafsbx_error e;
		mafsbx_error_clear(&e);
		r = mfs_exec_remove(fs, n.name, n.exec_id, &e);
		if (r < 0)
			log_warn("rmdir %s/execs/%s: %s", n.name, n.exec_id, e.message);
		return r < 0 ? mafsbx_error_errno(&e, r) : 0;
	}
	if (r < 0 || n.type != MFS_N_SBX_DIR)
		return -EPERM;
	return rmdir_sandbox(fs, n.name);
}

static int mfs_op_symlink(const char *target, const char *path)
{
	(void)target;
	return mfs_op_eperm_path(path);
}

static int mfs_op_rename(const char *from, const char *to, unsigned int flags)
{
	/* A flag renameat2(2) does not know is refused wherever the names are;
	 * the known ones get the answers a plain rename gets outside work/, and
	 * the plane's (src/plane/plane.c) inside it. */
	unsigned unknown = flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT);
	if (unknown) {
		log_debug("rename %s %s: unknown renameat2 flags 0x%x", from, to, unknown);
		return -EINVAL;
	}
	struct mfs_node a, b;
	int r = mfs_classify(from, &a);
	if (r < 0)
		return r == -ENOENT ? -EPERM : r;
	if ((r = mfs_classify(to, &b)) < 0)
		return r == -ENOENT ? -EPERM : r;
	if (a.type == MFS_N_ROOTFS || b.type == MFS_N_ROOTFS)
		return -EROFS;
	if (a.type != MFS_N_WORK || b.type != MFS_N_WORK)
		return -EPERM;
	return mfs_work_rename(mfs_get(), &a, &b, flags);
}

static int mfs_op_link(const char *from, const char *to)
{
	(void)from;
	return mfs_op_eperm_path(to);
}

static int mfs_op_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	(void)fi;
	struct mfs_node n;
	int r = work_node(path, &n);
	return r < 0 ? r : mfs_work_chmod(mfs_get(), &n, mode);
}

static int mfs_op_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
	(void)uid;
	(void)gid;
	(void)fi;
	return mfs_op_eperm_path(path);
}

static bool is_ro_virtual(enum mfs_node_type t)
{
	return t == MFS_N_CTL_DECLARATIONS || t == MFS_N_CTL_ENGINE || t == MFS_N_SBX_STATUS ||
	       t == MFS_N_SBX_EGRESS || t == MFS_N_EXEC_FILE;
}

/*
 * The node a truncate or utimens by path names: 0 under work/, 1 for a .ctl
 * file (the caller's answer), else the errno: EROFS under root/, EACCES for
 * a read-only virtual file, EPERM for the rest of the fixed tree.
 */
static int attr_node(const char *path, struct mfs_node *n)
{
	int r = mfs_classify(path, n);
	if (r < 0)
		return r;
	if (n->type == MFS_N_ROOTFS)
		return -EROFS;
	if (n->type == MFS_N_WORK)
		return 0;
	if (n->type == MFS_N_CTL_FILE)
		return 1;
	return is_ro_virtual(n->type) ? -EACCES : -EPERM;
}

static int mfs_op_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	struct mfs *fs = mfs_get();
	struct mfs_handle *h = mfs_handle_of(fi);
	if (h && h->type == MFS_H_CTL) {
		if (size != 0)
			return -EINVAL;
		mfs_ctl_truncate((struct mfs_ctl *)h);
		return 0;
	}
	if (h && h->type == MFS_H_WORK)
		return mfs_work_ftruncate(fs, (struct mfs_work *)h, size);
	struct mfs_node n;
	int r = attr_node(path, &n);
	if (r == 1)
		return size == 0 ? 0 : -EINVAL;  /* O_TRUNC of `echo req > ctl` */
	return r < 0 ? r : mfs_work_truncate(fs, &n, size);
}

static int mfs_op_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
	struct mfs_handle *h = mfs_handle_of(fi);
	if (h && h->type == MFS_H_CTL)
		return 0;
	struct mfs_node n;
	int r = attr_node(path, &n);
	if (r == 1)
		return 0;
	return r < 0 ? r : mfs_work_utimens(mfs_get(), &n, tv, fi);
}

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

static int open_blob(struct mfs *fs, const struct mfs_node *n, struct fuse_file_info *fi)
{
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	char key[300];
	if (n->type == MFS_N_CTL_DECLARATIONS || n->type == MFS_N_CTL_ENGINE)
		snprintf(key, sizeof(key), ".ctl/%s", n->type == MFS_N_CTL_ENGINE ? "engine" : "declarations");
	else
		snprintf(key, sizeof(key), "%s/%s", n->name, n->type == MFS_N_SBX_EGRESS ? "egress" : "status");
	struct mfs_blob *b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	/* Each open is a fresh snapshot, shared with the opens it coincides
	 * with (one build) and with held opens of the same bytes. */
	int r = mfs_text_get(fs, key, false, build_blob, (void *)n, &b->text, &e);
	if (r < 0) {
		free(b);
		if (e.err != ENOENT)
			log_warn("open %s: %s", key, e.message);
		return mafsbx_error_errno(&e, r);
	}
	b->h.type = MFS_H_BLOB;
	b->h.discard = blob_discard;
	b->data = mfs_text_data(b->text, &b->len);
	fi->fh = (uint64_t)(uintptr_t)b;
	/* Generated content: the size in getattr is not the reply's. */
	fi->direct_io = 1;
	return 0;
}

static int open_node(const char *path, struct fuse_file_info *fi);

static int mfs_op_open(const char *path, struct fuse_file_info *fi)
{
	int r = open_node(path, fi);
	if (r == 0)
		mfs_handle_register(mfs_get(), fi);
	return r;
}

static int open_node(const char *path, struct fuse_file_info *fi)
{
	struct mfs *fs = mfs_get();
	struct mfs_node n;
	int r = mfs_classify(path, &n);
	if (r < 0)
		return r;
	int acc = fi->flags & O_ACCMODE;
	switch (n.type) {
	case MFS_N_CTL_FILE: {
		struct mfs_ctl *c = mfs_ctl_open(n.ctl_kind);
		if (!c)
			return -ENOMEM;
		fi->fh = (uint64_t)(uintptr_t)c;
		fi->direct_io = 1;
		fi->nonseekable = 1;
		return 0;
	}
	case MFS_N_CTL_DECLARATIONS:
	case MFS_N_CTL_ENGINE:
	case MFS_N_SBX_STATUS:
	case MFS_N_SBX_EGRESS:  /* egress */
		if (acc != O_RDONLY || (fi->flags & O_TRUNC))
			return -EACCES;
		return open_blob(fs, &n, fi);
	case MFS_N_WORK:
	case MFS_N_ROOTFS:
		return mfs_work_open(fs, &n, fi);
	case MFS_N_EXEC_FILE:
		return mfs_exec_open(fs, &n, fi);
	case MFS_N_BYSCOPE_LINK:
		return -ELOOP;
	default:
		return -EISDIR;
	}
}

static int mfs_op_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	struct mfs_node n;
	int r = mfs_classify(path, &n);
	if (r < 0)
		return r == -ENOENT ? -EPERM : r;
	if (n.type == MFS_N_WORK) {
		r = mfs_work_create(mfs_get(), &n, mode, fi);
		if (r == 0)
			mfs_handle_register(mfs_get(), fi);
		return r;
	}
	if (n.type == MFS_N_CTL_FILE)
		return mfs_op_open(path, fi);
	if (n.type == MFS_N_ROOTFS)
		return -EROFS;
	if (is_ro_virtual(n.type))
		return -EACCES;
	return -EPERM;
}

/* The answer of a read or write on a handle that cannot take it. */
static int io_refused(const struct mfs_handle *h)
{
	if (h && h->type == MFS_H_DIR)
		return -EISDIR;
	return h && (h->type == MFS_H_BLOB || h->type == MFS_H_EXEC) ? -EACCES : -EBADF;
}

static int blob_read(const struct mfs_blob *b, char *buf, size_t size, off_t off)
{
	if (off < 0)
		return -EINVAL;
	if ((size_t)off >= b->len)
		return 0;
	size_t n = b->len - (size_t)off;
	if (n > size)
		n = size;
	memcpy(buf, b->data + off, n);
	return (int)n;
}

static int mfs_op_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)path;
	struct mfs_handle *h = mfs_handle_of(fi);
	if (h && h->type == MFS_H_CTL)
		return mfs_ctl_read((struct mfs_ctl *)h, buf, size);
	if (h && h->type == MFS_H_WORK) {
		struct mfs *fs = mfs_get();
		if (fs)   /* counted for .ctl/engine: a passed-through open's reads never come here */
			atomic_fetch_add(&fs->file_reads, 1);
		return mfs_work_read((struct mfs_work *)h, buf, size, off);
	}
	if (h && h->type == MFS_H_BLOB)
		return blob_read((const struct mfs_blob *)h, buf, size, off);
	if (h && h->type == MFS_H_EXEC)
		return mfs_exec_read((struct mfs_exec_handle *)h, buf, size, off);
	return io_refused(h);
}

static int mfs_op_write(const char *path, const char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)path;
	struct mfs_handle *h = mfs_handle_of(fi);
	if (h && h->type == MFS_H_CTL)
		return mfs_ctl_write(mfs_get(), (struct mfs_ctl *)h, buf, size);
	if (h && h->type == MFS_H_WORK)
		return mfs_work_write(mfs_get(), (struct mfs_work *)h, buf, size, off);
	return io_refused(h);
}

static int mfs_op_flush(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	struct mfs_handle *h = mfs_handle_of(fi);
	if (!h)
		return 0;
	if (h->type == MFS_H_CTL)
		return mfs_ctl_flush((struct mfs_ctl *)h);
	if (h->type == MFS_H_WORK)
		return mfs_work_flush(mfs_get(), (struct mfs_work *)h);
	return 0;
}

static int mfs_op_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	(void)datasync;
	return mfs_op_flush(path, fi);
}

static int mfs_op_release(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	struct mfs_handle *h = mfs_handle_of(fi);
	if (!h)
		return 0;
	mfs_handle_unregister(mfs_get(), h);
	switch (h->type) {
	case MFS_H_CTL:
		mfs_ctl_release((struct mfs_ctl *)h);
		break;
	case MFS_H_WORK:
		mfs_work_release(mfs_get(), (struct mfs_work *)h);
		break;
	case MFS_H_BLOB:
		blob_free((struct mfs_blob *)h);
		break;
	case MFS_H_EXEC:
		mfs_exec_release((struct mfs_exec_handle *)h);
		break;
	case MFS_H_DIR:
	case MFS_H_LIST:
		break;   /* releasedir's */
	}
	fi->fh = 0;
	return 0;
}

static int mfs_op_opendir(const char *path, struct fuse_file_info *fi)
{
	struct mfs *fs = mfs_get();
	struct mfs_node n;
	fi->fh = 0;
	int r = mfs_classify(path, &n);
	if (r < 0)
		return r;
	if (n.type == MFS_N_ROOT || n.type == MFS_N_BYSCOPE) {
		/* A listing's handle keeps the list it started with. */
		r = mfs_listdir_open(fs, fi);
		if (r == 0)
			mfs_handle_register(fs, fi);
		return r;
	}
	if (n.type != MFS_N_WORK && n.type != MFS_N_ROOTFS)
		return 0;   /* the other virtual directories are listed afresh by readdir */
	r = mfs_work_opendir(fs, &n, fi);
	if (r == 0)
		mfs_handle_register(fs, fi);
	return r;
}

static int mfs_op_releasedir(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	struct mfs_handle *h = mfs_handle_of(fi);
	if (h && h->type == MFS_H_DIR) {
		mfs_handle_unregister(mfs_get(), h);
		mfs_work_releasedir((struct mfs_dir *)h);
	} else if (h && h->type == MFS_H_LIST) {
		mfs_handle_unregister(mfs_get(), h);
		mfs_listdir_release((struct mfs_listdir *)h);
	}
	fi->fh = 0;
	return 0;
}

struct dir_name {
	const char *name;
	mode_t type;
};

/* The fixed listings, in the order readdir gives them. */
static const struct dir_name ctl_names[] = {
	{ ".", S_IFDIR }, { "..", S_IFDIR }, { "acquire", S_IFREG }, { "dispose", S_IFREG },
	{ "exec", S_IFREG }, { "declarations", S_IFREG }, { "engine", S_IFREG }, { NULL, 0 },
};
static const struct dir_name exec_names[] = {
	{ ".", S_IFDIR }, { "..", S_IFDIR }, { "stdout", S_IFREG }, { "stderr", S_IFREG },
	{ "status", S_IFREG }, { "wait", S_IFREG }, { NULL, 0 },
};
static const struct dir_name sandbox_names[] = {
	{ ".", S_IFDIR }, { "..", S_IFDIR }, { "status", S_IFREG }, { "egress", S_IFREG },
	{ "work", S_IFDIR }, { "root", S_IFDIR }, { "execs", S_IFDIR }, { NULL, 0 },
};

static int fill_names(void *buf, fuse_fill_dir_t filler, const struct dir_name *d)
{
	for (; d->name; d++)
		mfs_dir_entry(buf, filler, d->name, d->type);
	return 0;
}

static int mfs_op_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off,
			  struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	(void)flags;
	struct mfs *fs = mfs_get();
	struct mfs_node n;
	int r = mfs_classify(path, &n);
	if (r < 0)
		return r;
	switch (n.type) {
	case MFS_N_ROOT:
		return mfs_root_readdir(fs, fi, off, buf, filler);
	case MFS_N_CTL_DIR:
		return fill_names(buf, filler, ctl_names);
	case MFS_N_BYSCOPE:
		return mfs_byscope_readdir(fs, &n, fi, off, buf, filler);
	case MFS_N_SBX_DIR:
		r = sandbox_exists(fs, n.name, NULL);
		if (r < 0)
			return r;
		return fill_names(buf, filler, sandbox_names);
	case MFS_N_EXECS:
		r = sandbox_exists(fs, n.name, NULL);
		return r < 0 ? r : mfs_execs_list(fs, n.name, buf, filler);
	case MFS_N_EXEC_DIR:
		return mfs_exec_exists(fs, n.name, n.exec_id) ? fill_names(buf, filler, exec_names) : -ENOENT;
	case MFS_N_WORK:
	case MFS_N_ROOTFS: {
		struct mfs_handle *h = mfs_handle_of(fi);
		if (!h || h->type != MFS_H_DIR)
			return -EBADF;
		return mfs_work_readdir(fs, (struct mfs_dir *)h, buf, filler, off);
	}
	default:
		return -ENOTDIR;
	}
}

static int mfs_op_statfs(const char *path, struct statvfs *sv)
{
	(void)path;
	memset(sv, 0, sizeof(*sv));
	sv->f_bsize = 4096;
	sv->f_frsize = 4096;
	sv->f_namemax = 255;
	return 0;
}

const struct fuse_operations mfs_operations = {
	.init = mfs_op_init,
	.getattr = mfs_op_getattr,
	.readlink = mfs_op_readlink,
	.mkdir = mfs_op_mkdir,
	.unlink = mfs_op_unlink,
	.rmdir = mfs_op_rmdir,
	.symlink = mfs_op_symlink,
	.rename = mfs_op_rename,
	.link = mfs_op_link,
	.chmod = mfs_op_chmod,
	.chown = mfs_op_chown,
	.truncate = mfs_op_truncate,
	.open = mfs_op_open,
	.read = mfs_op_read,
	.write = mfs_op_write,
	.statfs = mfs_op_statfs,
	.flush = mfs_op_flush,
	.release = mfs_op_release,
	.fsync = mfs_op_fsync,
	.opendir = mfs_op_opendir,
	.readdir = mfs_op_readdir,
	.releasedir = mfs_op_releasedir,
	.create = mfs_op_create,
	.utimens = mfs_op_utimens,
};
