/*
 * guestpath.c: pure guest path arithmetic (see guestpath.h). Owns the text
 * half of confinement: what can be refused without asking the engine, and
 * the canonical spelling of every path that files.c sends to it. Paths are
 * raw bytes; nothing here assumes UTF-8 except the strict name rule.
 */
#include "guestpath.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "paths.h"
#include "utf8.h"

static int check_text_n(const char *path, size_t len, struct mafsbx_error *err)
{
	if (len > MAFSBX_GP_PATH_MAX)
		return mafsbx_error_set(err, MAFSBX_EK_NAMETOOLONG, "guest path is %zu bytes, over the %d-byte limit",
					len, MAFSBX_GP_PATH_MAX);
	if (memchr(path, '\\', len))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "guest path %.*s contains a backslash",
					(int)(len < 200 ? len : 200), path);
	size_t comp = 0;
	for (size_t i = 0; i <= len; i++) {
		if (i == len || path[i] == '/') {
			if (comp > MAFSBX_GP_NAME_MAX)
				return mafsbx_error_set(err, MAFSBX_EK_NAMETOOLONG,
							"guest path %.*s... has a component of %zu bytes, over %d",
							(int)(len < 120 ? len : 120), path, comp, MAFSBX_GP_NAME_MAX);
			comp = 0;
		} else {
			comp++;
		}
	}
	return 0;
}

int mafsbx_gp_check_text(const char *path, struct mafsbx_error *err)
{
	if (!path)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "guest path is missing");
	return check_text_n(path, strlen(path), err);
}

int mafsbx_gp_check_bytes(const char *path, size_t len, struct mafsbx_error *err)
{
	if (!path)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "guest path is missing");
	if (memchr(path, '\0', len))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "guest path contains a NUL byte");
	return check_text_n(path, len, err);
}

/*
 * normpath over raw bytes. The output is never longer than the input plus
 * one byte ("" -> "."), so one allocation of len + 2 suffices; components are
 * kept as (offset, length) pairs into the input to pop `..` cheaply.
 */
char *mafsbx_gp_normalise(const char *path, struct mafsbx_error *err)
{
	if (mafsbx_gp_check_text(path, err) < 0)
		return NULL;
	size_t len = strlen(path);
	bool absolute = len > 0 && path[0] == '/';
	size_t maxc = len / 2 + 2;
	size_t *off = calloc(maxc, sizeof(*off));
	size_t *cl = calloc(maxc, sizeof(*cl));
	char *out = malloc(len + 2);
	if (!off || !cl || !out) {
		free(off);
		free(cl);
		free(out);
		mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory normalising a guest path");
		return NULL;
	}
	size_t n = 0;
	for (size_t i = 0; i < len;) {
		while (i < len && path[i] == '/')
			i++;
		size_t s = i;
		while (i < len && path[i] != '/')
			i++;
		size_t l = i - s;
		if (l == 0 || (l == 1 && path[s] == '.'))
			continue;
		if (l == 2 && path[s] == '.' && path[s + 1] == '.') {
			if (n > 0 && !(cl[n - 1] == 2 && path[off[n - 1]] == '.' && path[off[n - 1] + 1] == '.')) {
				n--;
				continue;
			}
			if (absolute)
				continue; /* `..` at the root stays at the root */
		}
		off[n] = s;
		cl[n] = l;
		n++;
	}
	size_t o = 0;
	if (absolute)
		out[o++] = '/';
	for (size_t k = 0; k < n; k++) {
		if (k > 0)
			out[o++] = '/';
		memcpy(out + o, path + off[k], cl[k]);
		o += cl[k];
	}
	if (o == 0)
		out[o++] = '.';
	out[o] = '\0';
	free(off);
	free(cl);
	return out;
}

