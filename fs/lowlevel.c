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
 *  - those, and a `wait` read parked until its command ends, honour FUSE
 *    interrupts (struct pending): a killed caller is answered EINTR at once
 *    and the work goes on without it; a file call waiting for a freeze is
 *    cancelled (mfs_call_watch_begin);
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
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <fuse_lowlevel.h>

#include "cancel.h"
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
/* The request at hand, until it is answered: a path operation run after the
 * answer (the release of an open whose opener went away) clears it first
 * (answered()), since the request is freed by the answer. */
static __thread fuse_req_t caller_req;

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
	caller_req = req;
	return fuse_req_userdata(req);
}

static void answered(void)
{
	caller_req = NULL;
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

/*
 * A request answered later from another thread (a `wait` read parked until
 * its command ends, a .ctl write whose transaction runs on a transaction
 * thread), which honours FUSE interrupts: a caller killed meanwhile waits in
 * state D until its request is answered, so an interrupt answers it with
 * EINTR at once. Exactly one of the interrupt and the work's end answers.
 *
 * libfuse calls the interrupt function with the request's own lock held, at
 * any time until the request is answered, even while another thread answers
 * it; fuse_req_interrupt_func(req, NULL, NULL) waits out a call in progress
 * and stops later ones. Hence:
 *  - while the request is set up (SETUP) neither side answers, each only
 *    records what happened, and the setup answers as it ends: an answer from
 *    inside fuse_req_interrupt_func() would free the request under libfuse,
 *    and an answer would let the kernel release the open file the setup uses;
 *  - the work's end clears the interrupt function before it answers;
 *  - the interrupt answers from inside the function (libfuse keeps the
 *    request for the call), after taking the work's callback back where it
 *    can (`withdraw`), before the answer lets the open file go.
 * Two references: the answer's and the work callback's.
 *
 * A request whose retry would do its work again (a .ctl write, rmdir NAME:
 * `fatal_only`) gives way only to a caller being killed: a caught signal
 * (SIGCHLD, a handler that returns) answered EINTR would make a caller that
 * retries, as Python does, run the request twice. The kernel interrupts a
 * request once, at the first signal: a caller that caught one and is
 * killed later waits for the work as before.
 */
enum pending_state { PENDING_SETUP, PENDING_WAITING, PENDING_ANSWERED };

struct pending {
	fuse_req_t req;
	pid_t pid;                           /* the caller */
	bool fatal_only;
	void (*answer)(struct pending *p);   /* the ordinary answer, once the work is done */
	bool (*withdraw)(struct pending *p); /* NULL, or: true when the work will not call back */
	atomic_int refs;
	pthread_mutex_t mu;                  /* the three below */
	enum pending_state state;
	bool interrupted, finished;          /* what happened during SETUP */
};

static void pending_put(struct pending *p)
{
	if (atomic_fetch_sub(&p->refs, 1) != 1)
		return;
	pthread_mutex_destroy(&p->mu);
	free(p);   /* the first member of what was allocated */
}

/* Whether `pid` (in the daemon's pid namespace) is being killed: a fatal
 * signal leaves SIGKILL pending on every thread of its process. A caller
 * that cannot be seen (no pid, gone already, no /proc) counts as dying. */
static bool caller_dying(pid_t pid)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	__do_close int fd = pid > 0 ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (n <= 0)
		return true;
	buf[n] = '\0';
	static const char *const fields[] = { "\nSigPnd:", "\nShdPnd:" };
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		const char *at = strstr(buf, fields[i]);
		if (at && (strtoull(at + strlen(fields[i]), NULL, 16) & (1ULL << (SIGKILL - 1))))
			return true;
	}
	return false;
}

