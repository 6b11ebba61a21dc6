/*
 * error.h: the one error type of libmafsbx.
 *
 * Every fallible library call takes a `struct mafsbx_error *` out-parameter
 * (which may be NULL) and returns 0 / a negative errno, or a pointer / NULL.
 * The error carries a kind (what went wrong, for code), a positive errno (what
 * the filesystem returns), the upstream Python error class name (what a
 * .ctl reply reports as "type", so agents written against maf-sandbox see
 * the same names) and a human message that never contains host paths of the
 * container rootfs.
 */
#ifndef MAFSBX_ERROR_H
#define MAFSBX_ERROR_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

enum mafsbx_err_kind {
	MAFSBX_EK_NONE = 0,
	MAFSBX_EK_INVALID,       /* bad request / argument            EINVAL       ValueError */
	MAFSBX_EK_NAMETOOLONG,   /* component over 255 bytes          ENAMETOOLONG ValueError */
	MAFSBX_EK_NO_CONTAINER,  /* 404 "No such container"           ENOENT       LookupError */
	MAFSBX_EK_NO_PATH,       /* path absent in the guest          ENOENT       FileNotFoundError */
	MAFSBX_EK_NO_IMAGE,      /* image absent / pull failed        ENOENT       RuntimeError */
	MAFSBX_EK_NO_OBJECT,     /* other 404 (exec, network)         ENOENT       LookupError */
	MAFSBX_EK_CONFINEMENT,   /* symlink on the path               ELOOP        ValueError */
	MAFSBX_EK_NOT_DIR,       /* non-directory parent              ENOTDIR      NotADirectoryError */
	MAFSBX_EK_NOT_REGULAR,   /* target not a regular file / dir   EPERM        OSError */
	MAFSBX_EK_TOO_BIG,       /* over a byte cap                   EFBIG        SandboxTransferCapExceeded */
	MAFSBX_EK_CONFLICT,      /* 409 name in use / already paused  EEXIST/EBUSY RuntimeError */
	MAFSBX_EK_PAUSED,        /* 409 exec refused while paused     EBUSY        RuntimeError */
	MAFSBX_EK_NOT_RUNNING,   /* 409 pause of a stopped container  EBUSY        RuntimeError */
	MAFSBX_EK_UNSUPPORTED,   /* capability / egress not served    EOPNOTSUPP   SandboxCapabilityNotSupported */
	MAFSBX_EK_TIMEOUT,       /* engine call or exec timed out     ETIMEDOUT    TimeoutError */
	MAFSBX_EK_UNREACHABLE,   /* engine cannot be reached          ENOTCONN     RuntimeError */
	MAFSBX_EK_ENGINE,        /* any other engine failure          EIO          RuntimeError */
	MAFSBX_EK_PROTOCOL,      /* engine answered something we cannot parse  EIO RuntimeError */
	MAFSBX_EK_NOMEM,         /*                                   ENOMEM       MemoryError */
	MAFSBX_EK_SYSTEM,        /* local syscall failed              (its errno)  OSError */
	MAFSBX_EK_TOO_LARGE_MSG, /* request over the size cap         EMSGSIZE     ValueError */
};

#define MAFSBX_ERR_MSG_MAX 1024
#define MAFSBX_ERR_TYPE_MAX 64

struct mafsbx_error {
	enum mafsbx_err_kind kind;
	int err;                 /* positive errno */
	long http_status;        /* engine status when the error came from an answer, else 0 */
	char type[MAFSBX_ERR_TYPE_MAX];
	char message[MAFSBX_ERR_MSG_MAX];
};

/* Reset to "no error". Safe on NULL. */
void mafsbx_error_clear(struct mafsbx_error *e);

/*
 * Set kind, the kind's default errno and upstream type, and a formatted
 * message. Safe on NULL. Returns the negative errno so callers can write
 * `return mafsbx_error_set(err, MAFSBX_EK_INVALID, "bad %s", x);`.
 */
int mafsbx_error_set(struct mafsbx_error *e, enum mafsbx_err_kind kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int mafsbx_error_setv(struct mafsbx_error *e, enum mafsbx_err_kind kind, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

/* Same, with an explicit errno and/or type overriding the kind's defaults (type may be NULL). */
int mafsbx_error_set_full(struct mafsbx_error *e, enum mafsbx_err_kind kind, int err,
			  const char *type, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* Prefix the existing message with "what: " (for context as an error travels up). */
void mafsbx_error_prefix(struct mafsbx_error *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * The negative errno a failed call reports at a system-call edge (FUSE):
 * -e->err when the error carries one, else `fallback` (itself negative).
 */
int mafsbx_error_errno(const struct mafsbx_error *e, int fallback);

/*
 * The one "already gone" rule: true only when `e` is the engine's 404 and
 * the engine's own message names `target` (the container's or network's
 * name or ID as the call gave it) and says "no such" or "not found"
 * (Docker: "No such container: X", "network X not found"; Podman: "no
 * container with name or ID \"X\" found: no such container"). Any other
 * answer, a 404 without that message (a wrong path, a proxy in front of the
 * engine's socket) or a "not found" about something else ("context not
 * found") is a failure, never absence (doc/upstream.md §3.3). Safe on
 * NULL; an empty target is never gone.
 */
bool mafsbx_error_is_gone(const struct mafsbx_error *e, const char *target);

/* Defaults for a kind. */
int mafsbx_error_kind_errno(enum mafsbx_err_kind kind);
const char *mafsbx_error_kind_type(enum mafsbx_err_kind kind);
const char *mafsbx_error_kind_name(enum mafsbx_err_kind kind);

/* "ELOOP" for ELOOP; "E<number>" for unknown values (thread-safe: static strings or the buffer). */
const char *mafsbx_errno_name(int err);

/*
 * Map an engine answer to an error, following doc/engine-notes.md §8:
 *   404 + "No such container"            -> NO_CONTAINER
 *   404 + "Could not find the file"      -> NO_PATH (only when `path` is NULL or named exactly)
 *   404 + "No such image"/"no such image"-> NO_IMAGE
 *   404 otherwise                        -> NO_OBJECT
 *   409 + "is paused"                    -> PAUSED
 *   409 + "is not running"               -> NOT_RUNNING
 *   409 otherwise                        -> CONFLICT
 *   500 + "not a directory"              -> NOT_DIR
 *   500 + "too many links"               -> CONFINEMENT (ELOOP)
 *   500 + "file name too long"           -> NAMETOOLONG
 *   500 + "invalid argument"             -> INVALID
 *   400                                  -> INVALID
 *   other                                -> ENGINE
 * `body` is the engine's JSON error body (may be NULL or not JSON); its
 * "message" is used, with host paths of the container rootfs
 * (/var/lib/docker/...) scrubbed. `what` names the operation for the message.
 * Returns the negative errno.
 */
int mafsbx_error_from_engine(struct mafsbx_error *e, long status, const char *body, size_t body_len,
			     const char *what, const char *path);

/* Remove "/var/lib/docker/<driver>/<id>/merged" style host prefixes in place. */
void mafsbx_scrub_host_paths(char *msg);

#endif
