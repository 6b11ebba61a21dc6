/*
 * extras.h: the per-sandbox state this mount keeps beside the engine's
 * labels (extras.c): outputs declared by a later acquire, files written
 * through the mount, keyed by container ID.
 */
#ifndef MAFSBXFS_EXTRAS_H
#define MAFSBXFS_EXTRAS_H

#include <stdbool.h>
#include <stddef.h>

struct mfs;
struct mafsbx_sandbox_info;

int mfs_extra_add_outputs(struct mfs *fs, const char *id, char *const *outputs, size_t n);
int mfs_extra_add_written(struct mfs *fs, const char *id, const char *rel);
void mfs_extra_drop(struct mfs *fs, const char *id);
/* A malloc'd NULL-terminated copy of the union of the label outputs, this mount's
 * outputs and (with `written`) the files written through it; duplicates dropped. */
char **mfs_extra_paths(struct mfs *fs, const struct mafsbx_sandbox_info *i, bool written, size_t *n);
void mfs_strv_free(char **v);
/* The container IDs with extras that listed(id, ctx) does not know (the
 * janitor's collection): a malloc'd array in *ids, *n of them. 0, or
 * -ENOMEM with what was found so far. */
int mfs_extras_unlisted(struct mfs *fs, bool (*listed)(const char *id, void *ctx), void *ctx, char (**ids)[65],
			size_t *n);
/* Every extra freed (mfs_fini). */
void mfs_extras_clear(struct mfs *fs);

#endif
