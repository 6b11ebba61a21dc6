/*
 * spec.c: the .ctl request JSON (doc/protocol.md "The transactions") -> acquire / dispose /
 * exec specs. Everything a request can get wrong is caught here, before any
 * engine call, with a message naming the field ("field 'x': problem"), so a
 * user at a shell sees what to fix. The rules and the choices made where
 * mafsbxfs(1) CONTROL FILES is silent are listed in spec.h.
 */
#include "spec.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "buf.h"
#include "paths.h"
#include "utf8.h"

/* ---- names of enums ----------------------------------------------------- */

static const struct {
	unsigned bit;
	const char *name;
} cap_names[] = {
	{ MAFSBX_CAP_EXEC, "exec" },
	{ MAFSBX_CAP_FILES_IN, "files_in" },
	{ MAFSBX_CAP_FILES_OUT, "files_out" },
	{ MAFSBX_CAP_FILES_DELETE, "files_delete" },
	{ MAFSBX_CAP_HOST_TOOLS, "host_tools" },
	{ MAFSBX_CAP_RECLAIM, "reclaim" },
};

/* Upstream capabilities this backend never serves (doc/upstream.md §1.5): EOPNOTSUPP, not EINVAL. */
static const char *const unserved_caps[] = { "run_code", "files_list", "snapshot", "attached_identity" };

const char *mafsbx_cap_name(unsigned cap)
{
	for (size_t i = 0; i < MAFSBX_ARRAY_SIZE(cap_names); i++)
		if (cap_names[i].bit == cap)
			return cap_names[i].name;
	return NULL;
}

unsigned mafsbx_cap_from_name(const char *name)
{
	for (size_t i = 0; name && i < MAFSBX_ARRAY_SIZE(cap_names); i++)
		if (strcmp(cap_names[i].name, name) == 0)
			return cap_names[i].bit;
	return 0;
}

const char *mafsbx_egress_name(enum mafsbx_egress e)
{
	return e == MAFSBX_EGRESS_ALLOWLIST ? "allowlist" : "closed";
}

const char *mafsbx_isolation_scope_name(enum mafsbx_isolation_scope s)
{
	return s == MAFSBX_SCOPE_CALL ? "call" : "conversation";
}

/* ---- small validators --------------------------------------------------- */

