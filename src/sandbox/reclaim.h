/*
 * reclaim.h: upstream's `reclaim(directory, working_directory)` (doc/upstream.md
 * §5.10) over the engine plane: remove a directory of a sandbox with the
 * guest's own `rm -rf`, so what goes is exactly what the guest could remove.
 */
#ifndef MAFSBX_RECLAIM_H
#define MAFSBX_RECLAIM_H

#include <stddef.h>

#include "error.h"

struct mafsbx_backend;

/* What was removed: the absolute guest path, and the same relative to the work dir. */
struct mafsbx_reclaim_result {
	char path[4096];
	char relative[4096];
};

/*
 * Remove `directory` of sandbox `name` (a workload name):
 *  - a relative target resolves under the sandbox's work dir (its
 *    work-dir.v1 label), an absolute one must lie under it too; a
 *    backslash or an escape is EK_INVALID (ValueError), as is the work dir
 *    itself and a target with fewer than two components (`/a`);
 *  - runs `rm -rf -- DIR` with `-w /` as the container's own user (the
 *    guest's authority: never raised to root), under the command timeout
 *    (a timeout removes the sandbox, as every timed-out exec);
 *  - a missing directory is success; a link operand is unlinked, never
 *    followed (rm's own semantics);
 *  - `rm` exiting non-zero is EK_SYSTEM, type OSError, EACCES when rm says
 *    "Permission denied", else EIO, with rm's message.
 * On success `res` (may be NULL) says what was removed.
 */
int mafsbx_sandbox_reclaim(struct mafsbx_backend *b, const char *name, const char *directory,
			   struct mafsbx_reclaim_result *res, struct mafsbx_error *err);

#endif
