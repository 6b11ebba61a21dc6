/*
 * cgroup.c: the one reader of /proc/PID/cgroup texts (cgroup.h says which
 * forms are accepted and why).
 */
#include "cgroup.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct cg_line {
	const char *ctrl;     /* controllers, ctrl_len bytes (empty for v2) */
	size_t ctrl_len;
	const char *path;     /* path_len bytes, starts with '/' */
	size_t path_len;
	bool unified;         /* "0::" */
};

/* One line "N:CONTROLLERS:PATH" (no newline inside). 0 or -EINVAL. */
static int parse_line(const char *s, size_t len, struct cg_line *out)
{
	const char *end = s + len;
	const char *c1 = memchr(s, ':', len);
	if (!c1 || c1 == s)
		return -EINVAL;
	for (const char *p = s; p < c1; p++)
		if (*p < '0' || *p > '9')
			return -EINVAL;
	const char *c2 = memchr(c1 + 1, ':', (size_t)(end - c1 - 1));
	if (!c2 || c2 + 1 >= end || c2[1] != '/')
		return -EINVAL;
	out->ctrl = c1 + 1;
	out->ctrl_len = (size_t)(c2 - c1 - 1);
	out->path = c2 + 1;
	out->path_len = (size_t)(end - c2 - 1);
	out->unified = c1 - s == 1 && s[0] == '0' && out->ctrl_len == 0;
	return 0;
}

/* Calls fn for each line; stops at the first nonzero return. -EINVAL for a malformed line. */
static int each_line(const char *text, int (*fn)(const struct cg_line *, void *), void *ctx)
{
	if (!text || !*text)
		return -EINVAL;
	for (const char *s = text; *s;) {
		const char *nl = strchr(s, '\n');
		size_t len = nl ? (size_t)(nl - s) : strlen(s);
		if (len) {
			struct cg_line l;
			if (parse_line(s, len, &l) < 0)
				return -EINVAL;
			int r = fn(&l, ctx);
			if (r)
				return r;
		}
		s += len + (nl ? 1 : 0);
	}
	return 0;
}

static bool is_hex64(const char *s, size_t len)
{
	if (len != 64)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* True when one path component is the container's: ID, PREFIX-ID.scope, or libpod-ID. */
static bool component_is(const char *c, size_t len, const char *id)
{
	static const char *const prefixes[] = { "docker-", "libpod-", "crio-", "cri-containerd-" };
	if (len == 64)
		return memcmp(c, id, 64) == 0;
	/* Podman's cgroupfs manager: /libpod_parent/libpod-ID */
	if (len == 7 + 64 && memcmp(c, "libpod-", 7) == 0 && memcmp(c + 7, id, 64) == 0)
		return true;
	static const char scope[] = ".scope";
	const size_t sl = sizeof(scope) - 1;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t pl = strlen(prefixes[i]);
		if (len == pl + 64 + sl && memcmp(c, prefixes[i], pl) == 0 && memcmp(c + pl, id, 64) == 0 &&
		    memcmp(c + pl + 64, scope, sl) == 0)
			return true;
	}
	return false;
}

struct names_ctx {
	const char *id;
	bool found;
};

static int names_line(const struct cg_line *l, void *vctx)
{
	struct names_ctx *ctx = vctx;
	const char *p = l->path, *end = l->path + l->path_len;
	while (p < end) {
		while (p < end && *p == '/')
			p++;
		const char *q = p;
		while (q < end && *q != '/')
			q++;
		if (q > p && component_is(p, (size_t)(q - p), ctx->id)) {
			ctx->found = true;
			return 1;
		}
		p = q;
	}
	return 0;
}

bool mafsbx_cgroup_names_container(const char *text, const char *id)
{
	if (!text || !id || !is_hex64(id, strlen(id)))
		return false;
	struct names_ctx ctx = { .id = id };
	int r = each_line(text, names_line, &ctx);
	return r >= 0 && ctx.found;
}

struct procs_ctx {
	const struct cg_line *pids, *unified;
	struct cg_line pids_l, unified_l;
};

static int procs_line(const struct cg_line *l, void *vctx)
{
	struct procs_ctx *ctx = vctx;
	if (l->unified) {
		if (!ctx->unified) {
			ctx->unified_l = *l;
			ctx->unified = &ctx->unified_l;
		}
		return 0;
	}
	/* the controller list may be "pids" or a comma list containing it */
	for (const char *s = l->ctrl, *e = l->ctrl + l->ctrl_len; s < e;) {
		const char *cm = memchr(s, ',', (size_t)(e - s));
		size_t n = cm ? (size_t)(cm - s) : (size_t)(e - s);
		if (n == 4 && !memcmp(s, "pids", 4) && !ctx->pids) {
			ctx->pids_l = *l;
			ctx->pids = &ctx->pids_l;
		}
		s += n + 1;
	}
	return 0;
}

/* A path with no empty, "." or ".." component (the root "/" alone is allowed). */
static bool path_clean(const char *p, size_t len)
{
	if (len == 1)
		return true;
	for (size_t i = 1; i <= len;) {
		size_t j = i;
		while (j < len && p[j] != '/')
			j++;
		size_t cl = j - i;
		if (cl == 0 || (cl == 1 && p[i] == '.') || (cl == 2 && p[i] == '.' && p[i + 1] == '.'))
			return false;
		i = j + 1;
	}
	return true;
}

int mafsbx_cgroup_procs_path(const char *text, bool *v1_pids, char **path)
{
	*path = NULL;
	struct procs_ctx ctx = { 0 };
	if (each_line(text, procs_line, &ctx) < 0)
		return -EINVAL;
	const struct cg_line *l = ctx.pids ? ctx.pids : ctx.unified;
	if (!l)
		return -ENOENT;
	if (!path_clean(l->path, l->path_len))
		return -EINVAL;
	*v1_pids = ctx.pids != NULL;
	*path = strndup(l->path, l->path_len);
	return *path ? 0 : -ENOMEM;
}

bool mafsbx_cgroup_names_some_container(const char *cgroup_text)
{
	size_t run = 0;
	for (const char *p = cgroup_text; *p; p++) {
		bool hex = (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f');
		run = hex ? run + 1 : 0;
		if (run == 64)
			return true;
	}
	return false;
}
