/*
 * mfs.h: the internals of the mafsbxfs daemon, shared by the files of fs/.
 *
 * The daemon is a static library of FUSE operations (libmafsbxfs) plus a
 * thin main. Everything a running mount needs lives in one `struct mfs`,
 * handed to an operation in its request's context (ctx.h), so cmocka tests
 * can call the operations without a mount.
 *
 * Threads, what each lock guards and the order they nest in:
 * doc/threads-and-locks.md.
 *
 * Files (doc/architecture.md "Inside fs/" draws their floors), from the kernel down:
 *   main.c       the daemon; lifecycle.c the mount's start and end (mfs_init, mfs_fini)
 *   lowlevel.c   the low-level API's requests on names; lowlevel_io.c on open files and
 *                listings (lowlevel.h); pending.c requests answered later, interrupts (pending.h)
 *   kinds.c      each kind of node's operations (node.h); handles.c each kind of open handle's
 *   status.c     the read-only virtual files (NAME/status, .ctl/declarations, .ctl/engine)
 *   requests.c   the real request runner (acquire / dispose / exec through sandbox.h)
 *   passthrough.c  FUSE passthrough: local-plane reads handed to the kernel (passthrough.h)
 *   execs.c      detached execs (execs.h): the registry; execs_watch.c a running job's watch,
 *                execs_cancel.c rmdir NAME/execs/ID, execs_files.c NAME/execs/ID/, dexec.c one exec (dexec.h)
 *   jobs.c       the jobs directory and the job monitors (jobs.h)
 *   janitor.c    background recovery of freezes left behind, and collection (janitor.h)
 *   work.c       NAME/work/ and NAME/root/ through the plane; target.c a call's plane target
 *   root.c       the sandbox list cache and the root listing; byscope.c by-scope/
 *   extras.c     per-sandbox outputs and files written through the mount (extras.h)
 *   ctl.c        the .ctl transaction handles (request bytes in, one reply out)
 *   notify.c     the one notifier: what changed, told to the kernel by node
 *   nodes.c      the node ids the kernel holds, each with its kind
 *   tree.c       the kind of a node, from its parent's kind and its name (pure): the tree's rows
 *   txn.c        the transaction threads (txn.h); txnlog.c a transaction's log line
 *   texts.c      the read-only files' texts, one per file shared by its handles, under the reply budget
 *   reply.c      reply JSON: error replies, the exec reply with its text views
 *   textconv.c   text into JSON: UTF-8 views with U+FFFD replacement, JSON strings, dumped lines
 *   mount.c      open handles and per-user counts (mount.h), the request limit
 *   opts.c       the command line (fuse_opt), validation, --help text (opts.h)
 *   daemon.c     going into the background: the fork first, one thread, a readiness pipe (daemon.h)
 *   ctx.h        the request's context, handed down from lowlevel.c
 *
 * Each concern's state is its module's own, behind its own header: struct
 * mfs holds only a pointer to it (doc/architecture.md "Inside fs/").
 *
 * Calls go one way, down this list (no file reaches one that reaches it
 * back): the layers below reach the kernel-facing ones only through the
 * request's context (its watch) and the notifier. ctl.c reaches the runner
 * only through fs->run, and mount.c frees open handles only through each
 * handle's discard pointer.
 */
#ifndef MAFSBXFS_MFS_H
#define MAFSBXFS_MFS_H

#define FUSE_USE_VERSION 312

#include <fuse.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

#include "buf.h"
#include "endpoint.h"
#include "error.h"
#include "plane.h"

struct mfs;
struct mfs_ctx;
struct fuse_session;
struct fuse_lowlevel_ops;
struct mafsbx_engine;
struct mafsbx_backend;
struct mafsbx_freezer;
struct mafsbx_sandbox_info;

#include "opts.h"

/* ---- node ids (nodes.c) -------------------------------------------------- */

#define MFS_ROOT_ID 1u

struct mfs_ll_node;
struct mfs_nodes {
	pthread_mutex_t mu;          /* guards everything below */
	uint64_t next_id;
	size_t count, nbuckets;
	struct mfs_ll_node **by_id, **by_path;
};