bool mafsbx_gp_is_within(const char *dir, const char *p)
{
	if (!dir || !p || p[0] != '/')
		return false;
	if (strcmp(dir, "/") == 0)
		return true;
	size_t n = strlen(dir);
	return strncmp(p, dir, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

static char *normalise_work_dir(const char *work_dir, struct mafsbx_error *err)
{
	if (!work_dir || work_dir[0] != '/') {
		mafsbx_error_set(err, MAFSBX_EK_INVALID, "working directory %.200s is not an absolute guest path",
				 work_dir ? work_dir : "(null)");
		return NULL;
	}
	return mafsbx_gp_normalise(work_dir, err);
}

char *mafsbx_gp_resolve(const char *work_dir, const char *path, struct mafsbx_error *err)
{
	__do_free char *base = normalise_work_dir(work_dir, err);
	if (!base)
		return NULL;
	if (mafsbx_gp_check_text(path, err) < 0)
		return NULL;
	char *resolved;
	if (path[0] == '/') {
		resolved = mafsbx_gp_normalise(path, err);
	} else {
		struct mafsbx_buf b = MAFSBX_BUF_INIT;
		if (mafsbx_buf_printf(&b, "%s/%s", base, path) < 0) {
			mafsbx_buf_free(&b);
			mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory resolving a guest path");
			return NULL;
		}
		/* The joined text may exceed the path limit although the result would not. */
		if (b.len > MAFSBX_GP_PATH_MAX) {
			mafsbx_buf_free(&b);
			mafsbx_error_set(err, MAFSBX_EK_NAMETOOLONG, "guest path %.200s under %.200s is over %d bytes",
					 path, base, MAFSBX_GP_PATH_MAX);
			return NULL;
		}
		resolved = mafsbx_gp_normalise(b.data, err);
		mafsbx_buf_free(&b);
	}
	if (!resolved)
		return NULL;
	if (!mafsbx_gp_is_within(base, resolved)) {
		mafsbx_error_set(err, MAFSBX_EK_INVALID, "guest path %.200s resolves outside working directory %.200s",
				 path, base);
		free(resolved);
		return NULL;
	}
	return resolved;
}

char *mafsbx_gp_resolve_write(const char *work_dir, const char *path, struct mafsbx_error *err)
{
	char *resolved = mafsbx_gp_resolve(work_dir, path, err);
	if (!resolved)
		return NULL;
	__do_free char *base = mafsbx_gp_normalise(work_dir, err);
	if (!base) {
		free(resolved);
		return NULL;
	}
	if (strcmp(base, resolved) == 0) {
		mafsbx_error_set(err, MAFSBX_EK_INVALID, "refusing to write over the working directory itself (%.200s)",
				 base);
		free(resolved);
		return NULL;
	}
	return resolved;
}

char *mafsbx_gp_relative(const char *work_dir, const char *resolved, struct mafsbx_error *err)
{
	__do_free char *base = normalise_work_dir(work_dir, err);
	if (!base)
		return NULL;
	if (!mafsbx_gp_is_within(base, resolved)) {
		mafsbx_error_set(err, MAFSBX_EK_INVALID, "guest path %.200s is outside working directory %.200s",
				 resolved ? resolved : "(null)", base);
		return NULL;
	}
	const char *rel;
	if (strcmp(base, resolved) == 0)
		rel = ".";
	else if (strcmp(base, "/") == 0)
		rel = resolved + 1;
	else
		rel = resolved + strlen(base) + 1;
	char *r = strdup(rel);
	if (!r)
		mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	return r;
}

char *mafsbx_gp_dirname(const char *abs_path, struct mafsbx_error *err)
{
	if (!abs_path || abs_path[0] != '/') {
		mafsbx_error_set(err, MAFSBX_EK_INVALID, "dirname of a non-absolute guest path");
		return NULL;
	}
	const char *slash = strrchr(abs_path, '/');
	size_t n = (size_t)(slash - abs_path);
	if (n == 0)
		n = 1;
	char *r = strndup(abs_path, n);
	if (!r)
		mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	return r;
}

void mafsbx_gp_chain_free(struct mafsbx_gp_chain *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		free(c->paths[i]);
	free(c->paths);
	c->paths = NULL;
	c->n = 0;
	c->n_above = 0;
}

/* Append every prefix of `p` that ends at a component boundary and is longer than `from` bytes. */
static int push_prefixes(struct mafsbx_gp_chain *c, size_t *cap, const char *p, size_t from)
{
	size_t len = strlen(p);
	for (size_t i = from + 1; i <= len; i++) {
		if (i != len && p[i] != '/')
			continue;
		if (i <= 1)
			continue; /* "/" itself is never in the chain */
		if (mafsbx_array_grow(&c->paths, cap, c->n + 1, sizeof(*c->paths), 8, 0) < 0)
			return -ENOMEM;
		c->paths[c->n] = strndup(p, i);
		if (!c->paths[c->n])
			return -ENOMEM;
		c->n++;
	}
	return 0;
}

int mafsbx_gp_ancestors(const char *work_dir, const char *target, bool include_self, struct mafsbx_gp_chain *out,
			struct mafsbx_error *err)
{
	out->paths = NULL;
	out->n = 0;
	out->n_above = 0;
	__do_free char *base = normalise_work_dir(work_dir, err);
	if (!base)
		return -EINVAL;
	__do_free char *t = target && target[0] == '/' ? mafsbx_gp_normalise(target, err) : NULL;
	if (!t) {
		if (target && target[0] == '/')
			return err ? -err->err : -EINVAL;
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "ancestor chain of a non-absolute guest path");
	}
	if (!mafsbx_gp_is_within(base, t))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "guest path %.200s is outside working directory %.200s",
					t, base);
	__do_free char *x = include_self ? strdup(t) : mafsbx_gp_dirname(t, NULL);
	if (!x)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");

	size_t cap = 0;
	int r = push_prefixes(out, &cap, base, 0);
	if (r == 0) {
		out->n_above = out->n ? out->n - 1 : 0;
		/* Only what lies strictly below the base continues the chain. */
		size_t bl = strcmp(base, "/") == 0 ? 0 : strlen(base);
		if (strcmp(x, base) != 0 && mafsbx_gp_is_within(base, x))
			r = push_prefixes(out, &cap, x, bl);
	}
	if (r < 0) {
		mafsbx_gp_chain_free(out);
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory building the ancestor chain");
	}
	return 0;
}