static int bad(struct mafsbx_error *err, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int bad(struct mafsbx_error *err, const char *field, const char *fmt, ...)
{
	char msg[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return mafsbx_error_set(err, MAFSBX_EK_INVALID, "field '%s': %s", field, msg);
}

static int unsupported(struct mafsbx_error *err, const char *type, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int unsupported(struct mafsbx_error *err, const char *type, const char *field, const char *fmt, ...)
{
	char msg[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return mafsbx_error_set_full(err, MAFSBX_EK_UNSUPPORTED, 0, type, "field '%s': %s", field, msg);
}

static bool has_ctl(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return true;
	return false;
}

static int check_fields(const json_t *req, const char *const *allowed, struct mafsbx_error *err)
{
	if (!json_is_object(req))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "request: must be a JSON object");
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)req, k, v) {
		bool ok = false;
		for (size_t i = 0; allowed[i]; i++)
			if (strcmp(k, allowed[i]) == 0)
				ok = true;
		if (!ok) {
			char shown[128];
			snprintf(shown, sizeof(shown), "%s", k);
			for (char *p = shown; *p; p++)
				if ((unsigned char)*p < 0x20)
					*p = '?';
			return bad(err, shown, "unknown field");
		}
		(void)v;
	}
	return 0;
}

/* A string field: NULL *out when absent or null (if allowed). */
static int get_str(const json_t *req, const char *field, bool required, bool allow_empty, const char **out,
		   struct mafsbx_error *err)
{
	json_t *v = json_object_get(req, field);
	*out = NULL;
	if (!v || json_is_null(v)) {
		if (required)
			return bad(err, field, "required");
		return 0;
	}
	if (!json_is_string(v))
		return bad(err, field, "must be a string");
	if (strlen(json_string_value(v)) != json_string_length(v))
		return bad(err, field, "contains a NUL character");
	if (!allow_empty && json_string_length(v) == 0)
		return bad(err, field, "must not be empty");
	*out = json_string_value(v);
	return 0;
}

static int dup_to(char **dst, const char *s, struct mafsbx_error *err)
{
	*dst = strdup(s ? s : "");
	if (!*dst)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	return 0;
}

static void free_strv(char **v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

bool mafsbx_env_key_valid(const char *key)
{
	if (!key || !*key || strlen(key) > 255)
		return false;
	if (!((key[0] >= 'A' && key[0] <= 'Z') || (key[0] >= 'a' && key[0] <= 'z') || key[0] == '_'))
		return false;
	for (const char *p = key + 1; *p; p++)
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
			return false;
	return true;
}

/* env object -> NULL-terminated "K=V" vector. */
static int parse_env(const json_t *req, char ***out, size_t *n_out, struct mafsbx_error *err)
{
	json_t *env = json_object_get(req, "env");
	*out = NULL;
	*n_out = 0;
	if (!env || json_is_null(env))
		return 0;
	if (!json_is_object(env))
		return bad(err, "env", "must be an object of strings");
	size_t n = json_object_size(env), i = 0;
	char **v = calloc(n + 1, sizeof(*v));
	if (!v)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	const char *k;
	json_t *val;
	json_object_foreach(env, k, val) {
		char field[300];
		snprintf(field, sizeof(field), "env.%s", k);
		if (!mafsbx_env_key_valid(k)) {
			free_strv(v, i);
			return bad(err, "env", "invalid variable name (want [A-Za-z_][A-Za-z0-9_]*, at most 255 bytes)");
		}
		if (!json_is_string(val)) {
			free_strv(v, i);
			return bad(err, field, "must be a string");
		}
		if (strlen(json_string_value(val)) != json_string_length(val)) {
			free_strv(v, i);
			return bad(err, field, "contains a NUL character");
		}
		if (asprintf(&v[i], "%s=%s", k, json_string_value(val)) < 0) {
			v[i] = NULL;
			free_strv(v, i);
			return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
		}
		i++;
	}
	*out = v;
	*n_out = n;
	return 0;
}

int mafsbx_output_name_check(const char *name, const char *field, struct mafsbx_error *err)
{
	if (!name || !*name)
		return bad(err, field, "must not be empty");
	if (name[0] == '/')
		return bad(err, field, "must be a relative path");
	if (strchr(name, '\\'))
		return bad(err, field, "contains a backslash");
	if (has_ctl(name))
		return bad(err, field, "contains a control character");
	if (!mafsbx_utf8_valid(name, strlen(name)))
		return bad(err, field, "is not valid UTF-8");
	return mafsbx_path_check_segments(name, MAFSBX_SEG_STRICT, err, "field '%s':", field);
}

/* An absolute guest path given by a user: no NUL (already), backslash, control chars or ".." segment. */
static int check_abs_path(const char *s, const char *field, struct mafsbx_error *err)
{
	if (s[0] != '/')
		return bad(err, field, "must be an absolute path");
	if (strlen(s) > MAFSBX_WORK_DIR_MAX)
		return mafsbx_error_set(err, MAFSBX_EK_NAMETOOLONG, "field '%s': longer than %d bytes", field,
					MAFSBX_WORK_DIR_MAX);
	if (strchr(s, '\\'))
		return bad(err, field, "contains a backslash");
	if (has_ctl(s))
		return bad(err, field, "contains a control character");
	if (!mafsbx_utf8_valid(s, strlen(s)))
		return bad(err, field, "is not valid UTF-8");
	/* "//" and "." are cleaned lexically later; ".." never is */
	return mafsbx_path_check_segments(s, MAFSBX_SEG_ALLOW_EMPTY | MAFSBX_SEG_ALLOW_DOT, err, "field '%s':", field);
}

static int parse_u64_limit(const json_t *obj, const char *key, const char *prefix, uint64_t ceiling, uint64_t *dst,
			   bool *seen, struct mafsbx_error *err)
{
	json_t *v = json_object_get(obj, key);
	char field[96];
	snprintf(field, sizeof(field), "%s%s", prefix, key);
	if (!v)
		return 0;
	if (!json_is_integer(v))
		return bad(err, field, "must be an integer");
	json_int_t n = json_integer_value(v);
	if (n <= 0)
		return bad(err, field, "must be positive");
	if ((uint64_t)n > ceiling)
		return mafsbx_error_set_full(err, MAFSBX_EK_INVALID, EINVAL, "SandboxTransferLimitsNotPermitted",
					     "field '%s': %lld is over the backend ceiling %llu", field, (long long)n,
					     (unsigned long long)ceiling);
	*dst = (uint64_t)n;
	*seen = true;
	return 0;
}

static int parse_transfer(const json_t *obj, const char *prefix, struct mafsbx_transfer_limits *l, bool *seen,
			  struct mafsbx_error *err)
{
	static const char *const allowed[] = { "max_bytes_per_file", "max_total_bytes", "max_files", NULL };
	if (!json_is_object(obj))
		return bad(err, prefix, "must be an object");
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)obj, k, v) {
		bool ok = false;
		for (size_t i = 0; allowed[i]; i++)
			ok |= strcmp(k, allowed[i]) == 0;
		if (!ok) {
			char field[160];
			snprintf(field, sizeof(field), "%s.%.100s", prefix, k);
			return bad(err, field, "unknown field");
		}
	}
	char pre[64];
	snprintf(pre, sizeof(pre), "%s.", prefix);
	uint64_t files = l->max_files;
	int r = parse_u64_limit(obj, "max_bytes_per_file", pre, MAFSBX_CEIL_BYTES_PER_FILE, &l->max_bytes_per_file,
				seen, err);
	if (!r)
		r = parse_u64_limit(obj, "max_total_bytes", pre, MAFSBX_CEIL_TOTAL_BYTES, &l->max_total_bytes, seen, err);
	if (!r)
		r = parse_u64_limit(obj, "max_files", pre, MAFSBX_CEIL_FILES, &files, seen, err);
	l->max_files = (uint32_t)files;
	return r;
}

