/*
 * files.h: the engine plane's frozen file calls (plane.h has the one
 * interface of both planes). Stat, read and write of guest files with
 * the ancestor check (doc/upstream.md §5, mafsbxfs(1) READING AND WRITING FILES).
 *
 * Every call that touches the engine runs under ONE freeze (freeze.h): the
 * container is paused, every component from the first component of the
 * working directory (or of the path, for absolute reads) down to the target
 * is HEAD-statted without following links, the one GET or PUT is done, and
 * the container is unpaused. Text refusals (guestpath.h) cost no engine call
 * and take no freeze. No archive stream is ever open while pause/unpause is
 * called (the freeze is left only after the transfer ended).
 *
 * Errors (doc/protocol.md "Errors"):
 *   a symlink in the chain (or a final symlink on read/write)  EK_CONFINEMENT ELOOP
 *   a non-directory parent (file, fifo, device)                EK_NOT_DIR     ENOTDIR
 *   absent (on read; stat reports MAFSBX_FK_ABSENT)            EK_NO_PATH     ENOENT
 *   a final component not a regular file (read)                EK_NOT_REGULAR EPERM
 *   over max_bytes                                             EK_TOO_BIG     EFBIG
 *   the container is gone (a "No such container" 404)          EK_NO_CONTAINER ENOENT
 *   plus the freeze's and the engine's errors, and guestpath.h's text refusals.
 * Absence is only ever a 404 naming the exact path asked for; anything else
 * is a failure (doc/upstream.md §3.3).
 *
 * All calls are thread-safe. `deadline_ms` is an absolute mafsbx_now_ms()
 * time (0: now + MAFSBX_FILES_DEFAULT_MS); past it a call fails EK_TIMEOUT
 * between engine calls (each engine call has its own timeout too).
 */
#ifndef MAFSBX_FILES_H
#define MAFSBX_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "buf.h"
#include "error.h"
#include "freeze.h"

struct mafsbx_bursts;
struct mafsbx_listsnaps;
struct mafsbx_archlist;

#define MAFSBX_FILES_DEFAULT_MS 60000

struct mafsbx_files_target {
	const char *container;   /* full container ID (the freeze key) */
	const char *work_dir;    /* absolute guest path; "/" is allowed */
	uid_t uid;               /* guest identity for written entries */
	gid_t gid;
	/* NULL: each call its own freeze; else the calls of a burst share one (burst.h) */
	struct mafsbx_bursts *bursts;
	/*
	 * NULL: none; else a listing's answers serve the stats that follow it
	 * for a short validity, with no freeze (listsnap.h: stats only, never
	 * the check of a transfer)
	 */
	struct mafsbx_listsnaps *snaps;
	/*
	 * NULL, or called by mafsbx_files_read() with the file's size (the
	 * engine's HEAD, under the freeze) before any body byte is fetched; a
	 * refusal (< 0, `err` set) ends the read with nothing taken. The engine
	 * plane reserves its spool budget here, so concurrent opens can never
	 * hold more than the budget, not even while fetching.
	 */
	int (*reserve)(void *ctx, uint64_t size, struct mafsbx_error *err);
	void *reserve_ctx;
};

enum mafsbx_fkind {
	MAFSBX_FK_ABSENT = 0,
	MAFSBX_FK_FILE,
	MAFSBX_FK_DIR,
	MAFSBX_FK_SYMLINK,
	MAFSBX_FK_OTHER,         /* fifo, device, socket */
};

struct mafsbx_fstat {
	enum mafsbx_fkind kind;
	uint64_t size;           /* files: bytes; symlinks: 0 (upstream: no size); dirs: the engine's */
	mode_t mode;             /* S_IFMT type + permission bits (setuid/setgid/sticky decoded) */
	struct timespec mtime;
};