static void pending_interrupted(fuse_req_t req, void *arg)
{
	struct pending *p = arg;
	if (p->fatal_only && !caller_dying(p->pid))
		return;   /* a caught signal: the request goes on */
	pthread_mutex_lock(&p->mu);
	bool mine = p->state == PENDING_WAITING;
	if (p->state == PENDING_SETUP)
		p->interrupted = true;
	else if (mine)
		p->state = PENDING_ANSWERED;
	pthread_mutex_unlock(&p->mu);
	if (!mine)
		return;
	if (p->withdraw && p->withdraw(p))
		pending_put(p);   /* the work's reference: it will not call back */
	fuse_reply_err(req, EINTR);
	pending_put(p);   /* the answer's */
}

/* Set up `p` (zeroed, the first member of its allocation) for `req`; the
 * interrupt function is registered (an interrupt already there is recorded). */
static void pending_start(struct pending *p, fuse_req_t req, bool fatal_only, void (*answer)(struct pending *p),
			  bool (*withdraw)(struct pending *p))
{
	const struct fuse_ctx *cx = fuse_req_ctx(req);
	p->req = req;
	p->pid = cx ? cx->pid : 0;
	p->fatal_only = fatal_only;
	p->answer = answer;
	p->withdraw = withdraw;
	atomic_init(&p->refs, 2);
	pthread_mutex_init(&p->mu, NULL);
	p->state = PENDING_SETUP;
	fuse_req_interrupt_func(req, pending_interrupted, p);
}

