/*
 * lowlevel.c: the mount on libfuse's low-level API (fuse_lowlevel.h), the
 * architecture of libfuse's example/passthrough_hp: node ids we own
 * (nodes.c), and replies sent from whichever thread finishes the work.
 *
 * Each request finds its node (nodes.c: the kind given at its LOOKUP,
 * tree.c) and calls the node kind's operations (node.h, kinds.c), or, on an
 * open file, the handle's (handles.c), so the rules of mafsbxfs(1) and
 * doc/protocol.md live with each kind. This file serves the names (lookup,
 * attributes, mkdir, rmdir, rename, ...); lowlevel_io.c the open files and
 * the listings. What this layer adds is what only the low-level API can give:
 *
 *  - every LOOKUP of a .ctl transaction file answers a FRESH node id with
 *    entry and attribute timeouts of 0, so each open(2) gets its own inode
 *    and the kernel's per-inode write lock (held for the whole FUSE_WRITE
 *    round trip) serialises only writes on the same open file;
 *  - the write that completes a transaction, and `rmdir NAME`, run on a
 *    transaction thread (txn.c), which sends the reply: a running exec
 *    holds no FUSE worker, and at most -o max_requests run at once (more
 *    wait their turn);
 *  - those, and a `wait` read parked until its command ends, honour FUSE
 *    interrupts (struct pending): a killed caller is answered EINTR at once
 *    and the work goes on without it; a file call waiting for a freeze is
 *    cancelled (pending.c);
 *  - the session (fs->se) through which notify.c tells the kernel what changed.
 *
 * Each handler hands its request's context down (ctx.h): the caller's PID
 * and uid (a writer killed mid-stream must not replace a file; another
 * user's engine-plane calls are bounded, work.c), and the watch of a file
 * call, which the layers below reach through the context, never by calling
 * up.
 */
#include "execs.h"
#include "lowlevel.h"
#include "passthrough.h"
#include "txn.h"
#include "pending.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <fuse_lowlevel.h>

#include "log.h"

/* Transactions that may wait for a thread before a new one is refused (EBUSY). */
#define MAX_QUEUED_TRANSACTIONS 4096u
/* How long the end of a mount waits for transactions still running. */
#define TRANSACTION_GRACE_MS 10000

/* The context of the request at hand (ctx.h), handed down to the operations. */
struct mfs *mfs_ll_begin(fuse_req_t req, struct mfs_ctx *c)
{
	const struct fuse_ctx *cx = fuse_req_ctx(req);
	mfs_ctx_plain(c, fuse_req_userdata(req));
	c->known = cx != NULL;
	c->uid = cx ? cx->uid : 0;
	c->gid = cx ? cx->gid : 0;
	c->pid = cx ? cx->pid : 0;
	c->req = req;
	c->watch_begin = mfs_watch_begin;
	c->watch_end = mfs_watch_end;
	return c->fs;
}

/* The request was answered, which frees it: an operation run after the
 * answer (the release of an open whose opener went away) watches nothing. */
void mfs_ll_answered(struct mfs_ctx *c)
{
	c->req = NULL;
}

void mfs_ll_reply_err(fuse_req_t req, int r)
{
	fuse_reply_err(req, r < 0 ? -r : r);
}

/* A node's entry: no timeouts for a kind the kernel must not cache (a .ctl
 * transaction file, every lookup a new inode; the detached execs' files,
 * which grow and come and go). */
static void entry_for(struct mfs *fs, const struct mfs_node *n, uint64_t id, const struct stat *st,
		      struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = id;
	e->attr = *st;
	e->attr.st_ino = id;
	bool fresh = (mfs_kind_cache(n->type) & MFS_KIND_NO_CACHE) != 0;
	e->attr_timeout = fresh ? 0 : fs->opt.attr_timeout;
	e->entry_timeout = fresh ? 0 : fs->opt.entry_timeout;
}

/* The entry of the node `n` just looked up (whose stat is `st`), its lookup counted. */
int mfs_ll_make_entry(struct mfs *fs, const struct mfs_node *n, const struct stat *st, struct fuse_entry_param *e)
{
	uint64_t id;
	int r = mfs_nodes_ref_node(&fs->nodes, n, &id);
	if (r < 0)
		return r;
	entry_for(fs, n, id, st, e);
	return 0;
}