int mfs_nodes_init(struct mfs_nodes *t);
void mfs_nodes_fini(struct mfs_nodes *t);
/* The path of node `id` (malloc'd), or -ESTALE for a node we do not hold. */
int mfs_nodes_path(struct mfs_nodes *t, uint64_t id, char **out);
/* One more kernel lookup of `path`: its node (with no kind: node.h's
 * mfs_nodes_ref_node keeps one), made when needed; `fresh` makes a new node
 * whatever exists (a .ctl transaction file). */
int mfs_nodes_ref(struct mfs_nodes *t, const char *path, bool fresh, uint64_t *id);
/* The kernel's FORGET: `nlookup` fewer; the last one frees the node. */
void mfs_nodes_forget(struct mfs_nodes *t, uint64_t id, uint64_t nlookup);
/* The node reachable by `path` now, if any. */
bool mfs_nodes_find(struct mfs_nodes *t, const char *path, uint64_t *id);
/* `path` was removed: its node keeps its id, but no longer answers for the path. */
void mfs_nodes_detach(struct mfs_nodes *t, const char *path);
/* `from` became `to`: it and every node below it follow; what `to` named goes. */
void mfs_nodes_rename(struct mfs_nodes *t, const char *from, const char *to);
/* After renameat2(RENAME_EXCHANGE): the nodes at and below `a` take `b`'s name, and back. */
void mfs_nodes_exchange(struct mfs_nodes *t, const char *a, const char *b);

/* ---- the low-level mount (lowlevel.c) ------------------------------------ */

extern const struct fuse_lowlevel_ops mfs_lowlevel_ops;
/* The node table and the transaction threads (none started yet). */
int mfs_lowlevel_start(struct mfs *fs);
/* After the session loop: the transactions end (false: some outlived the grace). */
bool mfs_lowlevel_stop(struct mfs *fs);
void mfs_lowlevel_free(struct mfs *fs);
/* Tell the kernel its cached attributes and data of `path` went stale
 * (notify.c: the one notifier; a no-op without a session). */
void mfs_invalidate_path(struct mfs *fs, const char *path);

/* ---- the mount state ---------------------------------------------------- */

enum mfs_ctl_kind { MFS_CTL_ACQUIRE = 0, MFS_CTL_DISPOSE = 1, MFS_CTL_EXEC = 2 };
/* The name of its .ctl file (tree.c: the tree's rows). */
const char *mfs_ctl_kind_name(enum mfs_ctl_kind k);
/* At loglevel info: one line for a transaction that took `ms` and ended with
 * `r` (0: `reply`, else `e`); `req` NULL when it was not a JSON object (txnlog.c). */
void mfs_txn_log(enum mfs_ctl_kind kind, const json_t *req, const json_t *reply, int r,
		 const struct mafsbx_error *e, long long ms);

/*
 * Runs one parsed .ctl request. On success returns 0 and a reply object
 * (its first member "ok": true). On failure returns the negative errno with
 * `err` filled and, optionally, *extra: members to add to the error reply
 * (an exec that timed out still reports its output and "timed_out": true).
 * Unit tests install a stub.
 */
typedef int (*mfs_run_fn)(struct mfs *fs, enum mfs_ctl_kind kind, const json_t *req, json_t **reply,
			  struct mafsbx_error *err);

/* Per-sandbox state kept by this mount, keyed by container ID (a re-created
 * sandbox of the same name starts clean). */
struct mfs_sbx_extra {
	char id[65];
	char **outputs;              /* declared by an acquire during this mount */
	size_t n_outputs;
	char **written;              /* files and directories made through this mount (relative) */
	size_t n_written;
	struct mfs_sbx_extra *next;
};

/* A refcounted snapshot of the sandbox list (root.c). */
struct mfs_snapshot {
	atomic_int refs;
	long long fetched_ms;
	struct mafsbx_sandbox_info *a;   /* sorted by name */
	size_t n;
	char want[3][64];            /* the scope, thread and agent labels it was asked for ("": any) */
};

/* Scoped lists kept for by-scope/SCOPE/... lookups (root.c). */
#define MFS_SCOPED_SLOTS 4

