/*
 * target.h: a sandbox's plane target for one file call (target.c), for
 * work.c's calls under work/ and root/.
 */
#ifndef MAFSBXFS_TARGET_H
#define MAFSBXFS_TARGET_H

#include "ctx.h"
#include "mfs.h"

/* The errno of a failed plane call, logged unless it is an ordinary answer. */
int mfs_plane_errno(const char *what, const struct mfs_node *n, const struct mafsbx_error *e, int r);
/* A call on a container that is gone: true (the lists dropped) when it is to be tried once more. */
bool mfs_retry_stale(struct mfs *fs, int attempt, int r, const struct mafsbx_error *e);
/* Count the request's call for its caller when that is another user: 0 or -EBUSY. */
int mfs_charge_call(struct mfs_ctx *c);
/* The plane target of sandbox `name`: the snapshot holding *info (give it
 * back with mfs_target_put), or NULL with the errno in *errp. `fresh`: ask
 * the engine. */
struct mfs_snapshot *mfs_target_of(struct mfs_ctx *c, const char *name, const struct mafsbx_sandbox_info **info,
				   struct mafsbx_plane_target *t, int *errp, bool fresh);
void mfs_target_put(struct mfs_ctx *c, struct mfs_snapshot *s);
/* work/ or root/ */
enum mafsbx_plane_base mfs_base_of(const struct mfs_node *n);

#endif
