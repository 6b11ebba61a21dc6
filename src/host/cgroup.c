/*
 * cgroup.c: the one reader of /proc/PID/cgroup texts (cgroup.h says which
 * forms are accepted and why).
 */
#include "cgroup.h"

#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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

/* How a path component names a container (cgroup.h lists the layouts). */
enum cg_form {
	CF_NONE,
	CF_BARE,          /* ID: the cgroupfs driver, Kubernetes' cgroupfs layout */
	CF_DOCKER_SCOPE,  /* docker-ID.scope: the systemd driver */
	CF_LIBPOD_SCOPE,  /* libpod-ID.scope: Podman's systemd manager */
	CF_LIBPOD_BARE,   /* libpod-ID: Podman's cgroupfs manager */
	CF_KUBE_SCOPE,    /* crio-ID.scope, cri-containerd-ID.scope */
};

/* The form in which component c names `id`, or any container's ID when id is NULL. */
static enum cg_form component_form(const char *c, size_t len, const char *id)
{
	static const struct {
		const char *prefix, *suffix;
		enum cg_form form;
	} forms[] = {
		{ "", "", CF_BARE },
		{ "docker-", ".scope", CF_DOCKER_SCOPE },
		{ "libpod-", ".scope", CF_LIBPOD_SCOPE },
		{ "libpod-", "", CF_LIBPOD_BARE },
		{ "crio-", ".scope", CF_KUBE_SCOPE },
		{ "cri-containerd-", ".scope", CF_KUBE_SCOPE },
	};
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		size_t pl = strlen(forms[i].prefix), sl = strlen(forms[i].suffix);
		if (len != pl + 64 + sl || memcmp(c, forms[i].prefix, pl) != 0 ||
		    memcmp(c + pl + 64, forms[i].suffix, sl) != 0)
			continue;
		if (id ? memcmp(c + pl, id, 64) == 0 : is_hex64(c + pl, 64))
			return forms[i].form;
	}
	return CF_NONE;
}

#define CG_MAX_DEPTH 32

/* A cgroup path cut into its components. */
struct cg_path {
	const char *c[CG_MAX_DEPTH];
	size_t len[CG_MAX_DEPTH];
	size_t n;
};

/* Its first CG_MAX_DEPTH components. */
static void split_path(const char *p, size_t plen, struct cg_path *out)
{
	const char *end = p + plen;
	out->n = 0;
	while (p < end) {
		while (p < end && *p == '/')
			p++;
		const char *q = p;
		while (q < end && *q != '/')
			q++;
		if (q > p) {
			/* the engine's part is near the top: what lies deeper is the container's own */
			if (out->n == CG_MAX_DEPTH)
				return;
			out->c[out->n] = p;
			out->len[out->n++] = (size_t)(q - p);
		}
		p = q;
	}
}

static bool comp_is(const struct cg_path *cp, size_t i, const char *want)
{
	return cp->len[i] == strlen(want) && memcmp(cp->c[i], want, cp->len[i]) == 0;
}

/* Component i is PREFIX<uid>SUFFIX, the uid written in decimal. */
static bool comp_is_uid(const struct cg_path *cp, size_t i, const char *prefix, const char *suffix, uid_t uid)
{
	char want[64];
	snprintf(want, sizeof(want), "%s%u%s", prefix, (unsigned)uid, suffix);
	return comp_is(cp, i, want);
}

/* Components [0, n) are exactly `words` (a NULL-ended list; "@U" stands for the engine's uid's user slice
 * "user-U.slice", "@S" for its manager "user@U.service"). */
static bool prefix_is(const struct cg_path *cp, size_t n, const char *const *words, uid_t uid)
{
	size_t i = 0;
	for (; words[i]; i++) {
		if (i >= n)
			return false;
		bool ok = strcmp(words[i], "@U") == 0   ? comp_is_uid(cp, i, "user-", ".slice", uid)
			  : strcmp(words[i], "@S") == 0 ? comp_is_uid(cp, i, "user@", ".service", uid)
							: comp_is(cp, i, words[i]);
		if (!ok)
			return false;
	}
	return i == n;
}