struct mfs {
	struct mfs_options opt;
	struct mafsbx_endpoint ep;
	struct mafsbx_engine *engine;
	struct mafsbx_freezer *fz;
	struct mafsbx_backend *backend;
	struct mafsbx_planes *planes; /* how each sandbox's files are reached */
	struct mafsbx_cluster *cluster; /* -o cluster=swarm (cluster.c), else NULL */
	struct fuse_session *se;     /* lowlevel.c: cache invalidation; NULL in unit tests */
	struct mfs_nodes nodes;      /* lowlevel.c: the node ids the kernel holds (nodes.c) */
	struct mfs_txns *txns;       /* lowlevel.c: the threads transactions run on (txn.h) */
	mfs_run_fn run;              /* the .ctl request runner */
	char scope_label[64];        /* label_value(opt.scope), "" when unscoped */
	time_t mount_time;           /* the times of the fixed nodes (root, .ctl, by-scope) */

	pthread_mutex_t lock;        /* guards snap, scoped, extras */
	struct mfs_snapshot *snap;
	struct mfs_snapshot *scoped[MFS_SCOPED_SLOTS];
	struct mfs_sbx_extra *extras;

	atomic_size_t reply_bytes;   /* reply.c: exec reply bytes being built now */
	int requests_max;            /* -o max_requests: transaction threads (txn.c), the one request limit */

	struct mfs_janitor *janitor; /* janitor.c's own (janitor.h); NULL when not running */
	struct mfs_execs *execs;     /* the detached execs' own (execs.h) */
	struct mfs_jobs *jobs;       /* jobs.c's own (jobs.h): RUNDIR/jobs; NULL when there is none */

	struct mfs_handles *handles; /* mount.c's own (mount.h): the open handles, the per-user counts */

	struct mfs_passthrough *passthrough; /* passthrough.c's own (passthrough.h); NULL before the mount's init */

};

/* ---- the mount's lifecycle (lifecycle.c) -------------------------------- */

/* Initialise / tear down the fields that need it (mutexes, lists, open handles). */
int mfs_init(struct mfs *fs);
void mfs_fini(struct mfs *fs);


/* ---- the kinds of node (tree.c, node.h) ------------------------------------ */

enum mfs_node_type {
	MFS_N_ROOT = 1,
	MFS_N_CTL_DIR,
	MFS_N_CTL_FILE,              /* acquire / dispose / exec: ctl_kind */
	MFS_N_CTL_DECLARATIONS,
	MFS_N_CTL_ENGINE,
	MFS_N_BYSCOPE,               /* depth 0..3 directories: by-scope[/S[/T[/A]]] */
	MFS_N_BYSCOPE_LINK,          /* by-scope/S/T/A/KIND[@CALL] */
	MFS_N_SBX_DIR,               /* NAME */
	MFS_N_SBX_STATUS,            /* NAME/status */
	MFS_N_SBX_EGRESS,            /* NAME/egress: the egress proxy's decisions */
	MFS_N_WORK,                  /* NAME/work[/REL]: rel "" for work/ itself */
	MFS_N_ROOTFS,                /* NAME/root[/REL]: the guest's `/`, read-only; rel "" for root/ itself */
	MFS_N_EXECS,                 /* NAME/execs: the detached execs (execs.c) */
	MFS_N_EXEC_DIR,              /* NAME/execs/ID */
	MFS_N_EXEC_FILE,             /* NAME/execs/ID/{stdout,stderr,status,wait}: exec_file */
};

enum mfs_exec_file { MFS_EXEC_STDOUT = 1, MFS_EXEC_STDERR, MFS_EXEC_STATUS, MFS_EXEC_WAIT };
#define MFS_EXEC_ID_LEN 16

