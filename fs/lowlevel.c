/*
 * lowlevel.c: the mount on libfuse's low-level API (fuse_lowlevel.h), the
 * architecture of libfuse's example/passthrough_hp: node ids we own
 * (nodes.c), and replies sent from whichever thread finishes the work.
 *
 * Each request turns its node id (and name) into the path of the tree and
 * calls the path operations of ops.c (`mfs_operations`, also what the unit
 * tests call), so the rules of mafsbxfs(1) and doc/protocol.md live in one place. What this
 * layer adds is what only the low-level API can give:
 *
 *  - every LOOKUP of a .ctl transaction file answers a FRESH node id with
 *    entry and attribute timeouts of 0, so each open(2) gets its own inode
 *    and the kernel's per-inode write lock (held for the whole FUSE_WRITE
 *    round trip) serialises only writes on the same open file;
 *  - the write that completes a transaction, and `rmdir NAME`, run on a
 *    transaction thread (txn.c), which sends the reply: a running exec
 *    holds no FUSE worker, and at most -o max_requests run at once (more
 *    wait their turn);
 *  - cache invalidation by node (mfs_invalidate_path).
 *
 * The caller's PID and uid for the path operations (a writer killed
 * mid-stream must not replace a file; another user's engine-plane calls are
 * bounded, work.c) are kept per thread for the request at hand.
 */
#include "mfs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <fuse_lowlevel.h>

#include "log.h"

/* What readdir reports for an entry it gave no node (as libfuse's high-level API). */
#define UNKNOWN_INO 0xffffffffu
/* Transactions that may wait for a thread before a new one is refused (EBUSY). */
#define MAX_QUEUED_TRANSACTIONS 4096u
/* How long the end of a mount waits for transactions still running. */
#define TRANSACTION_GRACE_MS 10000

static __thread pid_t caller_pid;
static __thread uid_t caller_uid;
static __thread bool caller_known;

pid_t mfs_caller_pid(void)
{
	return caller_pid;
}

bool mfs_caller_uid(uid_t *uid)
{
	*uid = caller_uid;
	return caller_known;
}

static struct mfs *begin(fuse_req_t req)
{
	const struct fuse_ctx *cx = fuse_req_ctx(req);
	caller_pid = cx ? cx->pid : 0;
	caller_uid = cx ? cx->uid : 0;
	caller_known = cx != NULL;
	return fuse_req_userdata(req);
}

static void reply_err(fuse_req_t req, int r)
{
	fuse_reply_err(req, r < 0 ? -r : r);
}

/* Nodes the kernel must not cache: a .ctl transaction file (every lookup a
 * new inode), and the detached execs' files, which grow and come and go. */
static bool no_cache(enum mfs_node_type t)
{
	return t == MFS_N_CTL_FILE || t == MFS_N_EXECS || t == MFS_N_EXEC_DIR || t == MFS_N_EXEC_FILE;
}

/* A node's timeouts: none for no_cache() nodes. */
static void entry_for(struct mfs *fs, const struct mfs_node *n, uint64_t id, const struct stat *st,
		      struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = id;
	e->attr = *st;
	e->attr.st_ino = id;
	bool fresh = n && no_cache(n->type);
	e->attr_timeout = fresh ? 0 : fs->opt.attr_timeout;
	e->entry_timeout = fresh ? 0 : fs->opt.entry_timeout;
}

/* The entry of `path` (whose stat is `st`), its lookup counted. */
static int make_entry(struct mfs *fs, const char *path, const struct stat *st, struct fuse_entry_param *e)
{
	struct mfs_node n;
	bool known = mfs_classify(path, &n) == 0;
	uint64_t id;
	int r = mfs_nodes_ref(&fs->nodes, path, known && n.type == MFS_N_CTL_FILE, &id);
	if (r < 0)
		return r;
	entry_for(fs, known ? &n : NULL, id, st, e);
	return 0;
}

