/*
 * plane.h: one interface for a sandbox's files (mafsbxfs(1) READING AND WRITING FILES), whatever
 * reaches them. The filesystem calls only this; which plane serves a
 * sandbox is decided here, once per container instance, and shown in
 * `status`.
 *
 *  - local (plane_local.c): the engine runs on this host; every path is one
 *    openat2() from the pinned container root (pin.h) with RESOLVE_BENEATH |
 *    RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV. No
 *    freeze. Mutations run with the guest's filesystem credentials on the
 *    calling thread (guestcred.c).
 *  - engine (plane_engine.c): the upstream mechanism (files.h): freeze,
 *    ancestor check from `/`, archive HEAD/GET/PUT, unfreeze; removals as
 *    upstream `remove` (an `rm` in the guest).
 *
 * Paths are relative to a base: the sandbox's work dir (MAFSBX_BASE_WORK;
 * "" is the work dir itself) or the guest's `/` (MAFSBX_BASE_ROOT, read-only
 * for the filesystem). They have been through the tree's text checks; the
 * plane applies guestpath's refusals again (no `..`, no backslash).
 *
 * Errors are struct mafsbx_error with the errno of doc/protocol.md "Errors"; every call is
 * thread-safe. Objects returned (dir, file) are used by one thread at a time
 * (the filesystem's handle lock) and closed exactly once.
 */
#ifndef MAFSBX_PLANE_H
#define MAFSBX_PLANE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "error.h"

struct mafsbx_engine;
struct mafsbx_freezer;
struct mafsbx_backend;

enum mafsbx_plane_mode { MAFSBX_PLANE_AUTO = 0, MAFSBX_PLANE_LOCAL, MAFSBX_PLANE_ENGINE };
enum mafsbx_plane_kind { MAFSBX_PK_LOCAL = 1, MAFSBX_PK_ENGINE };
enum mafsbx_plane_base { MAFSBX_BASE_WORK = 0, MAFSBX_BASE_ROOT };

int mafsbx_plane_mode_parse(const char *text, enum mafsbx_plane_mode *out);

/* The engine plane's listing: the directory's archive first, the guest's find when it was cut; or find only. */
enum mafsbx_plane_listing { MAFSBX_LISTING_AUTO = 0, MAFSBX_LISTING_EXEC };

struct mafsbx_plane_config {
	enum mafsbx_plane_mode mode;
	bool endpoint_local;       /* the endpoint is a unix socket (the engine may be on this host) */
	bool frozen_reads;         /* local plane: copy each read under one freeze */
	uint64_t local_max_read;   /* local plane: largest file opened for reading (0: none) */
	uint64_t spool_budget;     /* engine plane: bytes all open spools may hold together (0: 1 GiB) */
	size_t max_pins;           /* pinned containers kept (0: 256) */
	/* engine plane: how long a burst's freeze outlives its last call, ms (burst.h; 0: the default, <0: no bursts) */
	int burst_ms;
	/* engine plane: how a directory is listed (plane_engine.c; mafsbxfs(1) -o listing) */
	enum mafsbx_plane_listing listing;
	/* The uid of the call at hand on this thread (false: none known): whom a
	 * new spool is charged to. NULL: every spool is the daemon's own. */
	bool (*caller_uid)(uid_t *uid);
};

struct mafsbx_planes;

/* No engine call. Borrows engine, freezer and backend (they outlive it). */
struct mafsbx_planes *mafsbx_planes_new(struct mafsbx_engine *e, struct mafsbx_freezer *fz,
					struct mafsbx_backend *b, const struct mafsbx_plane_config *cfg,
					struct mafsbx_error *err);
void mafsbx_planes_free(struct mafsbx_planes *ps);

/*
 * For `-o plane=local`: 0 when this process can serve the local plane at
 * all (a unix endpoint whose engine process is visible in our PID namespace,
 * run as root), else EK_UNSUPPORTED naming the reason.
 */
int mafsbx_planes_check_local(struct mafsbx_planes *ps, const char *unix_socket_path, struct mafsbx_error *err);

/* A sandbox as the filesystem knows it (from its inventory). */
struct mafsbx_plane_target {
	const char *id;            /* full container ID */
	const char *name;          /* container name (identity lookups) */
	const char *work_dir;      /* absolute guest path */
};

/*
 * Which plane serves this sandbox now (pins it when local applies). `why`
 * (may be NULL) receives, for the engine plane, the reason local does not
 * apply. Never fails: a sandbox that cannot be pinned is the engine's.
 */
enum mafsbx_plane_kind mafsbx_plane_which(struct mafsbx_planes *ps, const struct mafsbx_plane_target *t, char *why,
					  size_t why_size);