static int parse_limits(const json_t *req, struct mafsbx_acquire_spec *s, struct mafsbx_error *err)
{
	static const char *const allowed[] = { "max_read_bytes", "max_write_bytes", "max_total_bytes", "max_files",
					       "files_in", "files_out", NULL };
	json_t *l = json_object_get(req, "limits");
	if (!l || json_is_null(l))
		return 0;
	if (!json_is_object(l))
		return bad(err, "limits", "must be an object");
	const char *k;
	json_t *v;
	json_object_foreach(l, k, v) {
		bool ok = false;
		for (size_t i = 0; allowed[i]; i++)
			ok |= strcmp(k, allowed[i]) == 0;
		if (!ok) {
			char field[160];
			snprintf(field, sizeof(field), "limits.%.100s", k);
			return bad(err, field, "unknown field");
		}
	}
	bool seen = false;
	uint64_t u;
	int r;
	if ((r = parse_u64_limit(l, "max_read_bytes", "limits.", MAFSBX_CEIL_BYTES_PER_FILE,
				 &s->files_out.max_bytes_per_file, &seen, err)))
		return r;
	if ((r = parse_u64_limit(l, "max_write_bytes", "limits.", MAFSBX_CEIL_BYTES_PER_FILE,
				 &s->files_in.max_bytes_per_file, &seen, err)))
		return r;
	u = 0;
	if ((r = parse_u64_limit(l, "max_total_bytes", "limits.", MAFSBX_CEIL_TOTAL_BYTES, &u, &seen, err)))
		return r;
	if (u)
		s->files_in.max_total_bytes = s->files_out.max_total_bytes = u;
	u = 0;
	if ((r = parse_u64_limit(l, "max_files", "limits.", MAFSBX_CEIL_FILES, &u, &seen, err)))
		return r;
	if (u)
		s->files_in.max_files = s->files_out.max_files = (uint32_t)u;
	if ((v = json_object_get(l, "files_in")) && (r = parse_transfer(v, "limits.files_in", &s->files_in, &seen, err)))
		return r;
	if ((v = json_object_get(l, "files_out")) &&
	    (r = parse_transfer(v, "limits.files_out", &s->files_out, &seen, err)))
		return r;
	s->limits_given = seen;
	return 0;
}

/* A JSON array of strings -> owned vector (each checked by `each`, may be NULL). */
static int parse_str_array(const json_t *req, const char *field, char ***out, size_t *n_out, size_t max_items,
			   int (*each)(const char *s, const char *field, struct mafsbx_error *err),
			   struct mafsbx_error *err)
{
	json_t *a = json_object_get(req, field);
	*out = NULL;
	*n_out = 0;
	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a))
		return bad(err, field, "must be an array of strings");
	size_t n = json_array_size(a);
	if (n > max_items)
		return bad(err, field, "more than %zu entries", max_items);
	char **v = calloc(n + 1, sizeof(*v));
	if (!v)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	size_t kept = 0;
	for (size_t i = 0; i < n; i++) {
		json_t *e = json_array_get(a, i);
		char f[96];
		snprintf(f, sizeof(f), "%s[%zu]", field, i);
		int r = 0;
		if (!json_is_string(e))
			r = bad(err, f, "must be a string");
		else if (strlen(json_string_value(e)) != json_string_length(e))
			r = bad(err, f, "contains a NUL character");
		else if (each)
			r = each(json_string_value(e), f, err);
		if (r) {
			free_strv(v, kept);
			return r;
		}
		bool dup = false;
		for (size_t j = 0; j < kept; j++)
			dup |= strcmp(v[j], json_string_value(e)) == 0;
		if (dup)
			continue;
		if (!(v[kept] = strdup(json_string_value(e)))) {
			free_strv(v, kept);
			return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
		}
		kept++;
	}
	*out = v;
	*n_out = kept;
	return 0;
}

static int check_allow_pattern(const char *s, const char *field, struct mafsbx_error *err)
{
	if (!*s)
		return bad(err, field, "must not be empty");
	/* a DNS name is at most 253 bytes; the proxy refuses longer hosts anyway */
	if (strlen(s) > MAFSBX_EGRESS_PATTERN_MAX)
		return bad(err, field, "a host pattern is at most 255 bytes");
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p <= 0x20 || *p == 0x7f || *p == ',')
			return bad(err, field, "must be a host pattern without spaces, commas or control characters");
	return 0;
}

/* ---- acquire ----------------------------------------------------------- */

void mafsbx_acquire_spec_free(struct mafsbx_acquire_spec *s)
{
	if (!s)
		return;
	free((char *)s->key.scope);
	free((char *)s->key.thread);
	free((char *)s->key.agent);
	free((char *)s->key.call);
	free(s->kind);
	free(s->image);
	free(s->image_id);
	free(s->work_dir);
	free_strv(s->egress_allow, s->n_egress_allow);
	free_strv(s->outputs, s->n_outputs);
	free_strv(s->env, s->n_env);
	json_decref(s->labels);
	free(s);
}

static int parse_caps(const json_t *req, unsigned *caps, struct mafsbx_error *err)
{
	json_t *a = json_object_get(req, "capabilities");
	if (!a || json_is_null(a)) {
		*caps = MAFSBX_CAP_DEFAULT;
		return 0;
	}
	if (!json_is_array(a))
		return bad(err, "capabilities", "must be an array of strings");
	*caps = 0;
	size_t i;
	json_t *e;
	json_array_foreach(a, i, e) {
		char f[48];
		snprintf(f, sizeof(f), "capabilities[%zu]", i);
		if (!json_is_string(e))
			return bad(err, f, "must be a string");
		const char *name = json_string_value(e);
		unsigned bit = mafsbx_cap_from_name(name);
		if (!bit) {
			for (size_t j = 0; j < MAFSBX_ARRAY_SIZE(unserved_caps); j++)
				if (strcmp(name, unserved_caps[j]) == 0)
					return unsupported(err, "SandboxCapabilityNotSupported", f,
							   "capability '%s' is not served by the docker backend", name);
			return bad(err, f, "unknown capability (want exec, files_in, files_out, files_delete, host_tools, reclaim)");
		}
		*caps |= bit;
	}
	return 0;
}