/* Stat the node and answer its entry (the tail of lookup, mkdir). */
static void reply_entry_of(fuse_req_t req, struct mfs_ctx *c, const struct mfs_node *n)
{
	struct mfs *fs = c->fs;
	struct stat st;
	struct fuse_entry_param e;
	int r = n->ops->getattr(c, n, &st, NULL);
	if (r == 0)
		r = mfs_ll_make_entry(fs, n, &st, &e);
	if (r < 0) {
		mfs_ll_reply_err(req, r);
		return;
	}
	if (fuse_reply_entry(req, &e) == -ENOENT)   /* the caller went away: no lookup happened */
		mfs_nodes_forget(&fs->nodes, e.ino, 1);
}

/* An error of the tree's (a name it cannot hold), not of the node table's. */
bool mfs_ll_tree_error(int r)
{
	return r == -ENOENT || r == -EINVAL;
}

/* The child `name` of `parent`, with its kind's operations (nodes.c). */
int mfs_ll_child(struct mfs *fs, fuse_ino_t parent, const char *name, struct mfs_node *n)
{
	int r = mfs_nodes_child(&fs->nodes, parent, name, n);
	if (r == 0)
		n->ops = mfs_kind_ops(n->type);
	return r;
}

/* A name where a change may make one: one the tree cannot hold is EPERM. */
int mfs_ll_child_for_change(struct mfs *fs, fuse_ino_t parent, const char *name, struct mfs_node *n)
{
	int r = mfs_ll_child(fs, parent, name, n);
	return r == -ENOENT ? -EPERM : r;
}

static void ll_init(void *userdata, struct fuse_conn_info *conn)
{
	mfs_passthrough_init(userdata, conn);
}

static void ll_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct mfs_ctx c;
	struct mfs *fs = mfs_ll_begin(req, &c);
	struct mfs_node n;
	int r = mfs_ll_child(fs, parent, name, &n);
	if (r < 0)
		mfs_ll_reply_err(req, r);
	else
		reply_entry_of(req, &c, &n);
	mfs_node_clear(&n);
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

/* The node `ino` in *n, or false with the request answered. */
bool mfs_ll_node(fuse_req_t req, struct mfs *fs, fuse_ino_t ino, struct mfs_node *n)
{
	int r = mfs_nodes_get(&fs->nodes, ino, n);
	if (r < 0)
		mfs_ll_reply_err(req, r);
	else
		n->ops = mfs_kind_ops(n->type);
	return r == 0;
}

static void reply_attr_of(fuse_req_t req, struct mfs_ctx *c, fuse_ino_t ino, const struct mfs_node *n,
			  struct fuse_file_info *fi)
{
	struct stat st;
	int r = n->ops->getattr(c, n, &st, fi);
	if (r < 0) {
		mfs_ll_reply_err(req, r);
		return;
	}
	st.st_ino = ino;
	fuse_reply_attr(req, &st, (mfs_kind_cache(n->type) & MFS_KIND_NO_CACHE) ? 0 : c->fs->opt.attr_timeout);
}

static void ll_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct mfs_ctx c;
	struct mfs *fs = mfs_ll_begin(req, &c);
	struct mfs_node n;
	if (!mfs_ll_node(req, fs, ino, &n))
		return;
	reply_attr_of(req, &c, ino, &n, fi);
	mfs_node_clear(&n);
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

/* One setattr in the order libfuse's high-level API takes it: mode, owner
 * (never: EPERM), size, times; an open handle answers size and times first. */
static int apply_setattr(struct mfs_ctx *c, const struct mfs_node *n, const struct stat *attr, int to_set,
			 struct fuse_file_info *fi)
{
	int r = 0;
	if (to_set & FUSE_SET_ATTR_MODE)
		r = mfs_node_chmod(c, n, attr->st_mode);
	if (r == 0 && (to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)))
		r = -EPERM;
	if (r == 0 && (to_set & FUSE_SET_ATTR_SIZE) && !mfs_handle_truncate(c, fi, attr->st_size, &r))
		r = mfs_node_truncate(c, n, attr->st_size);
	if (r == 0 && (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_ATIME_NOW |
				 FUSE_SET_ATTR_MTIME_NOW)) && !mfs_handle_is_ctl(fi)) {
		struct timespec tv[2];
		setattr_times(attr, to_set, tv);
		r = mfs_node_utimens(c, n, tv, fi);
	}
	return r;
}