struct mfs_node_ops;
/* A node as a request sees it: its kind (tree.c) and what names it. */
struct mfs_node {
	enum mfs_node_type type;
	const struct mfs_node_ops *ops; /* the kind's operations (node.h, kinds.c) */
	enum mfs_ctl_kind ctl_kind;
	char name[64];               /* the sandbox (SBX_*, WORK, ROOTFS, EXEC*) */
	char *path;                  /* the node's path, for a kind whose operations need it (else NULL) */
	const char *rel;             /* WORK, ROOTFS: relative path below work/ or root/, into `path` */
	int depth;                   /* BYSCOPE: 0..3, BYSCOPE_LINK: 4 */
	const char *comp[4];         /* BYSCOPE(_LINK): the components after by-scope/ (into `buf`) */
	char exec_id[MFS_EXEC_ID_LEN + 1]; /* EXEC_DIR, EXEC_FILE */
	enum mfs_exec_file exec_file; /* EXEC_FILE */
	char buf[1024];
};

/* ---- the sandbox list (root.c) ----------------------------------------- */

/*
 * The current snapshot (refreshed when older than `max_age_ms`, or always
 * when max_age_ms < 0). Release with mfs_snapshot_put. NULL with err set
 * when the engine cannot be asked.
 */
struct mfs_snapshot *mfs_snapshot_get(struct mfs *fs, long long max_age_ms, struct mafsbx_error *err);
void mfs_snapshot_put(struct mfs_snapshot *s);
/* The list under by-scope/SCOPE[/THREAD[/AGENT]] (`depth` 1 to 3 of
 * `comp`), asked of the engine by label filters: the full list or a wider
 * one when young enough, else a narrow one. */
struct mfs_snapshot *mfs_scoped_get(struct mfs *fs, const char *const *comp, int depth, long long max_age_ms,
				    struct mafsbx_error *err);
/* A cached list (the full one or a scoped slot) that holds every sandbox
 * labelled `want` (scope, thread, agent; "": any), no older than
 * max_age_ms, referenced; or NULL. */
struct mfs_snapshot *mfs_scoped_cached(struct mfs *fs, const char (*want)[64], long long max_age_ms);
/* How old a list a lookup may use: attr_timeout. */
long long mfs_lookup_age_ms(const struct mfs *fs);
/* Drop the cached lists: the next reader asks the engine. */
void mfs_snapshot_invalidate(struct mfs *fs);
/* Find a sandbox in a snapshot. */
const struct mafsbx_sandbox_info *mfs_snapshot_find(const struct mfs_snapshot *s, const char *name);

/*
 * The sandbox NAME as this mount shows it (scope filter applied): *out
 * points into the returned snapshot, which the caller releases with
 * mfs_snapshot_put. A fresh snapshot is used when it holds NAME; otherwise
 * the engine is asked for that one name. NULL with err set (ENOENT when
 * there is no such sandbox).
 */
struct mfs_snapshot *mfs_sandbox_find(struct mfs *fs, const char *name, const struct mafsbx_sandbox_info **out,
				      struct mafsbx_error *err);

/*
 * Path walks (a lookup of NAME, then of every component below it) resolve
 * NAME through a list up to this old, or attr_timeout if longer: asking the
 * engine once per path component would cost milliseconds where the local
 * plane costs microseconds. A miss always asks the engine; a call on a
 * container that has gone is retried once with a fresh lookup (work.c).
 */
#define MFS_FILE_TARGET_MS 5000

/* The same with an explicit age for the cached list (file calls: see work.c). */
struct mfs_snapshot *mfs_sandbox_find_age(struct mfs *fs, const char *name, long long max_age_ms,
					  const struct mafsbx_sandbox_info **out, struct mafsbx_error *err);

/* True when a sandbox belongs to the mount's scope. */
bool mfs_in_scope(const struct mfs *fs, const struct mafsbx_sandbox_info *i);

/* The list a listing of the root (n NULL or by-scope/ itself) or of
 * by-scope/SCOPE[/...] (n) reads from: asked of the engine at its first
 * chunk (off 0), kept by its directory handle (fi) for the later ones. */
struct mfs_snapshot *mfs_listing_get(struct mfs *fs, struct fuse_file_info *fi, off_t off, const struct mfs_node *n,
				     struct mafsbx_error *err);