static int parse_labels(const json_t *req, json_t **out, struct mafsbx_error *err)
{
	json_t *l = json_object_get(req, "labels");
	*out = NULL;
	if (!l || json_is_null(l))
		return 0;
	if (!json_is_object(l))
		return bad(err, "labels", "must be an object of strings");
	const char *k;
	json_t *v;
	json_object_foreach(l, k, v) {
		if (!*k || strlen(k) > 200 || has_ctl(k) || strchr(k, '='))
			return bad(err, "labels", "a key is empty, over 200 bytes, or has '=' or a control character");
		if (!json_is_string(v)) {
			char f[260];
			snprintf(f, sizeof(f), "labels.%s", k);
			return bad(err, f, "must be a string");
		}
	}
	*out = json_deep_copy(l);
	if (!*out)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	return 0;
}

/* An image reference or ID: passed to the engine unparsed, so only what cannot be one is refused. */
static int check_image(const char *image, const char *field, struct mafsbx_error *err)
{
	if (has_ctl(image) || strchr(image, ' '))
		return bad(err, field, "contains a space or a control character");
	return 0;
}

/* The key, kind, image (image_id) and work_dir of an acquire. */
static int acquire_strings(const json_t *req, const struct mafsbx_spec_config *cfg, struct mafsbx_acquire_spec *s,
			   struct mafsbx_error *err)
{
	const char *scope, *thread, *agent, *call, *kind, *image, *image_id, *work_dir;
	int r;
	if ((r = get_str(req, "scope", true, true, &scope, err)) || (r = get_str(req, "thread", true, true, &thread, err)) ||
	    (r = get_str(req, "agent", true, true, &agent, err)) || (r = get_str(req, "call", false, true, &call, err)) ||
	    (r = get_str(req, "kind", true, false, &kind, err)) || (r = get_str(req, "image", false, false, &image, err)) ||
	    (r = get_str(req, "image_id", false, false, &image_id, err)) ||
	    (r = get_str(req, "work_dir", false, false, &work_dir, err)))
		return r;
	if (!image && cfg && cfg->default_image && *cfg->default_image)
		image = cfg->default_image;
	if (!image && !image_id)
		return bad(err, "image", "required (no default image is configured)");
	if ((image && (r = check_image(image, "image", err))) || (image_id && (r = check_image(image_id, "image_id", err))))
		return r;
	if (has_ctl(kind))
		return bad(err, "kind", "contains a control character");
	if (work_dir && (r = check_abs_path(work_dir, "work_dir", err)))
		return r;
	if ((r = dup_to((char **)&s->key.scope, scope, err)) || (r = dup_to((char **)&s->key.thread, thread, err)) ||
	    (r = dup_to((char **)&s->key.agent, agent, err)) || (r = dup_to((char **)&s->key.call, call, err)) ||
	    (r = dup_to(&s->kind, kind, err)) || (r = dup_to(&s->image, image ? image : image_id, err)) ||
	    (image_id && (r = dup_to(&s->image_id, image_id, err))) ||
	    (r = dup_to(&s->work_dir, work_dir ? work_dir : MAFSBX_DEFAULT_WORK_DIR, err)))
		return r;
	s->work_dir_explicit = work_dir != NULL;
	return 0;
}

/* egress and egress_allow. */
static int acquire_egress(const json_t *req, struct mafsbx_acquire_spec *s, struct mafsbx_error *err)
{
	const char *v;
	int r = get_str(req, "egress", false, false, &v, err);
	if (r)
		return r;
	if (!v || strcmp(v, "closed") == 0)
		s->egress = MAFSBX_EGRESS_CLOSED;
	else if (strcmp(v, "allowlist") == 0)
		s->egress = MAFSBX_EGRESS_ALLOWLIST;
	else if (strcmp(v, "unrestricted") == 0)
		return unsupported(err, "SandboxEgressNotEnforced", "egress", "'unrestricted' is never served");
	else
		return bad(err, "egress", "unknown egress mode (want closed or allowlist)");
	if ((r = parse_str_array(req, "egress_allow", &s->egress_allow, &s->n_egress_allow, 256, check_allow_pattern,
				 err)))
		return r;
	if (s->n_egress_allow && s->egress != MAFSBX_EGRESS_ALLOWLIST)
		return bad(err, "egress_allow", "non-empty list requires egress 'allowlist'");
	return 0;
}