/* Stat `path` and answer the entry (the tail of lookup, mkdir, create). */
static void reply_entry_of(fuse_req_t req, struct mfs *fs, const char *path)
{
	struct stat st;
	struct fuse_entry_param e;
	int r = mfs_operations.getattr(path, &st, NULL);
	if (r == 0)
		r = make_entry(fs, path, &st, &e);
	if (r < 0) {
		reply_err(req, r);
		return;
	}
	if (fuse_reply_entry(req, &e) == -ENOENT)   /* the caller went away: no lookup happened */
		mfs_nodes_forget(&fs->nodes, e.ino, 1);
}

/* The path of `name` in `parent`, or NULL with the request answered. */
static char *child_or_reply(fuse_req_t req, struct mfs *fs, fuse_ino_t parent, const char *name)
{
	char *path;
	int r = mfs_nodes_child_path(&fs->nodes, parent, name, &path);
	if (r < 0)
		reply_err(req, r);
	return path;
}

static void ll_init(void *userdata, struct fuse_conn_info *conn)
{
	mfs_passthrough_init(userdata, conn);
}

static void ll_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct mfs *fs = begin(req);
	char *path = child_or_reply(req, fs, parent, name);
	if (!path)
		return;
	reply_entry_of(req, fs, path);
	free(path);
}

static void ll_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct mfs *fs = fuse_req_userdata(req);
	mfs_nodes_forget(&fs->nodes, ino, nlookup);
	fuse_reply_none(req);
}

static void ll_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct mfs *fs = fuse_req_userdata(req);
	for (size_t i = 0; i < count; i++)
		mfs_nodes_forget(&fs->nodes, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

/* The path of `ino`, or the request answered with the error. */
static char *path_or_reply(fuse_req_t req, struct mfs *fs, fuse_ino_t ino)
{
	char *path;
	int r = mfs_nodes_path(&fs->nodes, ino, &path);
	if (r < 0)
		reply_err(req, r);
	return path;
}

static void reply_attr_of(fuse_req_t req, struct mfs *fs, fuse_ino_t ino, const char *path,
			  struct fuse_file_info *fi)
{
	struct stat st;
	int r = mfs_operations.getattr(path, &st, fi);
	if (r < 0) {
		reply_err(req, r);
		return;
	}
	st.st_ino = ino;
	struct mfs_node n;
	bool fresh = mfs_classify(path, &n) == 0 && no_cache(n.type);
	fuse_reply_attr(req, &st, fresh ? 0 : fs->opt.attr_timeout);
}

static void ll_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct mfs *fs = begin(req);
	char *path = path_or_reply(req, fs, ino);
	if (!path)
		return;
	reply_attr_of(req, fs, ino, path, fi);
	free(path);
}

/* The times of a setattr, as utimensat(2) takes them. */
static void setattr_times(const struct stat *attr, int to_set, struct timespec tv[2])
{
	tv[0].tv_sec = tv[1].tv_sec = 0;
	tv[0].tv_nsec = tv[1].tv_nsec = UTIME_OMIT;
	if (to_set & FUSE_SET_ATTR_ATIME_NOW)
		tv[0].tv_nsec = UTIME_NOW;
	else if (to_set & FUSE_SET_ATTR_ATIME)
		tv[0] = attr->st_atim;
	if (to_set & FUSE_SET_ATTR_MTIME_NOW)
		tv[1].tv_nsec = UTIME_NOW;
	else if (to_set & FUSE_SET_ATTR_MTIME)
		tv[1] = attr->st_mtim;
}

/* One setattr in the order libfuse's high-level API takes it: mode, owner, size, times. */
static int apply_setattr(const char *path, const struct stat *attr, int to_set, struct fuse_file_info *fi)
{
	int r = 0;
	if (to_set & FUSE_SET_ATTR_MODE)
		r = mfs_operations.chmod(path, attr->st_mode, fi);
	if (r == 0 && (to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)))
		r = mfs_operations.chown(path, (to_set & FUSE_SET_ATTR_UID) ? attr->st_uid : (uid_t)-1,
					 (to_set & FUSE_SET_ATTR_GID) ? attr->st_gid : (gid_t)-1, fi);
	if (r == 0 && (to_set & FUSE_SET_ATTR_SIZE))
		r = mfs_operations.truncate(path, attr->st_size, fi);
	if (r == 0 && (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_ATIME_NOW |
				 FUSE_SET_ATTR_MTIME_NOW))) {
		struct timespec tv[2];
		setattr_times(attr, to_set, tv);
		r = mfs_operations.utimens(path, tv, fi);
	}
	return r;
}

