/*
 * error.c: the error type, its defaults per kind, and the one mapping from
 * engine answers (status + message) to a kind and errno, as measured in
 * doc/engine-notes.md §8.
 */
#include "error.h"

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "utf8.h"

struct kind_info {
	const char *name;
	int err;
	const char *type;
};

static const struct kind_info kinds[] = {
	[MAFSBX_EK_NONE] = { "none", 0, "" },
	[MAFSBX_EK_INVALID] = { "invalid", EINVAL, "ValueError" },
	[MAFSBX_EK_NAMETOOLONG] = { "name-too-long", ENAMETOOLONG, "ValueError" },
	[MAFSBX_EK_NO_CONTAINER] = { "no-container", ENOENT, "LookupError" },
	[MAFSBX_EK_NO_PATH] = { "no-path", ENOENT, "FileNotFoundError" },
	[MAFSBX_EK_NO_IMAGE] = { "no-image", ENOENT, "RuntimeError" },
	[MAFSBX_EK_NO_OBJECT] = { "no-object", ENOENT, "LookupError" },
	[MAFSBX_EK_CONFINEMENT] = { "confinement", ELOOP, "ValueError" },
	[MAFSBX_EK_NOT_DIR] = { "not-a-directory", ENOTDIR, "NotADirectoryError" },
	[MAFSBX_EK_NOT_REGULAR] = { "not-regular", EPERM, "OSError" },
	[MAFSBX_EK_TOO_BIG] = { "too-big", EFBIG, "SandboxTransferCapExceeded" },
	[MAFSBX_EK_CONFLICT] = { "conflict", EEXIST, "RuntimeError" },
	[MAFSBX_EK_PAUSED] = { "paused", EBUSY, "RuntimeError" },
	[MAFSBX_EK_NOT_RUNNING] = { "not-running", EBUSY, "RuntimeError" },
	[MAFSBX_EK_UNSUPPORTED] = { "unsupported", EOPNOTSUPP, "SandboxCapabilityNotSupported" },
	[MAFSBX_EK_TIMEOUT] = { "timeout", ETIMEDOUT, "TimeoutError" },
	[MAFSBX_EK_UNREACHABLE] = { "unreachable", ENOTCONN, "RuntimeError" },
	[MAFSBX_EK_ENGINE] = { "engine", EIO, "RuntimeError" },
	[MAFSBX_EK_PROTOCOL] = { "protocol", EIO, "RuntimeError" },
	[MAFSBX_EK_NOMEM] = { "nomem", ENOMEM, "MemoryError" },
	[MAFSBX_EK_SYSTEM] = { "system", EIO, "OSError" },
	[MAFSBX_EK_TOO_LARGE_MSG] = { "message-too-large", EMSGSIZE, "ValueError" },
};

static const struct kind_info *kind_info(enum mafsbx_err_kind k)
{
	if ((unsigned)k >= sizeof(kinds) / sizeof(kinds[0]) || !kinds[k].name)
		return &kinds[MAFSBX_EK_ENGINE];
	return &kinds[k];
}

int mafsbx_error_errno(const struct mafsbx_error *e, int fallback)
{
	return e && e->err > 0 ? -e->err : fallback;
}

bool mafsbx_error_is_gone(const struct mafsbx_error *e, const char *target)
{
	static const char said[] = "engine answered 404: ";
	if (!e || !target || !*target || e->http_status != 404)
		return false;
	const char *msg = strstr(e->message, said);
	if (!msg)
		return false;
	msg += sizeof(said) - 1;
	return strcasestr(msg, target) && (strcasestr(msg, "no such") || strcasestr(msg, "not found"));
}

int mafsbx_error_kind_errno(enum mafsbx_err_kind k) { return kind_info(k)->err; }
const char *mafsbx_error_kind_type(enum mafsbx_err_kind k) { return kind_info(k)->type; }
const char *mafsbx_error_kind_name(enum mafsbx_err_kind k) { return kind_info(k)->name; }