/* isolation_scope and requires_os_family. */
static int acquire_scope_os(const json_t *req, struct mafsbx_acquire_spec *s, struct mafsbx_error *err)
{
	const char *v;
	int r = get_str(req, "isolation_scope", false, false, &v, err);
	if (r)
		return r;
	if (!v || strcmp(v, "conversation") == 0) {
		s->isolation_scope = MAFSBX_SCOPE_CONVERSATION;
	} else if (strcmp(v, "call") == 0) {
		s->isolation_scope = MAFSBX_SCOPE_CALL;
		if (!*s->key.call)
			return bad(err, "call", "isolation_scope 'call' requires a non-empty call id");
	} else {
		return bad(err, "isolation_scope", "unknown isolation scope (want conversation or call)");
	}
	if ((r = get_str(req, "requires_os_family", false, false, &v, err)))
		return r;
	if (!v)
		s->requires_os_family = MAFSBX_OS_ANY;
	else if (strcmp(v, "posix") == 0)
		s->requires_os_family = MAFSBX_OS_POSIX;
	else if (strcmp(v, "windows") == 0)
		s->requires_os_family = MAFSBX_OS_WINDOWS;
	else
		return bad(err, "requires_os_family", "unknown OS family (want posix or windows)");
	return 0;
}

int mafsbx_acquire_spec_parse(const json_t *req, const struct mafsbx_spec_config *cfg,
			      struct mafsbx_acquire_spec **out, struct mafsbx_error *err)
{
	static const char *const allowed[] = { "scope", "thread", "agent", "call", "kind", "image", "image_id",
					       "work_dir", "capabilities", "egress", "egress_allow", "outputs", "env",
					       "labels", "isolation_scope", "requires_os_family", "limits", NULL };
	*out = NULL;
	int r = check_fields(req, allowed, err);
	if (r)
		return r;
	struct mafsbx_acquire_spec *s = calloc(1, sizeof(*s));
	if (!s)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	s->files_in = s->files_out = (struct mafsbx_transfer_limits){ MAFSBX_DEFAULT_BYTES_PER_FILE,
								      MAFSBX_DEFAULT_TOTAL_BYTES, MAFSBX_DEFAULT_FILES };
	if ((r = acquire_strings(req, cfg, s, err)) || (r = parse_caps(req, &s->caps, err)) ||
	    (r = acquire_egress(req, s, err)) ||
	    (r = parse_str_array(req, "outputs", &s->outputs, &s->n_outputs, MAFSBX_CEIL_FILES,
				 mafsbx_output_name_check, err)) ||
	    (r = parse_env(req, &s->env, &s->n_env, err)) || (r = parse_labels(req, &s->labels, err)) ||
	    (r = acquire_scope_os(req, s, err)) || (r = parse_limits(req, s, err))) {
		mafsbx_acquire_spec_free(s);
		return r;
	}
	*out = s;
	return 0;
}

/* ---- dispose ----------------------------------------------------------- */

void mafsbx_dispose_spec_free(struct mafsbx_dispose_spec *s)
{
	if (!s)
		return;
	free(s->name);
	free((char *)s->key.scope);
	free((char *)s->key.thread);
	free((char *)s->key.agent);
	free((char *)s->key.call);
	free(s->kind);
	free(s->reclaim);
	free(s->instance_id);
	free(s);
}

static void dispose_spec_freep(struct mafsbx_dispose_spec **s)
{
	mafsbx_dispose_spec_free(*s);
}

int mafsbx_dispose_spec_parse(const json_t *req, struct mafsbx_dispose_spec **out, struct mafsbx_error *err)
{
	static const char *const allowed[] = { "name", "scope", "thread", "agent", "call", "kind", "reclaim",
					       "instance_id", NULL };
	static const char *const key_fields[] = { "scope", "thread", "agent", "call", "kind", "instance_id" };
	*out = NULL;
	int r = check_fields(req, allowed, err);
	if (r)
		return r;
	__attribute__((cleanup(dispose_spec_freep))) struct mafsbx_dispose_spec *s = calloc(1, sizeof(*s));
	if (!s)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	const char *name, *scope, *thread, *agent, *call, *kind, *instance_id;
	if ((r = get_str(req, "name", false, false, &name, err)))
		return r;
	if (name) {
		for (size_t i = 0; i < MAFSBX_ARRAY_SIZE(key_fields); i++)
			if (json_object_get(req, key_fields[i]))
				return bad(err, key_fields[i], "not allowed together with 'name'");
		if (!mafsbx_is_workload_name(name))
			return bad(err, "name", "not a sandbox name (want %s<12 hex>)", MAFSBX_NAME_PREFIX);
		s->by = MAFSBX_DISPOSE_BY_NAME;
		if ((r = dup_to(&s->name, name, err)))
			return r;
		/* reclaim: the target rules need the work dir, so they are the backend's (reclaim.h) */
		const char *reclaim;
		if ((r = get_str(req, "reclaim", false, false, &reclaim, err)))
			return r;
		if (reclaim && (r = dup_to(&s->reclaim, reclaim, err)))
			return r;
		*out = move_ptr(s);
		return 0;
	}
	if (json_object_get(req, "reclaim"))
		return bad(err, "reclaim", "requires 'name'");
	if (!json_object_get(req, "scope") && !json_object_get(req, "thread"))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "request: needs 'name', or 'scope' and 'thread'");
	if ((r = get_str(req, "scope", true, true, &scope, err)) || (r = get_str(req, "thread", true, true, &thread, err)) ||
	    (r = get_str(req, "agent", false, true, &agent, err)) || (r = get_str(req, "call", false, true, &call, err)) ||
	    (r = get_str(req, "kind", false, false, &kind, err)) ||
	    (r = get_str(req, "instance_id", false, false, &instance_id, err)))
		return r;
	if (instance_id && (has_ctl(instance_id) || strchr(instance_id, '/')))
		return bad(err, "instance_id", "not a container ID");
	if (!agent) {
		if (instance_id)
			return bad(err, "instance_id", "requires 'agent' (the key the instance must carry)");
		if (call)
			return bad(err, "call", "requires 'agent'");
		if (kind)
			return bad(err, "kind", "requires 'agent'");
		s->by = MAFSBX_DISPOSE_BY_SCOPE;
	} else {
		s->by = MAFSBX_DISPOSE_BY_KEY;
		if ((r = dup_to((char **)&s->key.agent, agent, err)) || (r = dup_to((char **)&s->key.call, call, err)))
			return r;
		if ((kind && (r = dup_to(&s->kind, kind, err))) ||
		    (instance_id && (r = dup_to(&s->instance_id, instance_id, err))))
			return r;
	}
	if ((r = dup_to((char **)&s->key.scope, scope, err)) || (r = dup_to((char **)&s->key.thread, thread, err)))
		return r;
	if (s->by == MAFSBX_DISPOSE_BY_SCOPE && (r = dup_to((char **)&s->key.call, "", err)))
		return r;
	*out = move_ptr(s);
	return 0;
}

