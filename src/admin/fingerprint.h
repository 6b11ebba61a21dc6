/*
 * fingerprint.h: the nothing-left-behind measurement of a sandbox, taken
 * from the host (mafsbx(1) FINGERPRINT; upstream's observer measures the
 * same from a ptrace-capable side container, doc/upstream.md §9.9).
 *
 * One snapshot holds:
 *  - the mounts of the container's mount namespace (from /proc/PID/mountinfo)
 *    except /proc, /sys and everything under them;
 *  - every entry of every such mount, each mount walked from its own
 *    confined root (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 *    RESOLVE_NO_MAGICLINKS, RESOLVE_NO_XDEV inside one mount; a link is
 *    read as text, never followed): path, type, mode, uid, gid, size, mtime,
 *    ctime, link target, device number, and the SHA-256 of each regular file
 *    (opened only after fstat said regular; fifos, devices and sockets are
 *    never opened);
 *  - every process of the container's cgroup: its PID in the container's
 *    PID namespace, its start time (clock ticks after boot, /proc/P/stat
 *    field 22) and its command line; and every zombie child of those
 *    processes (a zombie leaves its cgroup's process list but still holds a
 *    PID of the sandbox's pids limit).
 *
 * Bounded: entries, bytes hashed, directory depth and wall time; past a
 * bound the snapshot is refused (EK_TOO_BIG / EK_TIMEOUT) naming the bound.
 * A regular file is hashed up to the size fstat gave; when its size or mtime
 * moved while it was read it is recorded as "changing".
 *
 * Refused (EK_UNSUPPORTED, EOPNOTSUPP), as upstream's subject refuses: a
 * privileged container, a shared PID namespace, a writable bind mount or
 * volume declared on the container (its contents are not the sandbox's).
 *
 * Paths and command-line words are kept in an escaped, lossless, printable
 * form (mafsbx_fp_escape): "\\" for a backslash, "\xHH" for control bytes,
 * C1 controls and bytes that are not valid UTF-8. That form is the JSON
 * text and the diff text, so neither can carry raw bytes to a terminal.
 */
#ifndef MAFSBX_FINGERPRINT_H
#define MAFSBX_FINGERPRINT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "error.h"

struct mafsbx_engine;

#define MAFSBX_FP_FORMAT "mafsbx-fingerprint/1"

struct mafsbx_fp_limits {
	uint64_t max_entries;     /* filesystem entries + processes; default 250,000 */
	uint64_t max_hash_bytes;  /* bytes of regular files hashed; default 1 GiB */
	long max_ms;              /* wall time of the whole snapshot; default 30,000 */
	unsigned max_depth;       /* directory nesting below a mount; default 256 */
};
void mafsbx_fp_limits_default(struct mafsbx_fp_limits *l);

struct mafsbx_fp_mount {
	char *path;               /* escaped mount point */
	char *fstype;             /* escaped */
	bool ro;
};

enum mafsbx_fp_type {
	MAFSBX_FP_FILE = 'f',
	MAFSBX_FP_DIR = 'd',
	MAFSBX_FP_LINK = 'l',
	MAFSBX_FP_FIFO = 'p',
	MAFSBX_FP_SOCKET = 's',
	MAFSBX_FP_CHAR = 'c',
	MAFSBX_FP_BLOCK = 'b',
};
const char *mafsbx_fp_type_name(int type);     /* "file", "dir", ... */
int mafsbx_fp_type_from_name(const char *name); /* 0 when unknown */

struct mafsbx_fp_entry {
	char *path;               /* escaped absolute guest path */
	int type;                 /* enum mafsbx_fp_type */
	uint32_t mode;            /* permission and set-id bits (& 07777) */
	uint32_t uid, gid;        /* as the host sees them */
	uint64_t size;
	int64_t mtime_s, ctime_s;
	uint32_t mtime_ns, ctime_ns;
	uint32_t rdev_major, rdev_minor;   /* char/block only */
	char *target;             /* links: escaped target text; else NULL */
	char sha256[65];          /* files: lowercase hex; else "" */
	bool changing;            /* files: size or mtime moved while hashed */
};