void mafsbx_error_clear(struct mafsbx_error *e)
{
	if (!e)
		return;
	e->kind = MAFSBX_EK_NONE;
	e->err = 0;
	e->http_status = 0;
	e->type[0] = '\0';
	e->message[0] = '\0';
}

__attribute__((format(printf, 5, 0)))
static int set_common(struct mafsbx_error *e, enum mafsbx_err_kind kind, int err, const char *type,
		      const char *fmt, va_list ap)
{
	const struct kind_info *ki = kind_info(kind);
	if (err <= 0)
		err = ki->err ? ki->err : EIO;
	if (!e)
		return -err;
	e->kind = kind;
	e->err = err;
	e->http_status = 0;
	snprintf(e->type, sizeof(e->type), "%s", type ? type : ki->type);
	vsnprintf(e->message, sizeof(e->message), fmt, ap);
	return -err;
}

int mafsbx_error_setv(struct mafsbx_error *e, enum mafsbx_err_kind kind, const char *fmt, va_list ap)
{
	return set_common(e, kind, 0, NULL, fmt, ap);
}

int mafsbx_error_set(struct mafsbx_error *e, enum mafsbx_err_kind kind, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = set_common(e, kind, 0, NULL, fmt, ap);
	va_end(ap);
	return r;
}

int mafsbx_error_set_full(struct mafsbx_error *e, enum mafsbx_err_kind kind, int err, const char *type,
			  const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = set_common(e, kind, err, type, fmt, ap);
	va_end(ap);
	return r;
}