static void ll_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi)
{
	struct mfs_ctx c;
	struct mfs *fs = mfs_ll_begin(req, &c);
	struct mfs_node n;
	if (!mfs_ll_node(req, fs, ino, &n))
		return;
	int r = apply_setattr(&c, &n, attr, to_set, fi);
	if (r < 0)
		mfs_ll_reply_err(req, r);
	else
		reply_attr_of(req, &c, ino, &n, fi);
	mfs_node_clear(&n);
}

static void ll_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct mfs_ctx c;
	struct mfs *fs = mfs_ll_begin(req, &c);
	struct mfs_node n;
	if (!mfs_ll_node(req, fs, ino, &n))
		return;
	char buf[PATH_MAX];
	int r = mfs_node_readlink(&c, &n, buf, sizeof(buf));
	mfs_node_clear(&n);
	if (r < 0)
		mfs_ll_reply_err(req, r);
	else
		fuse_reply_readlink(req, buf);
}

static void ll_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct mfs_ctx c;
	struct mfs *fs = mfs_ll_begin(req, &c);
	struct mfs_node n;
	int r = mfs_ll_child_for_change(fs, parent, name, &n);
	if (r == 0 && (r = mfs_node_mkdir(&c, &n, mode)) == 0)
		reply_entry_of(req, &c, &n);
	else
		mfs_ll_reply_err(req, r);
	mfs_node_clear(&n);
}

static void ll_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct mfs_ctx c;
	struct mfs *fs = mfs_ll_begin(req, &c);
	struct mfs_node n;
	int r = mfs_ll_child_for_change(fs, parent, name, &n);
	if (r == 0 && (r = mfs_node_unlink(&c, &n)) == 0)
		mfs_nodes_detach(&fs->nodes, n.path);
	mfs_ll_reply_err(req, r);
	mfs_node_clear(&n);
}

/* rmdir NAME disposes a sandbox: a transaction, run on a transaction
 * thread. A caller being killed is answered EINTR; the disposal runs on. */
struct rmdir_job {
	struct pending p;            /* must stay first */
	struct mfs *fs;
	struct mfs_node n;
	int result;
};

static void rmdir_answer(struct pending *p)
{
	mfs_ll_reply_err(p->req, ((struct rmdir_job *)p)->result);
}

static void rmdir_run(void *arg, bool cancelled)
{
	struct rmdir_job *j = arg;
	struct mfs_ctx c;   /* no caller on a transaction thread */
	mfs_ctx_plain(&c, j->fs);
	int r = cancelled ? -ESHUTDOWN : mfs_node_rmdir(&c, &j->n);
	if (r == 0)
		mfs_nodes_detach(&j->fs->nodes, j->n.path);
	j->result = r;
	mfs_node_clear(&j->n);
	mfs_pending_done(&j->p);
}

/* rmdir NAME on a transaction thread: 0 when handed on (it answers), else the errno. */
static int rmdir_later(fuse_req_t req, struct mfs *fs, struct mfs_node *n)
{
	struct rmdir_job *j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->fs = fs;
	j->n = *n;
	n->path = NULL;   /* the job's now */
	mfs_pending_start(&j->p, req, true, rmdir_answer, NULL);
	int r = mfs_txns_submit(fs->txns, rmdir_run, j);
	if (r == 0) {
		mfs_pending_armed(&j->p);
		return 0;
	}
	*n = j->n;
	mfs_pending_abandon(&j->p);
	return r;
}

static void ll_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct mfs_ctx c;
	struct mfs *fs = mfs_ll_begin(req, &c);
	struct mfs_node n;
	int r = mfs_ll_child_for_change(fs, parent, name, &n);
	if (r == 0 && (mfs_kind_cache(n.type) & MFS_KIND_RMDIR_TXN)) {
		if ((r = rmdir_later(req, fs, &n)) < 0)
			mfs_ll_reply_err(req, r);
		mfs_node_clear(&n);
		return;
	}
	if (r == 0 && (r = mfs_node_rmdir(&c, &n)) == 0)
		mfs_nodes_detach(&fs->nodes, n.path);
	mfs_ll_reply_err(req, r);
	mfs_node_clear(&n);
}

/* symlink and link: never; a name the tree cannot hold keeps its own errno. */
static int refuse_link(struct mfs *fs, fuse_ino_t parent, const char *name)
{
	struct mfs_node n;
	int r = mfs_ll_child(fs, parent, name, &n);
	mfs_node_clear(&n);
	return r < 0 && r != -ENOENT ? r : -EPERM;
}