/* One readdir entry of type `type` (S_IFDIR, S_IFREG, S_IFLNK); the filler's answer (1: buffer full) (tree.c). */
int mfs_dir_entry(void *buf, fuse_fill_dir_t filler, const char *name, mode_t type);
int mfs_root_readdir(struct mfs *fs, struct fuse_file_info *fi, off_t off, void *buf, fuse_fill_dir_t filler);
/* by-scope/ (byscope.c) */
int mfs_byscope_getattr(struct mfs *fs, const struct mfs_node *n, struct stat *st);
int mfs_byscope_readdir(struct mfs *fs, const struct mfs_node *n, struct fuse_file_info *fi, off_t off, void *buf,
			fuse_fill_dir_t filler);
int mfs_byscope_readlink(struct mfs *fs, const struct mfs_node *n, char *buf, size_t size);
/* The by-scope link name of a sandbox ("KIND" or "KIND@CALL") into out; false when unshowable. */
bool mfs_byscope_link_name(const struct mafsbx_sandbox_info *i, char *out, size_t size);

/* Free the cached lists (mfs_fini). */
void mfs_list_clear(struct mfs *fs);

/* Tell the kernel the root, by-scope and NAME changed (after acquire / dispose). */
void mfs_invalidate_sandbox(struct mfs *fs, const char *name);


/* ---- the virtual files (status.c) -------------------------------------- */

/* Text of NAME/status, .ctl/declarations, .ctl/engine (malloc'd, ends in "\n"). */
int mfs_status_text(struct mfs *fs, const char *name, char **text, size_t *len, struct mafsbx_error *err);
/* Text of NAME/egress: the proxy's decision lines (empty for a closed sandbox), "# truncated" first when cut. */
int mfs_egress_text(struct mfs *fs, const char *name, char **text, size_t *len, struct mafsbx_error *err);
int mfs_declarations_text(struct mfs *fs, char **text, size_t *len, struct mafsbx_error *err);
int mfs_engine_text(struct mfs *fs, char **text, size_t *len, struct mafsbx_error *err);

/* ---- per-open handles (the registry: mount.c) ---------------------------- */

enum mfs_handle_type { MFS_H_BLOB = 1, MFS_H_CTL, MFS_H_WORK, MFS_H_DIR, MFS_H_EXEC, MFS_H_LIST };

struct mfs_handle {
	enum mfs_handle_type type;
	void (*discard)(struct mfs_handle *h); /* free it without sending anything (unmount) */
	struct mfs_handle *prev, *next;  /* the mount's open handles (mount.c) */
	bool charged;                    /* counted against `owner`'s open files (mfs_open_charge) */
	uid_t owner;
	uint64_t pt_ino;                 /* passthrough: the node whose backing id this open holds (0: none) */
};

/* A listing's directory handle (the root and by-scope/...): the list one
 * listing reads from its first chunk to its last. */
struct mfs_listdir {
	struct mfs_handle h;
	struct mfs_snapshot *snap;
};
int mfs_listdir_open(struct mfs *fs, struct fuse_file_info *fi);
void mfs_listdir_release(struct mfs_listdir *d);

/*
 * The shared texts of the read-only virtual files (texts.c): one text per
 * key (".ctl/engine", "status/NAME", ...) held by every handle reading it,
 * counted against the reply budget while held. get() joins a build of the
 * key in progress, else builds (`build` fills a malloc'd text; 0 or a
 * negative errno with `err`) and shares the result with any held text of
 * the same bytes; `stable` (content that never changes) reuses a held text
 * without building. Past the reply budget: ENOMEM, logged, naming it.
 */
struct mfs_text;
typedef int (*mfs_text_build_fn)(struct mfs *fs, void *arg, char **text, size_t *len, struct mafsbx_error *err);
int mfs_text_get(struct mfs *fs, const char *key, bool stable, mfs_text_build_fn build, void *arg,
		 struct mfs_text **out, struct mafsbx_error *err);
void mfs_text_put(struct mfs_text *t);
const char *mfs_text_data(const struct mfs_text *t, size_t *len);
/* After `freed` bytes went back to the heap: past a few MiB, give them to the system. */
void mfs_memory_trim(size_t freed);
/* At the daemon's start: big blocks (texts, replies) are mapped apart from the
 * arenas, so that freeing them gives them back to the system. */
