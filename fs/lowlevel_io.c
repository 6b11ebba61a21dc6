/*
 * lowlevel_io.c: the kernel's requests on open files and directories:
 * open, create, read (a `wait` read parked until its command ends), write
 * (the write that completes a transaction runs on a transaction thread),
 * flush, release, and the listings (readdir, readdirplus). The rest of the
 * low-level API, and the context each request hands down, are lowlevel.c's.
 */
#include "execs.h"
#include "lowlevel.h"
#include "mount.h"
#include "passthrough.h"
#include "txn.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pending.h"

/* What readdir reports for an entry it gave no node (as libfuse's high-level API). */
#define UNKNOWN_INO 0xffffffffu

/* open and opendir: the node's operation fills fi; a reply that finds the opener gone releases it. */
static void open_common(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, bool dir)
{
	struct mfs_ctx c;
	struct mfs *fs = mfs_ll_begin(req, &c);
	uid_t uid = fuse_req_ctx(req)->uid;
	struct mfs_node n;
	if (!mfs_ll_node(req, fs, ino, &n))
		return;
	int r = mfs_open_charge(fs, uid);
	if (dir)
		fi->fh = 0;   /* the fixed directories are listed afresh by readdir, with no handle */
	if (r == 0 && (r = dir ? (n.ops->opendir ? n.ops->opendir(&c, &n, fi) : 0)
			       : (n.ops->open ? n.ops->open(&c, &n, fi) : -EISDIR)) < 0)
		mfs_open_uncharge(fs, uid);
	else if (r == 0)
		mfs_open_charged(fs, fi, uid);
	if (r == 0 && !dir && (r = mfs_passthrough_open(fs, req, ino, n.path, fi)) < 0)
		mfs_handle_release(&c, fi);
	if (r < 0) {
		mfs_ll_reply_err(req, r);
	} else if (fuse_reply_open(req, fi) == -ENOENT) {   /* the opener went away: no release will come */
		mfs_ll_answered(&c);
		if (!dir)
			mfs_passthrough_release(fs, req, fi);
		(void)(dir ? mfs_handle_releasedir(&c, fi) : mfs_handle_release(&c, fi));
	}
	mfs_node_clear(&n);
}

void mfs_ll_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	open_common(req, ino, fi, false);
}

void mfs_ll_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	struct mfs_ctx c;
	struct mfs *fs = mfs_ll_begin(req, &c);
	uid_t uid = fuse_req_ctx(req)->uid;
	struct mfs_node n;
	struct stat st;
	struct fuse_entry_param e;
	/* As the path operations had it: the table's errors, the open's charge, the tree's. */
	int r = mfs_ll_child(fs, parent, name, &n), looked = r;
	bool charged = (r == 0 || mfs_ll_tree_error(r)) && (r = mfs_open_charge(fs, uid)) == 0;
	if (charged && looked < 0)
		r = looked == -ENOENT ? -EPERM : looked;
	if (r < 0 || (r = mfs_node_create(&c, &n, mode, fi)) < 0) {
		if (charged)
			mfs_open_uncharge(fs, uid);
		mfs_ll_reply_err(req, r);
		mfs_node_clear(&n);
		return;
	}
	mfs_open_charged(fs, fi, uid);
	if ((r = n.ops->getattr(&c, &n, &st, fi)) < 0 || (r = mfs_ll_make_entry(fs, &n, &st, &e)) < 0) {
		mfs_handle_release(&c, fi);
		mfs_ll_reply_err(req, r);
	} else if (fuse_reply_create(req, &e, fi) == -ENOENT) {
		mfs_ll_answered(&c);
		mfs_handle_release(&c, fi);
		mfs_nodes_forget(&fs->nodes, e.ino, 1);
	}
	mfs_node_clear(&n);
}

/* A read of a detached exec's `wait`, parked until the command ends. An
 * interrupt answers EINTR and takes the read off the exec's list; the
 * command runs on, and a later read of `wait` parks again. */
struct parked_read {
	struct pending p;            /* must stay first */
	struct fuse_file_info fi;
	size_t size;
	off_t off;
};

static void serve_read(fuse_req_t req, struct mfs_ctx *c, size_t size, off_t off, struct fuse_file_info *fi);