static void ll_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	(void)link;
	struct mfs_ctx c;
	mfs_ll_reply_err(req, refuse_link(mfs_ll_begin(req, &c), parent, name));
}

static void ll_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	struct mfs_ctx c;
	struct mfs *fs = mfs_ll_begin(req, &c);
	struct mfs_node a, b;
	memset(&b, 0, sizeof(b));
	/* A flag renameat2(2) does not know is refused wherever the names are;
	 * the known ones get the answers a plain rename gets outside work/, and
	 * the plane's (src/plane/plane.c) inside it. */
	unsigned unknown = flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT);
	int ra = mfs_ll_child(fs, parent, name, &a), rb = 0, r = 0;
	if (ra < 0 && !mfs_ll_tree_error(ra))
		r = ra;
	else if ((rb = mfs_ll_child(fs, newparent, newname, &b)) < 0 && !mfs_ll_tree_error(rb))
		r = rb;
	else if (unknown) {
		log_debug("rename %s %s: unknown renameat2 flags 0x%x", name, newname, unknown);
		r = -EINVAL;
	} else if (ra < 0 || rb < 0) {
		r = ra < 0 ? ra : rb;
		r = r == -ENOENT ? -EPERM : r;
	}
	if (r == 0 && (r = mfs_node_rename(&c, &a, &b, flags)) == 0) {
		if (flags & RENAME_EXCHANGE) {
			/* Each node keeps the file it named (the kernel swaps its
			 * dentries alike); what it cached of either is dropped
			 * before the caller returns, so no read serves the other's. */
			mfs_nodes_exchange(&fs->nodes, a.path, b.path);
			mfs_invalidate_path(fs, a.path);
			mfs_invalidate_path(fs, b.path);
		} else {
			mfs_nodes_rename(&fs->nodes, a.path, b.path);
		}
	}
	mfs_ll_reply_err(req, r);
	mfs_node_clear(&a);
	mfs_node_clear(&b);
}

static void ll_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct mfs_ctx c;
	struct mfs *fs = mfs_ll_begin(req, &c);
	struct mfs_node n;
	int r = mfs_nodes_get(&fs->nodes, ino, &n);
	mfs_node_clear(&n);
	mfs_ll_reply_err(req, r < 0 ? r : refuse_link(fs, newparent, newname));
}

static void ll_statfs(fuse_req_t req, fuse_ino_t ino)
{
	(void)ino;
	struct statvfs sv;
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = 4096;
	sv.f_frsize = 4096;
	sv.f_namemax = 255;
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
	.open = mfs_ll_open,
	.read = mfs_ll_read,
	.write = mfs_ll_write,
	.flush = mfs_ll_flush,
	.release = mfs_ll_release,
	.fsync = mfs_ll_fsync,
	.opendir = mfs_ll_opendir,
	.readdir = mfs_ll_readdir,
	.readdirplus = mfs_ll_readdirplus,
	.releasedir = mfs_ll_releasedir,
	.statfs = ll_statfs,
	.create = mfs_ll_create,
};

int mfs_lowlevel_start(struct mfs *fs)
{
	int r = mfs_nodes_init(&fs->nodes);
	if (r < 0)
		return r;
	/* the one request limit: -o max_requests as mfs_init() read it */
	fs->txns = calloc(1, sizeof(*fs->txns));
	r = fs->txns ? mfs_txns_init(fs->txns, (unsigned)fs->requests_max, MAX_QUEUED_TRANSACTIONS) : -ENOMEM;
	if (r < 0) {
		free(fs->txns);
		fs->txns = NULL;
		mfs_nodes_fini(&fs->nodes);
	}
	return r;
}

bool mfs_lowlevel_stop(struct mfs *fs)
{
	/* Detached execs first: their `wait` readers are answered through the session. */
	bool execs = mfs_execs_fini(fs);
	return (!fs->txns || mfs_txns_fini(fs->txns, TRANSACTION_GRACE_MS)) && execs;
}

void mfs_lowlevel_free(struct mfs *fs)
{
	free(fs->txns);   /* its threads were joined (mfs_lowlevel_stop) */
	fs->txns = NULL;
	mfs_nodes_fini(&fs->nodes);
}