/* ---- exec -------------------------------------------------------------- */

void mafsbx_exec_spec_free(struct mafsbx_exec_spec *s)
{
	if (!s)
		return;
	free(s->sandbox);
	free_strv(s->argv, s->argc);
	free(s->cwd);
	free_strv(s->env, s->n_env);
	free(s->stdin_data);
	free(s->user);
	free(s);
}

/* Lexical check of a relative cwd: ".." never climbs above the work dir. */
static int check_rel_cwd(const char *cwd, struct mafsbx_error *err)
{
	long depth = 0;
	const char *p = cwd;
	while (*p) {
		size_t len = strcspn(p, "/");
		if (len > 255)
			return mafsbx_error_set(err, MAFSBX_EK_NAMETOOLONG, "field 'cwd': a segment is over 255 bytes");
		if (len == 2 && p[0] == '.' && p[1] == '.') {
			if (--depth < 0)
				return bad(err, "cwd", "climbs above the working directory");
		} else if (len > 0 && !(len == 1 && p[0] == '.')) {
			depth++;
		}
		p += len;
		if (*p == '/')
			p++;
	}
	return 0;
}

/* argv as given, or `command` as {"sh", "-c", command}: exactly one of the two. */
static int exec_argv(const json_t *req, struct mafsbx_exec_spec *s, struct mafsbx_error *err)
{
	const char *command;
	json_t *argv = json_object_get(req, "argv");
	if (argv && json_is_null(argv))
		argv = NULL;
	int r = get_str(req, "command", false, false, &command, err);
	if (r)
		return r;
	if (argv && command)
		return bad(err, "command", "give exactly one of 'argv' and 'command'");
	if (!argv && !command)
		return bad(err, "argv", "required (or 'command')");
	if (!argv) {
		const char *const sh[] = { "sh", "-c", command };
		if (!(s->argv = calloc(4, sizeof(char *))))
			return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
		for (size_t i = 0; i < 3; i++, s->argc = i)
			if ((r = dup_to(&s->argv[i], sh[i], err)))
				return r;
		s->shell = true;
		return 0;
	}
	if (!json_is_array(argv) || json_array_size(argv) == 0)
		return bad(err, "argv", "must be a non-empty array of strings");
	size_t n = json_array_size(argv);
	if (!(s->argv = calloc(n + 1, sizeof(char *))))
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		json_t *e = json_array_get(argv, i);
		char f[48];
		snprintf(f, sizeof(f), "argv[%zu]", i);
		if (!json_is_string(e))
			return bad(err, f, "must be a string");
		if (strlen(json_string_value(e)) != json_string_length(e))
			return bad(err, f, "contains a NUL character");
		if (i == 0 && json_string_length(e) == 0)
			return bad(err, f, "must not be empty");
		if ((r = dup_to(&s->argv[i], json_string_value(e), err)))
			return r;
		s->argc = i + 1;
	}
	return 0;
}

/* cwd: "." by default; relative ones may not climb above the work dir. */
static int exec_cwd(const json_t *req, struct mafsbx_exec_spec *s, struct mafsbx_error *err)
{
	const char *cwd;
	int r = get_str(req, "cwd", false, true, &cwd, err);
	if (r)
		return r;
	if (!cwd || !*cwd)
		cwd = ".";
	if (strchr(cwd, '\\'))
		return bad(err, "cwd", "contains a backslash");
	if (has_ctl(cwd))
		return bad(err, "cwd", "contains a control character");
	if (strlen(cwd) > MAFSBX_WORK_DIR_MAX)
		return mafsbx_error_set(err, MAFSBX_EK_NAMETOOLONG, "field 'cwd': longer than %d bytes",
					MAFSBX_WORK_DIR_MAX);
	if (cwd[0] != '/' && (r = check_rel_cwd(cwd, err)))
		return r;
	return dup_to(&s->cwd, cwd, err);
}