/*
 * Stat `path` (relative to t->work_dir, or absolute inside it) with HEADs
 * only, under one freeze. The final component is described, not refused or
 * followed: a link comes back as MAFSBX_FK_SYMLINK. An absent component
 * anywhere gives 0 with kind MAFSBX_FK_ABSENT. A link or non-directory in the
 * chain above is an error. With t->snaps, a path a listing just showed
 * present is answered from that listing with no freeze (listsnap.h).
 */
int mafsbx_files_stat(struct mafsbx_freezer *fz, const struct mafsbx_files_target *t, const char *path,
		      long long deadline_ms, struct mafsbx_fstat *out, struct mafsbx_error *err);

/*
 * Stat many paths under ONE freeze (a readdir+getattr burst). Each path has
 * its own result: rcs[i] is 0 or a negative errno with errs[i] (errs may be
 * NULL) set as mafsbx_files_stat() would. Ancestors shared between paths are
 * statted once. Returns 0 when the batch ran (even if some paths failed), or
 * a negative errno when the freeze itself could not be had (every rcs[i]
 * then holds that errno).
 */
int mafsbx_files_stat_many(struct mafsbx_freezer *fz, const struct mafsbx_files_target *t,
			   const char *const *paths, size_t n, long long deadline_ms, struct mafsbx_fstat *outs,
			   int *rcs, struct mafsbx_error *errs, struct mafsbx_error *err);

struct mafsbx_read_info {
	uint64_t size;
	mode_t mode;             /* from the tar header */
	uid_t uid;
	gid_t gid;
	time_t mtime;
};

/*
 * Read a regular file: ancestor check and ONE archive GET under the same
 * freeze, the body streamed to `out_fd` (a memfd spool; written from its
 * current offset) or appended to `out_buf` (exactly one of them). A file
 * over `max_bytes` (0: no cap) is EK_TOO_BIG, decided from the header before
 * any body byte is taken. Absent: EK_NO_PATH. Final symlink: EK_CONFINEMENT.
 * Any other non-regular final component: EK_NOT_REGULAR. A short body is an
 * error. On error, bytes may have been written to the spool already.
 */
int mafsbx_files_read(struct mafsbx_freezer *fz, const struct mafsbx_files_target *t, const char *path,
		      uint64_t max_bytes, int out_fd, struct mafsbx_buf *out_buf, long long deadline_ms,
		      struct mafsbx_read_info *info, struct mafsbx_error *err);

/*
 * The owner, group, mode, size and mtime of a regular file as its tar header
 * gives them (a HEAD gives no owner): the same checks and freeze as
 * mafsbx_files_read(), and ONE archive GET cut right after the header (no
 * body is taken, t->reserve is not called). Same errors.
 */
int mafsbx_files_read_header(struct mafsbx_freezer *fz, const struct mafsbx_files_target *t, const char *path,
			     long long deadline_ms, struct mafsbx_read_info *info, struct mafsbx_error *err);

/*
 * Read a small file by absolute guest path (/etc/passwd, /etc/group) with the
 * chain checked from `/`: the same rules as mafsbx_files_read().
 */
int mafsbx_files_read_abs(struct mafsbx_freezer *fz, const char *container, const char *abs_path,
			  uint64_t max_bytes, struct mafsbx_buf *out, long long deadline_ms,
			  struct mafsbx_error *err);

/*
 * Write a regular file with ONE archive PUT (to "/", noOverwriteDirNonDir)
 * under the freeze, after the name check, the refusal of the working
 * directory itself, the ancestor check and a leaf check. Missing directories
 * from the working directory down get explicit entries 0755 owned by
 * t->uid:t->gid; existing ones get no entry (their mode is not re-stamped);
 * directories above the working directory never get entries (the engine makes
 * them root's). The file gets `mode` (0: 0644) and t->uid:t->gid.
 *
 * A symlink as the final component is REFUSED (EK_CONFINEMENT ELOOP), not
 * replaced: upstream's write bundle refuses it too (its conformance probe
 * expects the refusal), and a refusal leaves the guest's link as it was.
 * An existing directory as the final component: EK_INVALID EISDIR; a fifo,
 * device or socket: EK_NOT_REGULAR EPERM.
 */