/*
 * The spool budget (cfg.spool_budget, B) and its shares (plane_common.c):
 * all spools of the mount hold at most B; those of one sandbox at most B/2;
 * those opened by users other than the daemon's own uid at most 3B/4
 * together and B/4 each, so the mounting user always keeps a reserve. A
 * finished exec's output moves out of B into its sandbox's kept allowance
 * (B/4 per sandbox, B/2 on the mount).
 */
struct mafsbx_spool_share {
	uint64_t bytes;              /* held */
	uid_t uid;                   /* charged to (the opener; the daemon's own: no user bound) */
	char sandbox[64];            /* the sandbox the bytes are for ("": no sandbox bound) */
	bool kept;                   /* in the kept allowance, not the budget */
};
/* A new share for `sandbox`, charged to the caller on this thread (cfg.caller_uid). */
void mafsbx_planes_spool_owner(struct mafsbx_planes *ps, struct mafsbx_spool_share *a, const char *sandbox);
/* For other spools of the mount (a detached exec's output): grow the share
 * to `want` bytes (ENOMEM naming the bound past any of them), and give it
 * all back. */
int mafsbx_planes_spool_grow(struct mafsbx_planes *ps, struct mafsbx_spool_share *accounted, uint64_t want,
			     struct mafsbx_error *err);
void mafsbx_planes_spool_release(struct mafsbx_planes *ps, struct mafsbx_spool_share *accounted);
/* Move a share out of the budget into its sandbox's kept allowance: 0, or
 * -1 when the sandbox's allowance is full, -2 when the mount's is (the
 * caller drops older kept output and asks again). */
int mafsbx_planes_spool_keep(struct mafsbx_planes *ps, struct mafsbx_spool_share *accounted);

/* Over a swarm: `node`'s spools are charged to `mount`'s account from now
 * on (its budget, shares and tallies; plane_route.c, before `node` serves
 * anything), so the mount's bound holds across every node, not per node.
 * `mount` outlives `node`. */
void mafsbx_planes_share_spool(struct mafsbx_planes *node, struct mafsbx_planes *mount);

/* Forget what is known of a container (disposed): unpins it, drops its spool accounting. */
void mafsbx_planes_forget(struct mafsbx_planes *ps, const char *id);

enum mafsbx_ptype { MAFSBX_PT_FILE = 1, MAFSBX_PT_DIR, MAFSBX_PT_SYMLINK, MAFSBX_PT_OTHER };

struct mafsbx_pstat {
	enum mafsbx_ptype type;
	mode_t mode;               /* permission bits (07777) */
	uint64_t size;             /* files; 0 for links and other */
	uint32_t nlink;
	uid_t uid;                 /* as the guest sees them (engine plane: 0 when unknown) */
	gid_t gid;
	struct timespec atime, mtime, ctime;
};

/* lstat: the final component is described, never followed (a link is PT_SYMLINK).
 * Absent: EK_NO_PATH (ENOENT). */
int mafsbx_plane_stat(struct mafsbx_planes *ps, const struct mafsbx_plane_target *t, enum mafsbx_plane_base base,
		      const char *rel, struct mafsbx_pstat *out, struct mafsbx_error *err);

/* ---- listing ------------------------------------------------------------ */

struct mafsbx_plane_dir;
/*
 * Open a directory for listing. The local plane lists the guest's real
 * directory; the engine plane runs the guest's own `find . -mindepth 1
 * -maxdepth 1 -print0` there (one exec at the guest's authority, outside any
 * freeze), parses it as hostile (dirlist.h: at most 10,000 names, a cut
 * logged), adds the `candidates` (names directly inside `rel`: the declared
 * outputs and files written through the mount) and lists those that exist,
 * statted under one freeze after the directory's frozen check.
 */
int mafsbx_plane_opendir(struct mafsbx_planes *ps, const struct mafsbx_plane_target *t,
			 enum mafsbx_plane_base base, const char *rel, const char *const *candidates, size_t n,
			 struct mafsbx_plane_dir **out, struct mafsbx_error *err);
/*
 * Entries from position `pos` on (0: the start; otherwise a `next` an
 * earlier callback received). `fn` returns non-zero to stop (the caller's
 * buffer is full). "." and ".." are not reported. 0 or a negative errno.
 */
typedef int (*mafsbx_plane_dir_fn)(void *ctx, const char *name, const struct mafsbx_pstat *st, uint64_t next);
int mafsbx_plane_readdir(struct mafsbx_plane_dir *d, uint64_t pos, mafsbx_plane_dir_fn fn, void *ctx);
void mafsbx_plane_closedir(struct mafsbx_plane_dir *d);

/* ---- open files --------------------------------------------------------- */

struct mafsbx_plane_file;

/*
 * Open a regular file for reading. Local: the file itself (reads are live;
 * with frozen_reads a copy made under one freeze); engine: a spool filled
 * under one freeze, refused over `max_bytes` (0: no cap) with EK_TOO_BIG.
 * A link is EK_CONFINEMENT (ELOOP), anything not regular EK_NOT_REGULAR
 * (EPERM), and nothing that is not a regular file is ever opened.
 */