/* The work was not handed on: nothing else has `p`; the caller answers. */
static void pending_abandon(struct pending *p)
{
	fuse_req_interrupt_func(p->req, NULL, NULL);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

/* The end of the setup: the work was handed on, and calls pending_done()
 * when it ends (unless withdrawn). Whatever came meanwhile is answered now. */
static void pending_armed(struct pending *p)
{
	pthread_mutex_lock(&p->mu);
	bool interrupted = p->interrupted, finished = p->finished;
	p->state = interrupted || finished ? PENDING_ANSWERED : PENDING_WAITING;
	pthread_mutex_unlock(&p->mu);
	if (!interrupted && !finished)
		return;
	fuse_req_interrupt_func(p->req, NULL, NULL);
	if (finished) {
		p->answer(p);
	} else {
		if (p->withdraw && p->withdraw(p))
			pending_put(p);   /* the work's */
		fuse_reply_err(p->req, EINTR);
	}
	pending_put(p);   /* the answer's */
}

/* The work ended (any thread): answer, unless an interrupt did. */
static void pending_done(struct pending *p)
{
	pthread_mutex_lock(&p->mu);
	bool mine = p->state == PENDING_WAITING;
	if (p->state == PENDING_SETUP)
		p->finished = true;   /* pending_armed() answers */
	else if (mine)
		p->state = PENDING_ANSWERED;
	pthread_mutex_unlock(&p->mu);
	if (mine) {
		fuse_req_interrupt_func(p->req, NULL, NULL);   /* waits out an interrupt in progress */
		p->answer(p);
		pending_put(p);
	}
	pending_put(p);   /* the work's */
}

/*
 * A file call (work/, root/) of the request at hand, which may wait for a
 * freeze behind an exec (the engine plane, -o frozen_reads; work.c): a
 * caller being killed cancels the wait (src/base/cancel.h: the freezer
 * gives up with EINTR, nothing paused). Only a dying caller, as for the
 * .ctl writes: a stat that failed EINTR on a caught signal would surprise
 * every program that does not retry it. The flag is the thread's; end()
 * clears the interrupt function (waiting out a call in progress) before the
 * request is answered.
 */
static __thread atomic_bool call_cancel;
static __thread unsigned call_watches;
static __thread fuse_req_t call_req;   /* the request watched (NULL: none) */

static void call_interrupted(fuse_req_t req, void *arg)
{
	const struct fuse_ctx *cx = fuse_req_ctx(req);
	if (caller_dying(cx ? cx->pid : 0))
		atomic_store((atomic_bool *)arg, true);
}

void mfs_call_watch_begin(void)
{
	if (call_watches++ > 0 || !(call_req = caller_req))
		return;   /* nested, or no request on this thread */
	atomic_store(&call_cancel, false);
	mafsbx_cancel_watch(&call_cancel);
	fuse_req_interrupt_func(call_req, call_interrupted, &call_cancel);
}

void mfs_call_watch_end(void)
{
	if (!call_watches || --call_watches > 0 || !call_req)
		return;
	fuse_req_interrupt_func(call_req, NULL, NULL);
	mafsbx_cancel_watch(NULL);
	call_req = NULL;
}

/* rmdir NAME disposes a sandbox: a transaction, run on a transaction
 * thread. A caller being killed is answered EINTR; the disposal runs on. */
struct rmdir_job {
	struct pending p;            /* must stay first */
	struct mfs *fs;
	char *path;
	int result;
};

static void rmdir_answer(struct pending *p)
{
	reply_err(p->req, ((struct rmdir_job *)p)->result);
}

static void rmdir_run(void *arg, bool cancelled)
{
	struct rmdir_job *j = arg;
	int r = cancelled ? -ESHUTDOWN : mfs_operations.rmdir(j->path);
	if (r == 0)
		mfs_nodes_detach(&j->fs->nodes, j->path);
	j->result = r;
	free(j->path);
	j->path = NULL;
	pending_done(&j->p);
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
		struct rmdir_job *j = calloc(1, sizeof(*j));
		if (j) {
			j->fs = fs;
			j->path = path;
			pending_start(&j->p, req, true, rmdir_answer, NULL);
			if ((r = mfs_txns_submit(&fs->txns, rmdir_run, j)) == 0) {
				pending_armed(&j->p);
				return;
			}
			pending_abandon(&j->p);
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
		answered();
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
		answered();
		mfs_operations.release(path, fi);
		mfs_nodes_forget(&fs->nodes, e.ino, 1);
	}
	free(path);
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

static void serve_read(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi);

static void parked_answer(struct pending *p)
{
	struct parked_read *pr = (struct parked_read *)p;
	serve_read(p->req, pr->size, pr->off, &pr->fi);
}

static bool parked_withdraw(struct pending *p)
{
	struct parked_read *pr = (struct parked_read *)p;
	return mfs_exec_unpark((struct mfs_exec_handle *)mfs_handle_of(&pr->fi), p);
}

static void parked_done(void *arg)
{
	pending_done(arg);
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
	pending_start(&pr->p, req, false, parked_answer, parked_withdraw);
	*r = mfs_exec_when_done(x, parked_done, &pr->p);
	if (*r != 0) {
		pending_abandon(&pr->p);
		return false;
	}
	pending_armed(&pr->p);   /* answered from the exec's thread when the command ends */
	return true;
}

static void ll_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)ino;
	begin(req);
	struct mfs_handle *h = mfs_handle_of(fi);
	if (h && h->type == MFS_H_EXEC) {
		int r;
		if (park_read(req, (struct mfs_exec_handle *)h, size, off, fi, &r))
			return;
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
		reply_err(p->req, j->result);
	else
		fuse_reply_write(p->req, (size_t)j->result);
}

static void ctl_run(void *arg, bool cancelled)
{
	struct ctl_job *j = arg;
	j->result = cancelled ? mfs_ctl_write_cancel(j->c, ESHUTDOWN, "the mount is ending")
			      : mfs_ctl_write_run(j->fs, j->c, j->taken);
	pending_done(&j->p);
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
	struct ctl_job *j = calloc(1, sizeof(*j));
	if (j) {
		j->fs = fs;
		j->c = c;
		j->taken = r;
		pending_start(&j->p, req, true, ctl_answer, NULL);
		if ((r = mfs_txns_submit(&fs->txns, ctl_run, j)) == 0) {
			pending_armed(&j->p);
			return;
		}
		pending_abandon(&j->p);
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
