/*
 * spec.h: the JSON requests of the .ctl transactions (doc/protocol.md "The transactions":
 * acquire, dispose, exec) parsed into plain structs, with validation that
 * names the offending field. Pure code (jansson only): no engine call.
 *
 * Errors: a malformed request is EK_INVALID (EINVAL) with the message
 * "field 'x': problem" (or "request: problem" for the object as a whole); a
 * capability, egress mode or OS family the backend cannot serve is
 * EK_UNSUPPORTED (EOPNOTSUPP). Unknown fields are always refused.
 *
 * Choices the protocol leaves open (documented in mafsbxfs(1) CONTROL FILES):
 *  - `image_id` (acquire): a pinned image ID that takes precedence over
 *    `image` (doc/upstream.md §1.3); like `image` it is passed on unparsed, so only
 *    an empty string, a space or a control character is refused.
 *  - `instance_id` (dispose, with a key: scope, thread and agent): only the
 *    container of exactly that ID, when it carries the key (doc/upstream.md §8.4).
 *  - `work_dir` null or absent means /maf-sandbox/work; an explicit value must
 *    be absolute, is kept exactly as given (it is the work-dir.v1 label), and
 *    must not contain NUL, backslash or control characters; at most 4095 bytes.
 *  - `outputs` are literal relative paths: non-empty, no leading '/', no ".."
 *    or "." or empty segment, no backslash, no ASCII 0-31, each segment
 *    <= 255 bytes, valid UTF-8; duplicates are dropped.
 *  - exec `cwd` is relative to the sandbox's work_dir; ".." may not climb
 *    above it. An absolute cwd may name any directory of the guest, as
 *    `docker exec -w` takes it (doc/protocol.md "The transactions"; see mafsbx_exec_cwd_resolve).
 *  - exec `timeout` is seconds (integer or real), > 0 and <= the configured
 *    ceiling (default 300); absent means the ceiling.
 *  - `limits`: optional object with any of max_read_bytes (per file read out
 *    of the sandbox), max_write_bytes (per file written in), max_total_bytes,
 *    max_files, or the upstream-shaped files_in / files_out objects
 *    {max_bytes_per_file, max_total_bytes, max_files}. Values are positive
 *    integers at most the backend ceilings (64 MiB per file, 256 MiB total,
 *    256 files); over a ceiling is EINVAL naming the field (upstream:
 *    SandboxTransferLimitsNotPermitted, a PermissionError).
 */
#ifndef MAFSBX_SPEC_H
#define MAFSBX_SPEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "names.h"

/* Capabilities a spec may require (bit set). */
enum mafsbx_cap {
	MAFSBX_CAP_EXEC = 1u << 0,
	MAFSBX_CAP_FILES_IN = 1u << 1,
	MAFSBX_CAP_FILES_OUT = 1u << 2,
	MAFSBX_CAP_FILES_DELETE = 1u << 3,
	MAFSBX_CAP_HOST_TOOLS = 1u << 4,
	MAFSBX_CAP_RECLAIM = 1u << 5,    /* .ctl/dispose {"name", "reclaim"} (reclaim.h) */
};
#define MAFSBX_CAP_ALL 0x3fu
#define MAFSBX_CAP_DEFAULT (MAFSBX_CAP_EXEC | MAFSBX_CAP_FILES_IN | MAFSBX_CAP_FILES_OUT)
#define MAFSBX_CAP_ANY_FILES (MAFSBX_CAP_FILES_IN | MAFSBX_CAP_FILES_OUT | MAFSBX_CAP_FILES_DELETE)

/* "exec", "files_in", ... for one bit; NULL for anything else. */
const char *mafsbx_cap_name(unsigned cap);
/* Bit for a name, 0 when unknown. */
unsigned mafsbx_cap_from_name(const char *name);

enum mafsbx_egress { MAFSBX_EGRESS_CLOSED = 0, MAFSBX_EGRESS_ALLOWLIST = 1 };
#define MAFSBX_EGRESS_PATTERN_MAX 255   /* bytes per egress_allow entry */
const char *mafsbx_egress_name(enum mafsbx_egress e);