static void ll_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi)
{
	struct mfs *fs = begin(req);
	char *path = path_or_reply(req, fs, ino);
	if (!path)
		return;
	int r = apply_setattr(path, attr, to_set, fi);
	if (r < 0)
		reply_err(req, r);
	else
		reply_attr_of(req, fs, ino, path, fi);
	free(path);
}

static void ll_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct mfs *fs = begin(req);
	char *path = path_or_reply(req, fs, ino);
	if (!path)
		return;
	char buf[PATH_MAX];
	int r = mfs_operations.readlink(path, buf, sizeof(buf));
	free(path);
	if (r < 0)
		reply_err(req, r);
	else
		fuse_reply_readlink(req, buf);
}

static void ll_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct mfs *fs = begin(req);
	char *path;
	int r = mfs_nodes_child_path(&fs->nodes, parent, name, &path);
	if (r == 0 && (r = mfs_operations.mkdir(path, mode)) == 0)
		reply_entry_of(req, fs, path);
	else
		reply_err(req, r);
	free(path);
}

static void ll_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct mfs *fs = begin(req);
	char *path;
	int r = mfs_nodes_child_path(&fs->nodes, parent, name, &path);
	if (r == 0 && (r = mfs_operations.unlink(path)) == 0)
		mfs_nodes_detach(&fs->nodes, path);
	reply_err(req, r);
	free(path);
}

/* rmdir NAME disposes a sandbox: a transaction, run on a transaction thread. */
struct rmdir_job {
	fuse_req_t req;
	struct mfs *fs;
	char *path;
};

static void rmdir_run(void *arg, bool cancelled)
{
	struct rmdir_job *j = arg;
	int r = cancelled ? -ESHUTDOWN : mfs_operations.rmdir(j->path);
	if (r == 0)
		mfs_nodes_detach(&j->fs->nodes, j->path);
	reply_err(j->req, r);
	free(j->path);
	free(j);
}

static void ll_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct mfs *fs = begin(req);
	char *path = child_or_reply(req, fs, parent, name);
	if (!path)
		return;
	int r;
	struct mfs_node n;
	if (mfs_classify(path, &n) == 0 && n.type == MFS_N_SBX_DIR) {
		struct rmdir_job *j = malloc(sizeof(*j));
		if (j) {
			*j = (struct rmdir_job){ .req = req, .fs = fs, .path = path };
			if ((r = mfs_txns_submit(&fs->txns, rmdir_run, j)) == 0)
				return;
			free(j);
		} else {
			r = -ENOMEM;
		}
		free(path);
		reply_err(req, r);
		return;
	}
	if ((r = mfs_operations.rmdir(path)) == 0)
		mfs_nodes_detach(&fs->nodes, path);
	reply_err(req, r);
	free(path);
}

static void ll_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	struct mfs *fs = begin(req);
	char *path;
	int r = mfs_nodes_child_path(&fs->nodes, parent, name, &path);
	if (r == 0)
		r = mfs_operations.symlink(link, path);
	reply_err(req, r < 0 ? r : -EPERM);
	free(path);
}

static void ll_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	struct mfs *fs = begin(req);
	char *from = NULL, *to = NULL;
	int r = mfs_nodes_child_path(&fs->nodes, parent, name, &from);
	if (r == 0)
		r = mfs_nodes_child_path(&fs->nodes, newparent, newname, &to);
	if (r == 0 && (r = mfs_operations.rename(from, to, flags)) == 0) {
		if (flags & RENAME_EXCHANGE) {
			/* Each node keeps the file it named (the kernel swaps its
			 * dentries alike); what it cached of either is dropped
			 * before the caller returns, so no read serves the other's. */
			mfs_nodes_exchange(&fs->nodes, from, to);
			mfs_invalidate_path(fs, from);
			mfs_invalidate_path(fs, to);
		} else {
			mfs_nodes_rename(&fs->nodes, from, to);
		}
	}
	reply_err(req, r);
	free(from);
	free(to);
}