/* stdin (its UTF-8 bytes) or stdin_b64 (decoded): at most one. */
static int exec_stdin(const json_t *req, struct mafsbx_exec_spec *s, struct mafsbx_error *err)
{
	json_t *jin = json_object_get(req, "stdin");
	if (jin && json_is_null(jin))
		jin = NULL;
	json_t *jin64 = json_object_get(req, "stdin_b64");
	if (jin64 && json_is_null(jin64))
		jin64 = NULL;
	if (jin && jin64)
		return bad(err, "stdin_b64", "give at most one of 'stdin' and 'stdin_b64'");
	if (jin) {
		if (!json_is_string(jin))
			return bad(err, "stdin", "must be a string");
		size_t n = json_string_length(jin);
		if (!(s->stdin_data = malloc(n + 1)))
			return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
		memcpy(s->stdin_data, json_string_value(jin), n);
		s->stdin_data[n] = '\0';
		s->stdin_len = n;
		s->has_stdin = true;
	} else if (jin64) {
		if (!json_is_string(jin64))
			return bad(err, "stdin_b64", "must be a string");
		int r = mafsbx_base64_decode(json_string_value(jin64), json_string_length(jin64), MAFSBX_B64_STD,
					     &s->stdin_data, &s->stdin_len);
		if (r == -ENOMEM)
			return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
		else if (r)
			return bad(err, "stdin_b64", "not valid base64 (standard alphabet, padded)");
		s->has_stdin = true;
	}
	return 0;
}

_Static_assert(LONG_MAX / 1000 >= MAFSBX_EXEC_TIMEOUT_LIMIT_S, "timeout_ms holds the longest timeout kept");

/* timeout: seconds, > 0 and at most the ceiling (-o max_exec_timeout; none
 * when it is 0), rounded up to whole milliseconds; -o exec_timeout when absent. */
static int exec_timeout(const json_t *req, const struct mafsbx_spec_config *cfg, struct mafsbx_exec_spec *s,
			struct mafsbx_error *err)
{
	long ceiling_s = cfg && cfg->exec_timeout_max_s ? cfg->exec_timeout_max_s : MAFSBX_DEFAULT_EXEC_TIMEOUT_MAX_S;
	if (ceiling_s < 0 || ceiling_s > MAFSBX_EXEC_TIMEOUT_LIMIT_S)
		ceiling_s = MAFSBX_EXEC_TIMEOUT_LIMIT_S;   /* no ceiling: the longest deadline kept */
	bool no_ceiling = cfg && cfg->exec_timeout_max_s < 0;
	long default_s = cfg && cfg->exec_timeout_s > 0 ? cfg->exec_timeout_s : MAFSBX_DEFAULT_EXEC_TIMEOUT_S;
	json_t *t = json_object_get(req, "timeout");
	if (!t || json_is_null(t)) {
		s->timeout_ms = (default_s < ceiling_s ? default_s : ceiling_s) * 1000;
		return 0;
	}
	if (!json_is_number(t))
		return bad(err, "timeout", "must be a number of seconds");
	double secs = json_number_value(t);
	if (!(secs > 0))
		return bad(err, "timeout", "must be positive");
	if (secs > (double)ceiling_s) {
		if (!no_ceiling)
			return bad(err, "timeout", "%.10g s is over the ceiling of %ld s (-o max_exec_timeout)", secs,
				   ceiling_s);
		secs = (double)ceiling_s;   /* also keeps the conversion below in range */
	}
	/* round up: a fraction of a millisecond still asks for a bound */
	double ms = secs * 1000.0;
	s->timeout_ms = (long)ms;
	if ((double)s->timeout_ms < ms)
		s->timeout_ms++;
	if (s->timeout_ms < 1)
		s->timeout_ms = 1;
	return 0;
}

/* on_timeout: "kill" (default) or "dispose" (upstream's behaviour). */
static int exec_on_timeout(const json_t *req, struct mafsbx_exec_spec *s, struct mafsbx_error *err)
{
	const char *v;
	int r = get_str(req, "on_timeout", false, false, &v, err);
	if (r || !v)
		return r;
	if (strcmp(v, "kill") == 0)
		s->on_timeout = MAFSBX_ON_TIMEOUT_KILL;
	else if (strcmp(v, "dispose") == 0)
		s->on_timeout = MAFSBX_ON_TIMEOUT_DISPOSE;
	else
		return bad(err, "on_timeout", "want \"kill\" or \"dispose\"");
	return 0;
}

/* detach: true returns at once (a detached exec, doc/protocol.md "The transactions"); false or absent blocks. */
static int exec_detach(const json_t *req, struct mafsbx_exec_spec *s, struct mafsbx_error *err)
{
	json_t *d = json_object_get(req, "detach");
	if (!d || json_is_null(d))
		return 0;
	if (!json_is_boolean(d))
		return bad(err, "detach", "must be true or false");
	s->detach = json_is_true(d);
	return 0;
}

/* "user": what `docker exec -u` takes (NAME or UID, optionally ":GROUP" or
 * ":GID"), handed to the engine as the exec's User. Only the characters
 * of user and group names and one ':', so nothing else reaches the engine's
 * or the guest's user lookup. */