enum mafsbx_isolation_scope { MAFSBX_SCOPE_CONVERSATION = 0, MAFSBX_SCOPE_CALL = 1 };
const char *mafsbx_isolation_scope_name(enum mafsbx_isolation_scope s);

enum mafsbx_os_family { MAFSBX_OS_ANY = 0, MAFSBX_OS_POSIX = 1, MAFSBX_OS_WINDOWS = 2 };

/* Backend transfer ceilings (doc/upstream.md §1.4): named constants, not configuration. */
#define MAFSBX_CEIL_BYTES_PER_FILE (64ull * 1024 * 1024)
#define MAFSBX_CEIL_TOTAL_BYTES (256ull * 1024 * 1024)
#define MAFSBX_CEIL_FILES 256u
/* Spec defaults when a request says nothing (upstream core). */
#define MAFSBX_DEFAULT_BYTES_PER_FILE (8ull * 1024 * 1024)
#define MAFSBX_DEFAULT_TOTAL_BYTES (32ull * 1024 * 1024)
#define MAFSBX_DEFAULT_FILES 64u

#define MAFSBX_WORK_DIR_MAX 4095
#define MAFSBX_DEFAULT_EXEC_TIMEOUT_S 300          /* a request's timeout when it names none */
#define MAFSBX_DEFAULT_EXEC_TIMEOUT_MAX_S 86400     /* the ceiling of a request's timeout: 24 h */
/* exec_timeout_max_s: no ceiling (the mount's -o max_exec_timeout=0) */
#define MAFSBX_EXEC_TIMEOUT_NO_CEILING (-1L)
/* Without a ceiling a request's timeout is still kept as a finite deadline:
 * anything longer (100 years) is this, which no clock reaches. */
#define MAFSBX_EXEC_TIMEOUT_LIMIT_S (100L * 365 * 86400)

struct mafsbx_transfer_limits {
	uint64_t max_bytes_per_file;
	uint64_t max_total_bytes;
	uint32_t max_files;
};

/* Parsing context: what the mount was configured with. NULL means defaults. */
struct mafsbx_spec_config {
	const char *default_image;   /* -o image=; NULL or "" = none, so "image" is required */
	long exec_timeout_max_s;     /* ceiling of an exec's timeout: 0 = 86400, MAFSBX_EXEC_TIMEOUT_NO_CEILING = none */
	long exec_timeout_s;         /* an exec's timeout when it names none: <= 0 = 300; at most the ceiling */
};

/* ---- acquire ----------------------------------------------------------- */

struct mafsbx_acquire_spec {
	struct mafsbx_key key;       /* all four strings owned; call is "" when absent */
	char *kind;
	char *image;                 /* the request's image, else the configured default; NULL when only image_id */
	char *image_id;              /* pinned image ID (doc/upstream.md §1.3): takes precedence over image; NULL = none */
	char *work_dir;              /* never NULL: default /maf-sandbox/work */
	bool work_dir_explicit;
	unsigned caps;               /* enum mafsbx_cap bits */
	enum mafsbx_egress egress;
	char **egress_allow;         /* n_egress_allow strings, owned */
	size_t n_egress_allow;
	char **outputs;              /* declared outputs, n_outputs, owned, duplicates removed */
	size_t n_outputs;
	char **env;                  /* "K=V", NULL-terminated, owned; NULL when none */
	size_t n_env;
	json_t *labels;              /* object of strings (new reference) or NULL */
	enum mafsbx_isolation_scope isolation_scope;
	enum mafsbx_os_family requires_os_family;
	struct mafsbx_transfer_limits files_in;   /* defaults 8 MiB / 32 MiB / 64 */
	struct mafsbx_transfer_limits files_out;
	bool limits_given;
};

/*
 * Parse and validate an acquire request. *out is a new spec (free with
 * mafsbx_acquire_spec_free). The egress "allowlist" passes parsing; whether
 * the backend can serve it is the backend's decision (EOPNOTSUPP there).
 * "unrestricted" is refused here with EOPNOTSUPP.
 */
int mafsbx_acquire_spec_parse(const json_t *req, const struct mafsbx_spec_config *cfg,
			      struct mafsbx_acquire_spec **out, struct mafsbx_error *err);