void mfs_memory_init(void);

/* A snapshot of a read-only virtual file, taken at open (shared: texts.c). */
struct mfs_blob {
	struct mfs_handle h;
	struct mfs_text *text;       /* the reference this handle holds */
	const char *data;
	size_t len;
};

/* ---- .ctl handles (ctl.c) ---------------------------------------------- */

struct mfs_ctl;
struct mfs_ctl *mfs_ctl_open(struct mfs *fs, enum mfs_ctl_kind kind);
/* A write(2): returns `size`, or a negative errno (the request ran and failed,
 * or the bytes were refused). `fs` runs the request when the object completes. */
int mfs_ctl_write(struct mfs *fs, struct mfs_ctl *c, const char *data, size_t size);
/* The same in two steps, so the run can happen on a transaction thread:
 * take() collects the bytes (returns `size` or a negative errno); when they
 * complete a request it sets *run_it, and the caller must then call run()
 * with take's result, which runs the request and returns the write's answer.
 * Until run() returns, every other call on the handle waits. */
int mfs_ctl_write_take(struct mfs_ctl *c, const char *data, size_t size, bool *run_it);
int mfs_ctl_write_run(struct mfs *fs, struct mfs_ctl *c, int taken);
/* A taken request that will not run: its reply says why (errno `e`, the
 * message); returns -e, the write's answer. */
int mfs_ctl_write_cancel(struct mfs_ctl *c, int e, const char *why);
/* A read(2) from the reply (offsets are ignored: the file is a pipe). */
int mfs_ctl_read(struct mfs_ctl *c, char *out, size_t size);
/* O_TRUNC / truncate(0): forget a partial request. */
void mfs_ctl_truncate(struct mfs_ctl *c);
/* close(2) of one descriptor: -EINVAL when an unfinished request is pending
 * (a running request is complete: 0 at once, no wait for its end). */
int mfs_ctl_flush(struct mfs_ctl *c);
/* The last close: freed now, or by the end of a request still running. */
void mfs_ctl_release(struct mfs_ctl *c);

/* ---- replies (reply.c, textconv.c) ------------------------------------- */

/* {"ok": false, "error": {"errno", "type", "message"}} plus the members of `extra`. */
json_t *mfs_error_reply(const struct mafsbx_error *e, const json_t *extra);
/* The exec reply's members (reply.c): exit code, the text and base64
 * views of both streams, timed_out, truncated, duration; "ok" when asked. */
struct mafsbx_exec_result;
json_t *mfs_exec_fields(const struct mafsbx_exec_result *res, bool with_ok);
/* What building that reply holds at its peak for this much output (the reply budget's charge). */
size_t mfs_exec_reply_cost(size_t out_len, size_t err_len);
/* Dump a reply as one line ending in "\n" (malloc'd). */
char *mfs_reply_dump(const json_t *reply, size_t *len);

/*
 * The bytes as a JSON string value: valid UTF-8 kept, each maximal invalid
 * subsequence replaced by U+FFFD (as Python's errors="replace"). NUL kept.
 */
char *mfs_utf8_replace(const unsigned char *data, size_t len, size_t *out_len);
/*
 * The same view, cut (at a character boundary, *cut set) where its JSON
 * spelling would pass `max_json` bytes (a control byte costs 6: "\u0001").
 */
char *mfs_utf8_view(const unsigned char *data, size_t len, size_t max_json, size_t *out_len, bool *cut);

/*
 * A JSON string of text that should be UTF-8 but may not be (an engine's
 * answer, a label): invalid bytes become U+FFFD. NULL, or text that still
 * cannot be stored (out of memory), gives JSON null; a caller that wants ""
 * for a missing value passes "".
 */
json_t *mfs_json_text(const char *s);
/* json_dumps(v, flags) plus a "\n" (malloc'd; *len without the NUL). NULL when out of memory. */
char *mfs_json_dump_line(const json_t *v, size_t flags, size_t *len);

/*
 * The mount-wide reply budget (reply.c): the bytes exec replies being built
 * may hold at once. take() reserves `bytes` or fails with ENOMEM naming the
 * request; put() gives them back. -o reply_budget (fs->opt), else
 * MFS_REPLY_BUDGET_DEFAULT (opts.h).
 */