int mafsbx_plane_open_read(struct mafsbx_planes *ps, const struct mafsbx_plane_target *t,
			   enum mafsbx_plane_base base, const char *rel, uint64_t max_bytes,
			   struct mafsbx_plane_file **out, struct mafsbx_error *err);

#define MAFSBX_PW_TRUNC 0x1u    /* start empty (O_TRUNC) */
#define MAFSBX_PW_CREATE 0x2u   /* may create (O_CREAT) */
#define MAFSBX_PW_EXCL 0x4u     /* must create (O_EXCL) */
#define MAFSBX_PW_APPEND 0x8u   /* every write goes at the end (O_APPEND) */
#define MAFSBX_PW_READ 0x10u    /* O_RDWR: reads see what was written */

/*
 * Open a file under the work dir for writing. The content is replaced
 * atomically at commit (local: a temporary file in the same directory,
 * fsync, rename; engine: one archive PUT), so an interrupted writer never
 * leaves a truncated file. `mode` is for a new file (existing: kept).
 * Writes beyond `max_bytes` (0: no cap) fail EK_TOO_BIG and nothing is sent.
 */
int mafsbx_plane_open_write(struct mafsbx_planes *ps, const struct mafsbx_plane_target *t, const char *rel,
			    unsigned flags, mode_t mode, uint64_t max_bytes, struct mafsbx_plane_file **out,
			    struct mafsbx_error *err);

ssize_t mafsbx_plane_pread(struct mafsbx_plane_file *f, void *buf, size_t size, uint64_t off);
/*
 * The descriptor of the guest's file a local-plane open for reading reads
 * (confined and checked at open), for the kernel to read directly (FUSE
 * passthrough, fs/passthrough.c); -1 for any other file (engine plane, a
 * frozen_reads copy, opened for writing). The caller must not close it.
 */
int mafsbx_plane_read_fd(const struct mafsbx_plane_file *f);
/* Returns bytes written or a negative errno (a failed write poisons the file: commit reports it). */
ssize_t mafsbx_plane_pwrite(struct mafsbx_plane_file *f, const void *buf, size_t size, uint64_t off);
int mafsbx_plane_ftruncate(struct mafsbx_plane_file *f, uint64_t size);
/* The open file's attributes (its current size and times). */
int mafsbx_plane_fstat(struct mafsbx_plane_file *f, struct mafsbx_pstat *out);
/*
 * Make what was written visible at its path. `last` is the last close
 * (release): everything pending is committed. Otherwise (flush of one of
 * several descriptors, fsync) only when bytes were written since the last
 * commit, so a descriptor closed before anything was written (a shell's
 * redirection) does not publish an empty file. No-op when clean.
 */
int mafsbx_plane_commit(struct mafsbx_plane_file *f, bool last, struct mafsbx_error *err);
/* Drop what was written and not committed (a writer killed mid-stream):
 * commit does nothing from now on and close removes the temporary. */
void mafsbx_plane_abandon(struct mafsbx_plane_file *f);
/* Close; an uncommitted write is dropped (the target stays as it was). */
void mafsbx_plane_close(struct mafsbx_plane_file *f);
bool mafsbx_plane_file_writable(const struct mafsbx_plane_file *f);

/* ---- mutations (work dir only) ------------------------------------------ */

int mafsbx_plane_mkdir(struct mafsbx_planes *ps, const struct mafsbx_plane_target *t, const char *rel, mode_t mode,
		       struct mafsbx_error *err);
/* unlink (dir false) / rmdir (dir true). A link is removed, never followed. */
int mafsbx_plane_remove(struct mafsbx_planes *ps, const struct mafsbx_plane_target *t, const char *rel, bool dir,
			struct mafsbx_error *err);
/* renameat2(2) with RENAME_NOREPLACE or RENAME_EXCHANGE (other flags: EINVAL).
 * Engine plane: EXDEV (callers copy and remove); an exchange there: EINVAL. */
int mafsbx_plane_rename(struct mafsbx_planes *ps, const struct mafsbx_plane_target *t, const char *from,
			const char *to, unsigned flags, struct mafsbx_error *err);
int mafsbx_plane_chmod(struct mafsbx_planes *ps, const struct mafsbx_plane_target *t, const char *rel, mode_t mode,
		       struct mafsbx_error *err);
int mafsbx_plane_truncate(struct mafsbx_planes *ps, const struct mafsbx_plane_target *t, const char *rel,
			  uint64_t size, struct mafsbx_error *err);
/* ts: atime, mtime (UTIME_NOW / UTIME_OMIT allowed). */
int mafsbx_plane_utimens(struct mafsbx_planes *ps, const struct mafsbx_plane_target *t, const char *rel,
			 const struct timespec ts[2], struct mafsbx_error *err);

#endif