void mafsbx_acquire_spec_free(struct mafsbx_acquire_spec *s);

/* ---- dispose ----------------------------------------------------------- */

enum mafsbx_dispose_by {
	MAFSBX_DISPOSE_BY_NAME = 1,  /* {"name"} */
	MAFSBX_DISPOSE_BY_KEY = 2,   /* {"scope","thread","agent","call"?,"kind"?} */
	MAFSBX_DISPOSE_BY_SCOPE = 3, /* {"scope","thread"}: the whole conversation */
};

struct mafsbx_dispose_spec {
	enum mafsbx_dispose_by by;
	char *name;                  /* BY_NAME: a workload name (maf-sandbox-docker-<12 hex>) */
	struct mafsbx_key key;       /* BY_KEY / BY_SCOPE: owned; agent NULL for BY_SCOPE, call "" when absent */
	char *kind;                  /* BY_KEY: NULL = every kind of that key */
	char *reclaim;               /* BY_NAME only: {"name", "reclaim": DIR} removes DIR instead (reclaim.h) */
	char *instance_id;           /* BY_KEY only: remove only this container instance (doc/upstream.md §8.4) */
};

int mafsbx_dispose_spec_parse(const json_t *req, struct mafsbx_dispose_spec **out, struct mafsbx_error *err);
void mafsbx_dispose_spec_free(struct mafsbx_dispose_spec *s);

/* ---- exec -------------------------------------------------------------- */

/* "on_timeout": what a timeout does where the command can be killed (doc/protocol.md) */
enum mafsbx_on_timeout {
	MAFSBX_ON_TIMEOUT_KILL = 0,    /* "kill" (default): kill the command's processes, keep the sandbox */
	MAFSBX_ON_TIMEOUT_DISPOSE = 1, /* "dispose": dispose the sandbox, as upstream */
};

struct mafsbx_exec_spec {
	char *sandbox;               /* workload name */
	char **argv;                 /* NULL-terminated, owned; `command` becomes {"sh","-c",cmd} */
	size_t argc;
	bool shell;                  /* came from "command" */
	char *cwd;                   /* as given (never NULL: "." by default); resolved at exec time */
	char **env;                  /* "K=V", NULL-terminated, owned; NULL when none */
	size_t n_env;
	unsigned char *stdin_data;   /* exact bytes (decoded stdin_b64, or stdin's UTF-8) */
	size_t stdin_len;
	bool has_stdin;
	long timeout_ms;             /* > 0 */
	enum mafsbx_on_timeout on_timeout;
	bool detach;                 /* "detach": true (the caller runs it in the background) */
	char *user;                  /* "user" (docker exec -u: NAME, UID, NAME:GROUP, UID:GID); NULL: the image's */
};

int mafsbx_exec_spec_parse(const json_t *req, const struct mafsbx_spec_config *cfg,
			   struct mafsbx_exec_spec **out, struct mafsbx_error *err);
void mafsbx_exec_spec_free(struct mafsbx_exec_spec *s);

/* ---- helpers shared with the backend and the reply builder -------------- */

/* Parse text as one JSON object; a syntax error is EINVAL "request: ..." with the position. */
int mafsbx_spec_parse_json(const char *text, size_t len, json_t **out, struct mafsbx_error *err);

/* An env key: [A-Za-z_][A-Za-z0-9_]*, at most 255 bytes. */
bool mafsbx_env_key_valid(const char *key);

/*
 * Validate one output name (the narrow rule above). 0, or EINVAL with a
 * message naming `field` (e.g. "outputs[2]").
 */
int mafsbx_output_name_check(const char *name, const char *field, struct mafsbx_error *err);

/*
 * Resolve an exec cwd against work_dir: "." or "" is work_dir itself; a
 * relative path joins under it (lexically normalised, ".." never climbing
 * above work_dir); an absolute one may name any directory of the guest
 * (normalised), as `docker exec -w` takes it.
 * Returns a malloc'd absolute path, or NULL with EINVAL "field 'cwd': ...".
 */
char *mafsbx_exec_cwd_resolve(const char *work_dir, const char *cwd, struct mafsbx_error *err);

#endif