int mafsbx_gp_check_name(const char *name, unsigned flags, struct mafsbx_error *err)
{
	if (!name || !name[0])
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "name is empty");
	size_t len = strlen(name);
	if (name[0] == '/')
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "name %.200s must be relative", name);
	if (strchr(name, '\\'))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "name %.200s contains a backslash", name);
	if (len > MAFSBX_GP_PATH_MAX)
		return mafsbx_error_set(err, MAFSBX_EK_NAMETOOLONG, "name is %zu bytes, over %d", len,
					MAFSBX_GP_PATH_MAX);
	int r = mafsbx_path_check_segments(name, MAFSBX_SEG_STRICT, err, "name %.200s", name);
	if (r < 0)
		return r;
	if (flags & MAFSBX_GP_NAME_STRICT) {
		for (size_t i = 0; i < len; i++)
			if ((unsigned char)name[i] < 32)
				return mafsbx_error_set(err, MAFSBX_EK_INVALID, "name %.200s contains control byte %d",
							name, name[i]);
		if (!mafsbx_utf8_valid(name, len))
			return mafsbx_error_set(err, MAFSBX_EK_INVALID, "name %.200s is not valid UTF-8", name);
		if (len > MAFSBX_GP_NAME_MAX)
			return mafsbx_error_set(err, MAFSBX_EK_NAMETOOLONG, "name %.120s... is %zu bytes, over %d",
						name, len, MAFSBX_GP_NAME_MAX);
	}
	return 0;
}