int mafsbx_files_write(struct mafsbx_freezer *fz, const struct mafsbx_files_target *t, const char *path,
		       const void *data, size_t len, mode_t mode, long long deadline_ms, struct mafsbx_error *err);
/* The same with the content read from `fd` (a spool) at offsets 0..len. */
int mafsbx_files_write_fd(struct mafsbx_freezer *fz, const struct mafsbx_files_target *t, const char *path,
			  int fd, uint64_t len, mode_t mode, long long deadline_ms, struct mafsbx_error *err);

/*
 * The same, staged so that a PUT cut midway (a dropped connection, an engine
 * that stops) never leaves `path` truncated: the engine extracts a tar as it
 * arrives, so the content goes under `stage` (one component, in the same
 * directory as `path`) and a hard-link entry after it puts it onto `path`
 * (the engine removes the old file and links the new one: `path` is its old
 * content or its new content, whole). The link needs the whole staged entry
 * before it, so a cut leaves at most a partial `stage`. Once the PUT was
 * issued (*sent true), success included, the sibling `stage` may exist and
 * is the caller's to remove.
 */
int mafsbx_files_replace_fd(struct mafsbx_freezer *fz, const struct mafsbx_files_target *t, const char *path,
			    int fd, uint64_t len, mode_t mode, const char *stage, bool *sent, long long deadline_ms,
			    struct mafsbx_error *err);

/*
 * mkdir: the same rules as a write; the directory gets `mode` (0: 0755) and
 * t->uid:t->gid, missing parents from the working directory down 0755.
 * Anything already there (directory included): EK_CONFLICT EEXIST.
 */
int mafsbx_files_mkdir(struct mafsbx_freezer *fz, const struct mafsbx_files_target *t, const char *path,
		       mode_t mode, long long deadline_ms, struct mafsbx_error *err);

/*
 * Work-directory preparation (doc/upstream.md §4.8): under a freeze, stat every
 * component of `base` from `/` down; a link (EK_CONFINEMENT) or non-directory
 * (EK_NOT_DIR) fails. Missing components are made by one tar: ancestors
 * 0:0 0755, the base uid:gid 0755. Existing directories are untouched.
 * A base of "/" makes no engine call and takes no freeze.
 * *created (may be NULL) counts the directories made.
 */
int mafsbx_files_prepare_base(struct mafsbx_freezer *fz, const char *container, const char *base, uid_t uid,
			      gid_t gid, long long deadline_ms, unsigned *created, struct mafsbx_error *err);

/*
 * A listing of the directory `path` (relative to t->work_dir; "" or "." is
 * the work dir itself, never `/`) from its archive: the ancestor check down
 * to the directory itself (a link anywhere, the directory included, is
 * EK_CONFINEMENT; a non-directory EK_NOT_DIR; absent EK_NO_PATH), then ONE
 * archive GET under the same freeze, streamed into `l` (archlist.h, set up
 * by the caller with the directory's basename), which cuts it past its
 * bounds. 0: the listing is whole, and with a burst registry every entry's
 * stat (but a hard link's) is kept as the burst's answer, so that stats
 * within the burst need no HEAD, and with t->snaps the directory's, its
 * ancestors' and its entries' stats serve the stats that follow for
 * MAFSBX_LISTSNAP_VALID_MS without a freeze (listsnap.h); 1: it was cut (l->cut says how); <0: the
 * errors above, the archive refused as malformed (EK_PROTOCOL), or the
 * freeze's and the engine's.
 */
int mafsbx_files_list(struct mafsbx_freezer *fz, const struct mafsbx_files_target *t, const char *path,
		      long long deadline_ms, struct mafsbx_archlist *l, struct mafsbx_error *err);

#endif