static void parked_answer(struct pending *p)
{
	struct parked_read *pr = (struct parked_read *)p;
	struct mfs_ctx c;   /* answered from the exec's thread: its caller's request is not this thread's */
	mfs_ctx_plain(&c, fuse_req_userdata(p->req));
	serve_read(p->req, &c, pr->size, pr->off, &pr->fi);
}

static bool parked_withdraw(struct pending *p)
{
	struct parked_read *pr = (struct parked_read *)p;
	return mfs_exec_unpark((struct mfs_exec_handle *)mfs_handle_of(&pr->fi), p);
}

static void parked_done(void *arg)
{
	mfs_pending_done(arg);
}

/* A `wait` read: parked (true), or not to be parked (false, *r: 1 serve it now, or the error). */
static bool park_read(fuse_req_t req, struct mfs_exec_handle *x, size_t size, off_t off,
		      struct fuse_file_info *fi, int *r)
{
	struct parked_read *pr = calloc(1, sizeof(*pr));
	if (!pr) {
		*r = -ENOMEM;
		return false;
	}
	pr->fi = *fi;
	pr->size = size;
	pr->off = off;
	mfs_pending_start(&pr->p, req, false, parked_answer, parked_withdraw);
	*r = mfs_exec_when_done(x, parked_done, &pr->p);
	if (*r != 0) {
		mfs_pending_abandon(&pr->p);
		return false;
	}
	mfs_pending_armed(&pr->p);   /* answered from the exec's thread when the command ends */
	return true;
}

void mfs_ll_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)ino;
	struct mfs_ctx c;
	mfs_ll_begin(req, &c);
	struct mfs_handle *h = mfs_handle_of(fi);
	if (h && h->type == MFS_H_EXEC) {
		int r;
		if (park_read(req, (struct mfs_exec_handle *)h, size, off, fi, &r))
			return;
		if (r < 0) {
			mfs_ll_reply_err(req, r);
			return;
		}
	}
	serve_read(req, &c, size, off, fi);
}

static void serve_read(fuse_req_t req, struct mfs_ctx *c, size_t size, off_t off, struct fuse_file_info *fi)
{
	char *buf = malloc(size ? size : 1);
	if (!buf) {
		mfs_ll_reply_err(req, -ENOMEM);
		return;
	}
	int r = mfs_handle_read(c, fi, buf, size, off);
	if (r < 0)
		mfs_ll_reply_err(req, r);
	else
		fuse_reply_buf(req, buf, (size_t)r);
	free(buf);
}

/* The write that completed a transaction, on its transaction thread. A
 * writer being killed is answered EINTR; the transaction runs on to its end (an
 * exec's command to its own end or timeout, as a killed `docker exec`
 * client leaves it) and its reply is kept for the open file. */
struct ctl_job {
	struct pending p;            /* must stay first */
	struct mfs *fs;
	struct mfs_ctl *c;
	int taken;
	int result;                  /* the write's answer, once run */
};

static void ctl_answer(struct pending *p)
{
	struct ctl_job *j = (struct ctl_job *)p;
	if (j->result < 0)
		mfs_ll_reply_err(p->req, j->result);
	else
		fuse_reply_write(p->req, (size_t)j->result);
}

static void ctl_run(void *arg, bool cancelled)
{
	struct ctl_job *j = arg;
	j->result = cancelled ? mfs_ctl_write_cancel(j->c, ESHUTDOWN, "the mount is ending")
			      : mfs_ctl_write_run(j->fs, j->c, j->taken);
	mfs_pending_done(&j->p);
}

/* A write to a .ctl file: collected here; a completed request goes to a transaction thread. */
static void ctl_write(fuse_req_t req, struct mfs *fs, struct mfs_ctl *c, const char *buf, size_t size)
{
	bool run_it;
	int r = mfs_ctl_write_take(c, buf, size, &run_it);
	if (!run_it) {
		if (r < 0)
			mfs_ll_reply_err(req, r);
		else
			fuse_reply_write(req, (size_t)r);
		return;
	}
	struct ctl_job *j = calloc(1, sizeof(*j));
	if (j) {
		j->fs = fs;
		j->c = c;
		j->taken = r;
		mfs_pending_start(&j->p, req, true, ctl_answer, NULL);
		if ((r = mfs_txns_submit(fs->txns, ctl_run, j)) == 0) {
			mfs_pending_armed(&j->p);
			return;
		}
		mfs_pending_abandon(&j->p);
	} else {
		r = -ENOMEM;
	}
	mfs_ll_reply_err(req, mfs_ctl_write_cancel(c, -r, r == -EBUSY ? "too many transactions are waiting already"
								 : "cannot start the transaction"));
}