static void ll_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct mfs *fs = begin(req);
	char *from = NULL, *to = NULL;
	int r = mfs_nodes_path(&fs->nodes, ino, &from);
	if (r == 0)
		r = mfs_nodes_child_path(&fs->nodes, newparent, newname, &to);
	if (r == 0)
		r = mfs_operations.link(from, to);
	reply_err(req, r < 0 ? r : -EPERM);
	free(from);
	free(to);
}

/* open and opendir: the path operation fills fi; a reply that finds the opener gone releases it. */
static void open_common(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, bool dir)
{
	struct mfs *fs = begin(req);
	uid_t uid = fuse_req_ctx(req)->uid;
	char *path = path_or_reply(req, fs, ino);
	if (!path)
		return;
	int r = mfs_open_charge(fs, uid);
	if (r == 0 && (r = dir ? mfs_operations.opendir(path, fi) : mfs_operations.open(path, fi)) < 0)
		mfs_open_uncharge(fs, uid);
	else if (r == 0)
		mfs_open_charged(fs, fi, uid);
	if (r == 0 && !dir && (r = mfs_passthrough_open(fs, req, ino, path, fi)) < 0)
		mfs_operations.release(path, fi);
	if (r < 0) {
		reply_err(req, r);
	} else if (fuse_reply_open(req, fi) == -ENOENT) {   /* the opener went away: no release will come */
		if (!dir)
			mfs_passthrough_release(fs, req, fi);
		(void)(dir ? mfs_operations.releasedir(path, fi) : mfs_operations.release(path, fi));
	}
	free(path);
}

static void ll_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	open_common(req, ino, fi, false);
}

static void ll_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	struct mfs *fs = begin(req);
	uid_t uid = fuse_req_ctx(req)->uid;
	char *path = child_or_reply(req, fs, parent, name);
	if (!path)
		return;
	int r;
	struct stat st;
	struct fuse_entry_param e;
	bool charged = (r = mfs_open_charge(fs, uid)) == 0;
	if (r < 0 || (r = mfs_operations.create(path, mode, fi)) < 0) {
		if (charged)
			mfs_open_uncharge(fs, uid);
		reply_err(req, r);
		free(path);
		return;
	}
	mfs_open_charged(fs, fi, uid);
	if ((r = mfs_operations.getattr(path, &st, fi)) < 0 || (r = make_entry(fs, path, &st, &e)) < 0) {
		mfs_operations.release(path, fi);
		reply_err(req, r);
	} else if (fuse_reply_create(req, &e, fi) == -ENOENT) {
		mfs_operations.release(path, fi);
		mfs_nodes_forget(&fs->nodes, e.ino, 1);
	}
	free(path);
}

/* A read of a detached exec's `wait`, parked until the command ends. */
struct parked_read {
	fuse_req_t req;
	struct fuse_file_info fi;
	size_t size;
	off_t off;
};

static void serve_read(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi);

static void parked_done(void *arg)
{
	struct parked_read *p = arg;
	serve_read(p->req, p->size, p->off, &p->fi);
	free(p);
}

static void ll_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)ino;
	begin(req);
	struct mfs_handle *h = mfs_handle_of(fi);
	if (h && h->type == MFS_H_EXEC) {
		struct parked_read *p = malloc(sizeof(*p));
		if (!p) {
			reply_err(req, -ENOMEM);
			return;
		}
		*p = (struct parked_read){ .req = req, .fi = *fi, .size = size, .off = off };
		int r = mfs_exec_when_done((struct mfs_exec_handle *)h, parked_done, p);
		if (r == 0)
			return;   /* answered from the exec's thread when the command ends */
		free(p);
		if (r < 0) {
			reply_err(req, r);
			return;
		}
	}
	serve_read(req, size, off, fi);
}

static void serve_read(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi)
{
	char *buf = malloc(size ? size : 1);
	if (!buf) {
		reply_err(req, -ENOMEM);
		return;
	}
	/* Handles carry their own state: the path operations ignore the path here. */
	int r = mfs_operations.read(NULL, buf, size, off, fi);
	if (r < 0)
		reply_err(req, r);
	else
		fuse_reply_buf(req, buf, (size_t)r);
	free(buf);
}