static int exec_user(const json_t *req, struct mafsbx_exec_spec *s, struct mafsbx_error *err)
{
	const char *u;
	int r = get_str(req, "user", false, false, &u, err);
	if (r || !u)
		return r;
	size_t len = strlen(u), colons = 0;
	if (len > 2 * 32 + 1)
		return bad(err, "user", "longer than NAME:GROUP of 32 characters each");
	for (const char *p = u; *p; p++) {
		if (*p == ':')
			colons++;
		else if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
			   *p == '_' || *p == '-' || *p == '.'))
			return bad(err, "user", "want NAME, UID, NAME:GROUP or UID:GID (letters, digits, '_', '-', '.')");
	}
	if (colons > 1 || u[0] == ':' || u[len - 1] == ':' || u[0] == '-')
		return bad(err, "user", "want NAME, UID, NAME:GROUP or UID:GID");
	return dup_to(&s->user, u, err);
}

static void exec_spec_freep(struct mafsbx_exec_spec **s)
{
	mafsbx_exec_spec_free(*s);
}

int mafsbx_exec_spec_parse(const json_t *req, const struct mafsbx_spec_config *cfg, struct mafsbx_exec_spec **out,
			   struct mafsbx_error *err)
{
	static const char *const allowed[] = { "sandbox", "argv", "command", "cwd", "env", "stdin", "stdin_b64",
					       "timeout", "on_timeout", "detach", "user", NULL };
	*out = NULL;
	int r = check_fields(req, allowed, err);
	if (r)
		return r;
	__attribute__((cleanup(exec_spec_freep))) struct mafsbx_exec_spec *s = calloc(1, sizeof(*s));
	if (!s)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	const char *sandbox;
	if ((r = get_str(req, "sandbox", true, false, &sandbox, err)))
		return r;
	if (!mafsbx_is_workload_name(sandbox))
		return bad(err, "sandbox", "not a sandbox name (want %s<12 hex>)", MAFSBX_NAME_PREFIX);
	if ((r = dup_to(&s->sandbox, sandbox, err)) || (r = exec_argv(req, s, err)) || (r = exec_cwd(req, s, err)) ||
	    (r = parse_env(req, &s->env, &s->n_env, err)) || (r = exec_stdin(req, s, err)) ||
	    (r = exec_timeout(req, cfg, s, err)) || (r = exec_on_timeout(req, s, err)) || (r = exec_detach(req, s, err)) ||
	    (r = exec_user(req, s, err)))
		return r;
	*out = move_ptr(s);
	return 0;
}

/* ---- shared helpers ----------------------------------------------------- */

int mafsbx_spec_parse_json(const char *text, size_t len, json_t **out, struct mafsbx_error *err)
{
	json_error_t jerr;
	*out = NULL;
	json_t *v = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!v)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "request: not valid JSON (line %d, column %d: %s)",
					jerr.line, jerr.column, jerr.text);
	if (!json_is_object(v)) {
		json_decref(v);
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "request: must be a JSON object");
	}
	*out = v;
	return 0;
}

/* Lexically normalise an absolute path into `b`: collapse //, ., and .. (clamped at /). */
static int normalise_abs(const char *path, struct mafsbx_buf *b)
{
	mafsbx_buf_reset(b);
	int r = mafsbx_buf_puts(b, "");
	const char *p = path;
	while (r == 0 && *p) {
		while (*p == '/')
			p++;
		size_t len = strcspn(p, "/");
		if (len == 0)
			break;
		if (len == 1 && p[0] == '.') {
			/* nothing */
		} else if (len == 2 && p[0] == '.' && p[1] == '.') {
			char *slash = b->len ? strrchr(b->data, '/') : NULL;
			if (slash) {
				b->len = (size_t)(slash - b->data);
				b->data[b->len] = '\0';
			}
		} else {
			r = mafsbx_buf_puts(b, "/");
			if (r == 0)
				r = mafsbx_buf_append(b, p, len);
		}
		p += len;
	}
	if (r == 0 && b->len == 0)
		r = mafsbx_buf_puts(b, "/");
	return r;
}

char *mafsbx_exec_cwd_resolve(const char *work_dir, const char *cwd, struct mafsbx_error *err)
{
	__do_buf struct mafsbx_buf base = MAFSBX_BUF_INIT, res = MAFSBX_BUF_INIT, joined = MAFSBX_BUF_INIT;
	if (!work_dir || work_dir[0] != '/') {
		mafsbx_error_set(err, MAFSBX_EK_INVALID, "the sandbox's work dir is not an absolute path");
		return NULL;
	}
	if (!cwd || !*cwd)
		cwd = ".";
	if (strchr(cwd, '\\')) {
		bad(err, "cwd", "contains a backslash");
		return NULL;
	}
	if (normalise_abs(work_dir, &base))
		goto nomem;
	if (cwd[0] == '/') {
		/* Any directory of the guest, as `docker exec -w` takes it: there is
		 * nothing to confine, the guest can `cd` anywhere itself. */
		if (normalise_abs(cwd, &res))
			goto nomem;
	} else {
		if (check_rel_cwd(cwd, err))
			return NULL;
		if (mafsbx_buf_printf(&joined, "%s/%s", base.data, cwd) || normalise_abs(joined.data, &res))
			goto nomem;
	}
	char *out = mafsbx_buf_steal(&res, NULL);
	if (out)
		return out;
nomem:
	mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	return NULL;
}