void mfs_ll_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	(void)ino;
	struct mfs_ctx c;
	struct mfs *fs = mfs_ll_begin(req, &c);
	struct mfs_handle *h = mfs_handle_of(fi);
	if (h && h->type == MFS_H_CTL) {
		ctl_write(req, fs, (struct mfs_ctl *)h, buf, size);
		return;
	}
	int r = mfs_handle_write(&c, fi, buf, size, off);
	if (r < 0)
		mfs_ll_reply_err(req, r);
	else
		fuse_reply_write(req, (size_t)r);
}

void mfs_ll_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	struct mfs_ctx c;
	mfs_ll_begin(req, &c);
	mfs_ll_reply_err(req, mfs_handle_flush(&c, fi));
}

void mfs_ll_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)ino;
	(void)datasync;
	struct mfs_ctx c;
	mfs_ll_begin(req, &c);
	mfs_ll_reply_err(req, mfs_handle_flush(&c, fi));
}

void mfs_ll_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	struct mfs_ctx c;
	struct mfs *fs = mfs_ll_begin(req, &c);
	mfs_passthrough_release(fs, req, fi);
	mfs_ll_reply_err(req, mfs_handle_release(&c, fi));
}

void mfs_ll_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	open_common(req, ino, fi, true);
}

void mfs_ll_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	struct mfs_ctx c;
	mfs_ll_begin(req, &c);
	mfs_ll_reply_err(req, mfs_handle_releasedir(&c, fi));
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
	const struct mfs_node *dir;
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

/* readdirplus: the entry of one child the listing gave attributes for (its
 * lookup counted). A name the tree cannot hold gets no node: the kernel
 * looks it up, and is answered as a lookup is. */
static int plus_entry(struct fill *f, const char *name, const struct stat *st, struct fuse_entry_param *e)
{
	struct mfs_node n;
	if (mfs_tree_child(f->dir, name, &n) < 0)
		return 0;
	n.ops = mfs_kind_ops(n.type);
	size_t dl = strcmp(f->dir->path, "/") ? strlen(f->dir->path) : 0, nl = strlen(name);
	if (!(n.path = malloc(dl + nl + 2)))
		return -ENOMEM;
	memcpy(n.path, f->dir->path, dl);
	n.path[dl] = '/';
	memcpy(n.path + dl + 1, name, nl + 1);
	int r = mfs_ll_make_entry(f->fs, &n, st, e);
	mfs_node_clear(&n);
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
	struct mfs_ctx c;
	struct mfs *fs = mfs_ll_begin(req, &c);
	struct mfs_node *dir = malloc(sizeof(*dir));
	int r = dir ? mfs_nodes_get_path(&fs->nodes, ino, dir) : -ENOMEM;
	if (r == 0)
		dir->ops = mfs_kind_ops(dir->type);
	if (r < 0) {
		free(dir);
		mfs_ll_reply_err(req, r);
		return;
	}
	struct fill f = { .req = req, .fs = fs, .dir = dir, .size = size, .start = off, .plus = plus };
	f.buf = malloc(size ? size : 1);
	r = f.buf ? mfs_node_readdir(&c, dir, &f, fill_one, off, fi) : -ENOMEM;
	if (r == 0 && f.err && f.used == 0)
		r = f.err;
	if (r < 0)
		mfs_ll_reply_err(req, r);
	else
		fuse_reply_buf(req, f.buf, f.used);
	free(f.buf);
	mfs_node_clear(dir);
	free(dir);
}

void mfs_ll_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	readdir_common(req, ino, size, off, fi, false);
}

void mfs_ll_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	readdir_common(req, ino, size, off, fi, true);
}