/* The write that completed a transaction, on its transaction thread. */
struct ctl_job {
	fuse_req_t req;
	struct mfs *fs;
	struct mfs_ctl *c;
	int taken;
};

static void ctl_run(void *arg, bool cancelled)
{
	struct ctl_job *j = arg;
	int r = cancelled ? mfs_ctl_write_cancel(j->c, ESHUTDOWN, "the mount is ending")
			  : mfs_ctl_write_run(j->fs, j->c, j->taken);
	if (r < 0)
		reply_err(j->req, r);
	else
		fuse_reply_write(j->req, (size_t)r);
	free(j);
}

/* A write to a .ctl file: collected here; a completed request goes to a transaction thread. */
static void ctl_write(fuse_req_t req, struct mfs *fs, struct mfs_ctl *c, const char *buf, size_t size)
{
	bool run_it;
	int r = mfs_ctl_write_take(c, buf, size, &run_it);
	if (!run_it) {
		if (r < 0)
			reply_err(req, r);
		else
			fuse_reply_write(req, (size_t)r);
		return;
	}
	struct ctl_job *j = malloc(sizeof(*j));
	if (j) {
		*j = (struct ctl_job){ .req = req, .fs = fs, .c = c, .taken = r };
		if ((r = mfs_txns_submit(&fs->txns, ctl_run, j)) == 0)
			return;
		free(j);
	} else {
		r = -ENOMEM;
	}
	reply_err(req, mfs_ctl_write_cancel(c, -r, r == -EBUSY ? "too many transactions are waiting already"
								 : "cannot start the transaction"));
}

static void ll_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	(void)ino;
	struct mfs *fs = begin(req);
	struct mfs_handle *h = mfs_handle_of(fi);
	if (h && h->type == MFS_H_CTL) {
		ctl_write(req, fs, (struct mfs_ctl *)h, buf, size);
		return;
	}
	int r = mfs_operations.write(NULL, buf, size, off, fi);
	if (r < 0)
		reply_err(req, r);
	else
		fuse_reply_write(req, (size_t)r);
}

static void ll_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	begin(req);
	reply_err(req, mfs_operations.flush(NULL, fi));
}

static void ll_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)ino;
	begin(req);
	reply_err(req, mfs_operations.fsync(NULL, datasync, fi));
}

static void ll_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	mfs_passthrough_release(begin(req), req, fi);
	reply_err(req, mfs_operations.release(NULL, fi));
}

static void ll_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	open_common(req, ino, fi, true);
}

static void ll_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	begin(req);
	reply_err(req, mfs_operations.releasedir(NULL, fi));
}

/*
 * One readdir reply being filled. The path operations list in two ways: the
 * fixed directories give every entry with offset 0 (we number them, and skip
 * those before the asked offset), sandbox directories give each entry's own
 * next offset and start where asked.
 */
struct fill {
	fuse_req_t req;
	struct mfs *fs;
	const char *dir;
	char *buf;
	size_t size, used;
	off_t start, index;
	bool plus;
	int err;
};