static bool names_at(const struct cg_path *cp, size_t k, const char *id, uid_t uid);

/*
 * Components [0, k) are where the engine puts a container of this form, and
 * nowhere else: a component that merely spells the ID under some other
 * subtree (one a user was delegated, which that user fills as it likes) is
 * not the engine's. A rootless engine's subtree (user@U.service) counts only
 * for U, the engine's uid. Nested engines: the outer container's own cgroup
 * (itself in a layout of this list) followed by "docker".
 */
static bool engine_parent(const struct cg_path *cp, size_t k, enum cg_form form, uid_t uid)
{
	static const char *const cgroupfs[] = { "docker", NULL };
	static const char *const systemd[] = { "system.slice", NULL };
	static const char *const machine[] = { "machine.slice", NULL };
	static const char *const libpod[] = { "libpod_parent", NULL };
	static const char *const rootless_systemd[] = { "user.slice", "@U", "@S", "user.slice", NULL };
	static const char *const rootless_cgroupfs[] = { "user.slice", "@U",	       "@S",
							 "app.slice",  "docker.service", "docker", NULL };
	bool kube = k >= 1 && (comp_is(cp, 0, "kubepods") || comp_is(cp, 0, "kubepods.slice"));
	switch (form) {
	case CF_BARE:
		if (prefix_is(cp, k, cgroupfs, uid) || prefix_is(cp, k, rootless_cgroupfs, uid) || kube)
			return true;
		/* nested: .../<outer container>/docker/ID */
		return k >= 2 && comp_is(cp, k - 1, "docker") && names_at(cp, k - 2, NULL, uid);
	case CF_DOCKER_SCOPE:   /* under kubepods: dockerd as a kubelet's runtime */
		return prefix_is(cp, k, systemd, uid) || prefix_is(cp, k, rootless_systemd, uid) || kube;
	case CF_LIBPOD_SCOPE:
		return prefix_is(cp, k, machine, uid) || prefix_is(cp, k, rootless_systemd, uid);
	case CF_LIBPOD_BARE:
		return prefix_is(cp, k, libpod, uid);
	case CF_KUBE_SCOPE:
		return kube;
	case CF_NONE:
		break;
	}
	return false;
}

/* Component k names `id` (any container's when NULL) in a layout of its engine. */
static bool names_at(const struct cg_path *cp, size_t k, const char *id, uid_t uid)
{
	enum cg_form form = component_form(cp->c[k], cp->len[k], id);
	return form != CF_NONE && engine_parent(cp, k, form, uid);
}

struct names_ctx {
	const char *id;
	uid_t uid;
	bool found;
};

/* Deeper components under the container's own cgroup are the container's (a runtime's "/init",
 * Podman's "/container", a guest's systemd): only what comes before is checked. */
static int names_line(const struct cg_line *l, void *vctx)
{
	struct names_ctx *ctx = vctx;
	struct cg_path cp;
	split_path(l->path, l->path_len, &cp);
	for (size_t k = 0; k < cp.n; k++) {
		if (names_at(&cp, k, ctx->id, ctx->uid)) {
			ctx->found = true;
			return 1;
		}
	}
	return 0;
}

bool mafsbx_cgroup_names_container_as(const char *text, const char *id, uid_t engine_uid)
{
	if (!text || !id || !is_hex64(id, strlen(id)))
		return false;
	struct names_ctx ctx = { .id = id, .uid = engine_uid };
	int r = each_line(text, names_line, &ctx);
	return r >= 0 && ctx.found;
}

bool mafsbx_cgroup_names_container(const char *text, const char *id)
{
	return mafsbx_cgroup_names_container_as(text, id, geteuid());
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
