/*
 * extras.c: the per-sandbox state this mount keeps beside the engine's
 * labels, keyed by container ID (a re-created sandbox of the same name
 * starts clean): the outputs a later acquire declared and the files
 * written through the mount, for the by-scope dispose's lists and for
 * NAME/status. Under fs->lock; only this file walks fs->extras.
 */
#include "extras.h"
#include "mfs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "sandbox.h"

static void extra_free(struct mfs_sbx_extra *x)
{
	for (size_t i = 0; i < x->n_outputs; i++)
		free(x->outputs[i]);
	for (size_t i = 0; i < x->n_written; i++)
		free(x->written[i]);
	free(x->outputs);
	free(x->written);
	free(x);
}

/* ---- extras ---------------------------------------------------------------- */

/* Must be called under fs->lock. */
static struct mfs_sbx_extra *extra_get(struct mfs *fs, const char *id, bool create)
{
	for (struct mfs_sbx_extra *x = fs->extras; x; x = x->next)
		if (!strcmp(x->id, id))
			return x;
	if (!create)
		return NULL;
	struct mfs_sbx_extra *x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	snprintf(x->id, sizeof(x->id), "%s", id);
	x->next = fs->extras;
	fs->extras = x;
	return x;
}

static int strv_add_unique(char ***v, size_t *n, const char *s)
{
	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*v)[i], s))
			return 0;
	char **nv = realloc(*v, (*n + 1) * sizeof(**v));
	if (!nv)
		return -ENOMEM;
	*v = nv;
	if (!(nv[*n] = strdup(s)))
		return -ENOMEM;
	(*n)++;
	return 0;
}

int mfs_extra_add_outputs(struct mfs *fs, const char *id, char *const *outputs, size_t n)
{
	int r = 0;
	pthread_mutex_lock(&fs->lock);
	struct mfs_sbx_extra *x = extra_get(fs, id, true);
	if (!x)
		r = -ENOMEM;
	for (size_t i = 0; x && r == 0 && i < n; i++)
		r = strv_add_unique(&x->outputs, &x->n_outputs, outputs[i]);
	pthread_mutex_unlock(&fs->lock);
	return r;
}

int mfs_extra_add_written(struct mfs *fs, const char *id, const char *rel)
{
	int r = 0;
	pthread_mutex_lock(&fs->lock);
	struct mfs_sbx_extra *x = extra_get(fs, id, true);
	r = x ? strv_add_unique(&x->written, &x->n_written, rel) : -ENOMEM;
	pthread_mutex_unlock(&fs->lock);
	return r;
}

void mfs_extra_drop(struct mfs *fs, const char *id)
{
	pthread_mutex_lock(&fs->lock);
	struct mfs_sbx_extra **pp = &fs->extras;
	while (*pp) {
		if (!strcmp((*pp)->id, id)) {
			struct mfs_sbx_extra *x = *pp;
			*pp = x->next;
			extra_free(x);
			break;
		}
		pp = &(*pp)->next;
	}
	pthread_mutex_unlock(&fs->lock);
}

void mfs_strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

char **mfs_extra_paths(struct mfs *fs, const struct mafsbx_sandbox_info *info, bool written, size_t *np)
{
	char **v = NULL;
	size_t n = 0;
	int r = 0;
	for (size_t i = 0; r == 0 && i < info->n_outputs; i++)
		r = strv_add_unique(&v, &n, info->outputs[i]);
	pthread_mutex_lock(&fs->lock);
	struct mfs_sbx_extra *x = extra_get(fs, info->id, false);
	for (size_t i = 0; x && r == 0 && i < x->n_outputs; i++)
		r = strv_add_unique(&v, &n, x->outputs[i]);
	for (size_t i = 0; x && written && r == 0 && i < x->n_written; i++)
		r = strv_add_unique(&v, &n, x->written[i]);
	pthread_mutex_unlock(&fs->lock);
	char **nv = r == 0 ? realloc(v, (n + 1) * sizeof(*v)) : NULL;
	if (!nv) {
		for (size_t i = 0; i < n; i++)
			free(v[i]);
		free(v);
		*np = 0;
		return NULL;
	}
	nv[n] = NULL;
	*np = n;
	return nv;
}

void mfs_extras_clear(struct mfs *fs)
{
	while (fs->extras) {
		struct mfs_sbx_extra *x = fs->extras;
		fs->extras = x->next;
		extra_free(x);
	}
}

int mfs_extras_unlisted(struct mfs *fs, bool (*listed)(const char *id, void *ctx), void *ctx, char (**ids)[65],
			size_t *n)
{
	size_t cap = 0;
	*ids = NULL;
	*n = 0;
	int r = 0;
	pthread_mutex_lock(&fs->lock);
	for (struct mfs_sbx_extra *x = fs->extras; x && r == 0; x = x->next) {
		if (listed(x->id, ctx))
			continue;
		r = mafsbx_array_grow(ids, &cap, *n + 1, sizeof(**ids), 16, 0);
		if (r == 0)
			snprintf((*ids)[(*n)++], 65, "%s", x->id);
	}
	pthread_mutex_unlock(&fs->lock);
	return r;
}