void mafsbx_error_prefix(struct mafsbx_error *e, const char *fmt, ...)
{
	if (!e)
		return;
	char pre[512], old[MAFSBX_ERR_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(pre, sizeof(pre), fmt, ap);
	va_end(ap);
	snprintf(old, sizeof(old), "%s", e->message);
	snprintf(e->message, sizeof(e->message), "%s: %s", pre, old);
}

const char *mafsbx_errno_name(int err)
{
	switch (err) {
	case 0: return "OK";
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case ESRCH: return "ESRCH";
	case EIO: return "EIO";
	case E2BIG: return "E2BIG";
	case EBADF: return "EBADF";
	case ENOMEM: return "ENOMEM";
	case EACCES: return "EACCES";
	case EBUSY: return "EBUSY";
	case EEXIST: return "EEXIST";
	case ENOTDIR: return "ENOTDIR";
	case EISDIR: return "EISDIR";
	case EINVAL: return "EINVAL";
	case EFBIG: return "EFBIG";
	case ENOSPC: return "ENOSPC";
	case ESPIPE: return "ESPIPE";
	case EROFS: return "EROFS";
	case ENAMETOOLONG: return "ENAMETOOLONG";
	case ENOSYS: return "ENOSYS";
	case ENOTEMPTY: return "ENOTEMPTY";
	case EXDEV: return "EXDEV";
	case EMFILE: return "EMFILE";
	case ELOOP: return "ELOOP";
	case EMSGSIZE: return "EMSGSIZE";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case ENOTCONN: return "ENOTCONN";
	case ETIMEDOUT: return "ETIMEDOUT";
	case ECONNREFUSED: return "ECONNREFUSED";
	case EPROTO: return "EPROTO";
	case ECANCELED: return "ECANCELED";
	case EAGAIN: return "EAGAIN";
	case EINTR: return "EINTR";
	case ENODATA: return "ENODATA";
	case ESHUTDOWN: return "ESHUTDOWN";
	default: return "EUNKNOWN";
	}
}

void mafsbx_scrub_host_paths(char *msg)
{
	/*
	 * The daemon's 500 messages name the host path of the container rootfs
	 * (".../overlay2/<id>/merged/w/file"). Replace everything from
	 * "/var/lib/docker" up to and including "/merged" (or the next space
	 * when there is no "/merged") with "<rootfs>", so the guest path stays.
	 */
	for (;;) {
		char *p = strstr(msg, "/var/lib/docker");
		if (!p)
			return;
		char *end = strstr(p, "/merged");
		size_t cut;
		if (end && !memchr(p, ' ', (size_t)(end - p)))
			cut = (size_t)(end - p) + strlen("/merged");
		else
			cut = strcspn(p, " :\"");
		static const char repl[] = "<rootfs>";
		size_t rest = strlen(p + cut);
		if (cut < sizeof(repl) - 1)
			return; /* cannot happen for a real path; avoid growing */
		memcpy(p, repl, sizeof(repl) - 1);
		memmove(p + sizeof(repl) - 1, p + cut, rest + 1);
	}
}

/*
 * Does `path` appear at msg[0..mlen) as the engine would print it? Returns
 * the number of message bytes it spans, or 0. Valid UTF-8 must match
 * byte for byte; each byte Go deems invalid must be "\xEF\xBF\xBD" (U+FFFD):
 * the engine's JSON encoder replaces each such byte, one by one.
 */
static size_t path_at(const char *msg, size_t mlen, const char *path)
{
	static const char repl[] = "\xEF\xBF\xBD";
	const unsigned char *p = (const unsigned char *)path;
	size_t plen = strlen(path), i = 0, j = 0;
	while (i < plen) {
		size_t l = mafsbx_utf8_decode(p + i, plen - i, NULL, NULL);
		if (l) {
			if (mlen - j < l || memcmp(msg + j, p + i, l) != 0)
				return 0;
			i += l;
			j += l;
		} else {
			if (mlen - j < 3 || memcmp(msg + j, repl, 3) != 0)
				return 0;
			i++;
			j += 3;
		}
	}
	return j;
}

/*
 * True when msg[0..mlen) names `path` as a whole token (start/space before,
 * space/end after). Runs on the engine's whole message as it came, before
 * any truncation or host-path scrubbing, so a long path, one containing
 * "/var/lib/docker", and a non-UTF-8 one are all recognised.
 */
static int names_path(const char *msg, size_t mlen, const char *path)
{
	if (!path[0])
		return 0;
	for (size_t k = 0; k < mlen; k++) {
		if (k && msg[k - 1] != ' ')
			continue;
		size_t n = path_at(msg + k, mlen - k, path);
		if (n && (k + n == mlen || msg[k + n] == ' '))
			return 1;
	}
	return 0;
}

/*
 * The engine's message out of an answer's body: `message` its copy for
 * people (a JSON body's "message", else the body's first 300 bytes; line
 * ends dropped), *full and *full_len the whole of it for an exact match.
 * Returns the parsed JSON the pointers may point into (the caller drops it).
 */
static json_t *engine_message(const char *body, size_t body_len, char message[MAFSBX_ERR_MSG_MAX], const char **full,
			      size_t *full_len)
{
	json_t *j = NULL;
	message[0] = '\0';
	*full = NULL;
	*full_len = 0;
	if (!body || !body_len)
		return NULL;
	json_error_t jerr;
	j = json_loadb(body, body_len, 0, &jerr);
	json_t *jm = j ? json_object_get(j, "message") : NULL;
	if (json_is_string(jm)) {
		*full = json_string_value(jm);
		*full_len = json_string_length(jm);
		snprintf(message, MAFSBX_ERR_MSG_MAX, "%s", *full);
	} else {
		*full = body;
		*full_len = body_len;
		snprintf(message, MAFSBX_ERR_MSG_MAX, "%.*s", (int)(body_len > 300 ? 300 : body_len), body);
	}
	while (*full_len && ((*full)[*full_len - 1] == '\n' || (*full)[*full_len - 1] == '\r'))
		(*full_len)--;
	size_t l = strlen(message);
	while (l && (message[l - 1] == '\n' || message[l - 1] == '\r'))
		message[--l] = '\0';
	return j;
}

/* The kind of an engine's answer: its status, and the wording of both engine
 * generations and of Podman (doc/engines.md). `message` is the engine's, and
 * `path_named` says whether it named the path asked for. */
static enum mafsbx_err_kind engine_kind(long status, const char *message, const char *path, bool path_named)
{
	enum mafsbx_err_kind kind = MAFSBX_EK_ENGINE;
	switch (status) {
	case 400:
		kind = MAFSBX_EK_INVALID;
		break;
	case 404:
		if (strcasestr(message, "no such container"))
			kind = MAFSBX_EK_NO_CONTAINER;
		else if (strcasestr(message, "could not find") && (!path || path_named))
			kind = MAFSBX_EK_NO_PATH;
		else if (strcasestr(message, "no such image"))
			kind = MAFSBX_EK_NO_IMAGE;
		else
			kind = MAFSBX_EK_NO_OBJECT;
		break;
	case 409:
		/* A refused removal is a conflict whatever the state that refused
		 * it: Docker 26 words a paused one "cannot remove container ...:
		 * container is paused and must be unpaused first", 20.10 "You
		 * cannot remove a paused container ..." (doc/engines.md). */
		if (strcasestr(message, "cannot remove"))
			kind = MAFSBX_EK_CONFLICT;
		else if (strcasestr(message, "is paused"))
			kind = MAFSBX_EK_PAUSED;
		else if (strcasestr(message, "is not running"))
			kind = MAFSBX_EK_NOT_RUNNING;
		else
			kind = MAFSBX_EK_CONFLICT;
		break;
	case 500:
		if (strcasestr(message, "not a directory"))
			kind = MAFSBX_EK_NOT_DIR;
		else if (strcasestr(message, "too many links"))
			kind = MAFSBX_EK_CONFINEMENT;
		/* Docker 26 resolves in the container's own mount namespace and
		 * passes the kernel's ELOOP on (doc/engines.md) */
		else if (strcasestr(message, "too many levels of symbolic links"))
			kind = MAFSBX_EK_CONFINEMENT;
		else if (strcasestr(message, "file name too long"))
			kind = MAFSBX_EK_NAMETOOLONG;
		else if (strcasestr(message, "invalid argument"))
			kind = MAFSBX_EK_INVALID;
		break;
	default:
		break;
	}
	/* Podman 4's Docker-compatible API (doc/engines.md): its own wordings */
	if (status == 404 && kind == MAFSBX_EK_NO_OBJECT && strcasecmp(message, "no such file or directory") == 0)
		kind = MAFSBX_EK_NO_PATH;   /* the archive API's missing path: the bare errno text, no path named */
	/* a call the container's state does not allow is 500 "... container state improper", decided from
	 * Podman's own state: "\"exited\" is not running, can't pause", "\"ID\" is already paused" */
	if (status == 500 && strcasestr(message, "container state improper")) {
		if (strcasestr(message, "is not running"))
			kind = MAFSBX_EK_NOT_RUNNING;
		else if (strcasestr(message, "is already paused"))
			kind = MAFSBX_EK_CONFLICT;
	}
	/* a rootless engine with no cgroups (cgroup v1, driver "none") cannot pause: no freeze is possible */
	if (status >= 500 && strcasestr(message, "cgroups not configured"))
		kind = MAFSBX_EK_UNSUPPORTED;
	return kind;
}

int mafsbx_error_from_engine(struct mafsbx_error *e, long status, const char *body, size_t body_len,
			     const char *what, const char *path)
{
	char message[MAFSBX_ERR_MSG_MAX];
	/* The engine's whole message, for the exact-path match below; `message`
	 * is its truncated, scrubbed copy for people. */
	const char *full;
	size_t full_len;
	json_t *j = engine_message(body, body_len, message, &full, &full_len);
	/* Decided on the whole message before it is cut or scrubbed. */
	bool path_named = path && full && names_path(full, full_len, path);
	mafsbx_scrub_host_paths(message);
	enum mafsbx_err_kind kind = engine_kind(status, message, path, path_named);
	json_decref(j);
	int r;
	if (message[0])
		r = mafsbx_error_set(e, kind, "%s: engine answered %ld: %s", what ? what : "engine", status, message);
	else
		r = mafsbx_error_set(e, kind, "%s: engine answered %ld", what ? what : "engine", status);
	if (e)
		e->http_status = status;
	return r;
}