struct mafsbx_fp_process {
	long long pid;            /* in the container's PID namespace */
	unsigned long long start; /* clock ticks after boot */
	char **argv;              /* escaped words, argc of them */
	size_t argc;
	bool truncated;           /* the command line was longer than 4096 bytes */
	bool zombie;              /* exited, not reaped: it still holds a PID of the sandbox's limit */
	char *name;               /* the command name of /proc/P/stat, escaped, or NULL: a zombie has no
				   * command line, and this is all that says which process it was */
};

struct mafsbx_fp {
	char id[65];
	char *name;
	char started_at[64];
	char taken_at[32];        /* UTC, ISO 8601 */
	struct mafsbx_fp_limits limits;
	struct mafsbx_fp_mount *mounts;
	size_t n_mounts;
	struct mafsbx_fp_entry *entries;   /* sorted by path (bytes) */
	size_t n_entries, cap_entries;
	struct mafsbx_fp_process *procs;   /* sorted by pid, start */
	size_t n_procs, cap_procs;
	uint64_t bytes_hashed;
	long long duration_ms;
};
void mafsbx_fp_free(struct mafsbx_fp *fp);

/*
 * Take one snapshot of the running container `container` (name or ID).
 * `lim` NULL means the defaults. Needs root on the engine's host (pin.h).
 * Errors: the refusals and bounds above; pin.h's errors; EK_SYSTEM naming
 * the guest path for anything that could not be measured.
 */
int mafsbx_fingerprint_take(struct mafsbx_engine *e, const char *container, const struct mafsbx_fp_limits *lim,
			    struct mafsbx_fp **out, struct mafsbx_error *err);

/* ---- pure parts (unit-tested) ------------------------------------------ */

/* Escape `len` raw bytes (see above). malloc'd, or NULL on ENOMEM. */
char *mafsbx_fp_escape(const char *raw, size_t len);

/*
 * Parse /proc/PID/mountinfo text into the measured mounts: mount points
 * unescaped from the kernel's octal form, then escaped as above; /proc, /sys
 * and everything under them dropped; a mount point seen twice kept once (the
 * last, which is the one a path reaches); sorted by path. `raw_paths`
 * (optional) receives the raw mount points, parallel to *out.
 * 0, -EINVAL (a malformed line) or -ENOMEM.
 */
int mafsbx_fp_mountinfo_parse(const char *text, struct mafsbx_fp_mount **out, char ***raw_paths, size_t *n);
void mafsbx_fp_mounts_free(struct mafsbx_fp_mount *m, char **raw_paths, size_t n);

/* Snapshot <-> JSON (the -o / --json form). from_json: EK_INVALID naming what is wrong. */
json_t *mafsbx_fp_to_json(const struct mafsbx_fp *fp);
int mafsbx_fp_from_json(const json_t *j, struct mafsbx_fp **out, struct mafsbx_error *err);

/*
 * Compare two snapshots; print one line per added ("+ "), removed ("- ") and
 * changed ("~ ") mount, entry and process to `out` (may be NULL), and return
 * the number of lines. Default exclusions: the ctime of /etc/hostname,
 * /etc/hosts and /etc/resolv.conf (the engine's archive calls touch them),
 * and the mtime, ctime and size of directories (they move whenever anything
 * is created or removed inside, and an ext4 directory never shrinks: the
 * entries themselves say what is there). MAFSBX_FP_STRICT compares those too.
 */
#define MAFSBX_FP_STRICT 0x1u
size_t mafsbx_fp_diff(const struct mafsbx_fp *before, const struct mafsbx_fp *after, unsigned flags, FILE *out);

/* The command name of a /proc/P/stat line (between the first "(" and the last ")": the name
 * itself may hold either), escaped; NULL when the line has none or on ENOMEM. */
char *mafsbx_fp_stat_name(const char *stat);

/* Append an entry / process, taking its strings (path, target; argv, name) on success; exposed so unit tests
 * can build snapshots. 0 or -ENOMEM (the caller still owns the strings). */
int mafsbx_fp_add_entry(struct mafsbx_fp *fp, const struct mafsbx_fp_entry *e);
int mafsbx_fp_add_process(struct mafsbx_fp *fp, const struct mafsbx_fp_process *p);
/* Sort entries and processes into their canonical order (the walker does it). */
void mafsbx_fp_sort(struct mafsbx_fp *fp);

#endif