static bool is_dot(const char *name)
{
	return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

/* readdirplus: the entry of one child the listing gave attributes for (its lookup counted). */
static int plus_entry(struct fill *f, const char *name, const struct stat *st, struct fuse_entry_param *e)
{
	char *path = NULL;
	int r = 0;
	size_t dl = strlen(f->dir), nl = strlen(name);
	if (!(path = malloc(dl + nl + 2)))
		return -ENOMEM;
	memcpy(path, f->dir, dl);
	path[dl] = '/';
	memcpy(path + dl + 1, name, nl + 1);
	r = make_entry(f->fs, path, st, e);
	free(path);
	return r;
}

static int fill_one(void *ctx, const char *name, const struct stat *st, off_t off, enum fuse_fill_dir_flags flags)
{
	struct fill *f = ctx;
	off_t next = off;
	if (off == 0) {
		if (++f->index <= f->start)
			return 0;
		next = f->index;
	}
	struct stat s;
	memset(&s, 0, sizeof(s));
	if (st)
		s = *st;
	s.st_ino = UNKNOWN_INO;
	size_t room = f->size - f->used;
	if (!f->plus) {
		size_t need = fuse_add_direntry(f->req, NULL, 0, name, NULL, 0);
		if (need > room)
			return 1;
		f->used += fuse_add_direntry(f->req, f->buf + f->used, room, name, &s, next);
		return 0;
	}
	size_t need = fuse_add_direntry_plus(f->req, NULL, 0, name, NULL, 0);
	if (need > room)
		return 1;
	struct fuse_entry_param e;
	memset(&e, 0, sizeof(e));
	e.attr = s;
	if ((flags & FUSE_FILL_DIR_PLUS) && !is_dot(name)) {
		int r = plus_entry(f, name, &s, &e);
		if (r < 0) {
			f->err = r;
			return 1;
		}
	}
	f->used += fuse_add_direntry_plus(f->req, f->buf + f->used, room, name, &e, next);
	return 0;
}

static void readdir_common(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi,
			   bool plus)
{
	struct mfs *fs = begin(req);
	char *path = path_or_reply(req, fs, ino);
	if (!path)
		return;
	struct fill f = { .req = req, .fs = fs, .dir = strcmp(path, "/") ? path : "", .size = size,
			  .start = off, .plus = plus };
	f.buf = malloc(size ? size : 1);
	int r = f.buf ? 0 : -ENOMEM;
	if (r == 0)
		r = mfs_operations.readdir(path, &f, fill_one, off, fi, plus ? FUSE_READDIR_PLUS : 0);
	if (r == 0 && f.err && f.used == 0)
		r = f.err;
	if (r < 0)
		reply_err(req, r);
	else
		fuse_reply_buf(req, f.buf, f.used);
	free(f.buf);
	free(path);
}

static void ll_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	readdir_common(req, ino, size, off, fi, false);
}

static void ll_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	readdir_common(req, ino, size, off, fi, true);
}

static void ll_statfs(fuse_req_t req, fuse_ino_t ino)
{
	(void)ino;
	begin(req);
	struct statvfs sv;
	int r = mfs_operations.statfs("/", &sv);
	if (r < 0)
		reply_err(req, r);
	else
		fuse_reply_statfs(req, &sv);
}

const struct fuse_lowlevel_ops mfs_lowlevel_ops = {
	.init = ll_init,
	.lookup = ll_lookup,
	.forget = ll_forget,
	.forget_multi = ll_forget_multi,
	.getattr = ll_getattr,
	.setattr = ll_setattr,
	.readlink = ll_readlink,
	.mkdir = ll_mkdir,
	.unlink = ll_unlink,
	.rmdir = ll_rmdir,
	.symlink = ll_symlink,
	.rename = ll_rename,
	.link = ll_link,
	.open = ll_open,
	.read = ll_read,
	.write = ll_write,
	.flush = ll_flush,
	.release = ll_release,
	.fsync = ll_fsync,
	.opendir = ll_opendir,
	.readdir = ll_readdir,
	.readdirplus = ll_readdirplus,
	.releasedir = ll_releasedir,
	.statfs = ll_statfs,
	.create = ll_create,
};

int mfs_lowlevel_start(struct mfs *fs)
{
	int r = mfs_nodes_init(&fs->nodes);
	if (r < 0)
		return r;
	r = mfs_txns_init(&fs->txns, fs->opt.max_requests ? fs->opt.max_requests : MFS_DEFAULT_MAX_REQUESTS,
			  MAX_QUEUED_TRANSACTIONS);
	if (r < 0)
		mfs_nodes_fini(&fs->nodes);
	return r;
}

bool mfs_lowlevel_stop(struct mfs *fs)
{
	/* Detached execs first: their `wait` readers are answered through the session. */
	bool execs = mfs_execs_fini(fs);
	return mfs_txns_fini(&fs->txns, TRANSACTION_GRACE_MS) && execs;
}

void mfs_lowlevel_free(struct mfs *fs)
{
	mfs_nodes_fini(&fs->nodes);
}

void mfs_invalidate_path(struct mfs *fs, const char *path)
{
	uint64_t id;
	/* Only the node: an entry invalidation takes the parent's lock, which
	 * the request that asks for this may hold (rmdir NAME). */
	if (fs->se && mfs_nodes_find(&fs->nodes, path, &id))
		fuse_lowlevel_notify_inval_inode(fs->se, id, 0, 0);
}