int mfs_reply_budget_take(struct mfs *fs, size_t bytes, const char *what, struct mafsbx_error *err);
void mfs_reply_budget_put(struct mfs *fs, size_t bytes);
/* Keep `bytes` taken until this thread's next mfs_reply_dump() (then put back). */
void mfs_reply_budget_hold_until_dump(struct mfs *fs, size_t bytes);
/* Put back what this thread holds for a dump that never came. */
void mfs_reply_budget_release_held(void);

/* ---- work/ and root/ (work.c): a sandbox's files through its plane ------- */

/* The caller of the plane call this thread makes (the planes' caller_uid; target.c). */
bool mfs_work_caller_uid(uid_t *uid);

struct mfs_work;
struct mfs_dir;
/* A work/ or root/ node's attributes as shown: -o uid/gid/umask, special files
 * as empty mode-0 regular files, links as links (never followed). */
int mfs_work_getattr(struct mfs_ctx *c, const struct mfs_node *n, struct stat *st, struct fuse_file_info *fi);
int mfs_work_opendir(struct mfs_ctx *c, const struct mfs_node *n, struct fuse_file_info *fi);
int mfs_work_readdir(struct mfs *fs, struct mfs_dir *d, void *buf, fuse_fill_dir_t filler, off_t off);
void mfs_work_releasedir(struct mfs_dir *d);
int mfs_work_open(struct mfs_ctx *c, const struct mfs_node *n, struct fuse_file_info *fi);
int mfs_work_create(struct mfs_ctx *c, const struct mfs_node *n, mode_t mode, struct fuse_file_info *fi);
int mfs_work_read(struct mfs_work *w, char *buf, size_t size, off_t off);
int mfs_work_write(struct mfs *fs, struct mfs_work *w, const char *buf, size_t size, off_t off);
int mfs_work_ftruncate(struct mfs *fs, struct mfs_work *w, off_t size);
int mfs_work_flush(struct mfs_ctx *c, struct mfs_work *w);
void mfs_work_release(struct mfs_ctx *c, struct mfs_work *w);
/* Free without sending (unmount with the file still open). */
void mfs_work_discard(struct mfs_work *w);
/* Path operations under work/ (root/ is EROFS; the caller checks the type). */
int mfs_work_mkdir(struct mfs_ctx *c, const struct mfs_node *n, mode_t mode);
int mfs_work_remove(struct mfs_ctx *c, const struct mfs_node *n, bool dir);
int mfs_work_rename(struct mfs_ctx *c, const struct mfs_node *from, const struct mfs_node *to, unsigned flags);
int mfs_work_chmod(struct mfs_ctx *c, const struct mfs_node *n, mode_t mode);
int mfs_work_truncate(struct mfs_ctx *c, const struct mfs_node *n, off_t size);
int mfs_work_utimens(struct mfs_ctx *c, const struct mfs_node *n, const struct timespec tv[2], struct fuse_file_info *fi);

/* ---- the request runner ------------------------------------------------ */

/* The real runner (requests.c). */
int mfs_run_request(struct mfs *fs, enum mfs_ctl_kind kind, const json_t *req, json_t **reply,
		    struct mafsbx_error *err);

/* The descriptor a work/ or rootfs/ handle opened for reading reads from, or -1 (work.c). */
int mfs_work_read_fd(const struct mfs_handle *h);

/* cluster.c: -o cluster=swarm over the open engine and backend. 0, or -1 with err set. */
int mfs_cluster_open(struct mfs *fs, struct mafsbx_error *err);
void mfs_cluster_close(struct mfs *fs);
/* A sandbox's status over a swarm: "node" {id, hostname}, or "lost" (why). 0, or -1 out of memory. */
int mfs_cluster_status(struct mfs *fs, const char *name, json_t *o);
/* .ctl/engine over a swarm: "cluster" {kind, nodes: [{id, hostname, engine, state, availability, usable, why}]}. */
int mfs_cluster_engine(struct mfs *fs, json_t *o);

#endif
