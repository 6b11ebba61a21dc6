/*
 * guestpath.h: pure path arithmetic for guest paths (no engine, no I/O).
 *
 * Owns the text half of path confinement (doc/upstream.md §5.1, §5.2): POSIX normalisation made single-rooted, resolving a path under
 * a working directory with the separator rule (`W-outside` is outside `W`),
 * the refusals that need no engine call (backslash, NUL, over-long components,
 * the working directory itself as a write target), the ancestor chain that
 * files.c walks with HEADs, and the narrow check for user-supplied relative
 * names (declared outputs, FUSE lookups).
 *
 * Strings returned are malloc'd and owned by the caller. Errors:
 *   backslash, NUL, a relative work_dir, an escape   EK_INVALID      EINVAL
 *   a component over 255 bytes or a path over 4095  EK_NAMETOOLONG  ENAMETOOLONG
 *   the working directory as a write target         EK_INVALID      EINVAL
 */
#ifndef MAFSBX_GUESTPATH_H
#define MAFSBX_GUESTPATH_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define MAFSBX_GP_NAME_MAX 255      /* bytes in one component */
#define MAFSBX_GP_PATH_MAX 4095     /* bytes in a whole path */

/*
 * POSIX normpath, single-rooted: collapses repeated slashes, `.` and `..`
 * (`..` clamped at `/` for an absolute path; kept leading for a relative one,
 * as normpath does), drops a trailing slash; "" and "." give ".". Any number
 * of leading slashes gives exactly one (`//maf-sandbox/work` -> `/maf-sandbox/work`).
 * Applies the text checks of mafsbx_gp_check_text() first.
 */
char *mafsbx_gp_normalise(const char *path, struct mafsbx_error *err);

/*
 * The text refusals that need no engine call: `\` anywhere (EINVAL), a
 * component over 255 bytes or a path over 4095 bytes (ENAMETOOLONG).
 * mafsbx_gp_check_bytes() also refuses an embedded NUL in `len` bytes (EINVAL).
 */
int mafsbx_gp_check_text(const char *path, struct mafsbx_error *err);
int mafsbx_gp_check_bytes(const char *path, size_t len, struct mafsbx_error *err);

/*
 * Resolve `path` (relative to `work_dir`, or absolute, which replaces it)
 * to a normalised single-rooted absolute guest path that must equal the
 * normalised work_dir or lie under `W + "/"` (every path lies under `/`).
 * `work_dir` must be absolute. An escape is EK_INVALID with a message saying
 * it "resolves outside the working directory".
 */
char *mafsbx_gp_resolve(const char *work_dir, const char *path, struct mafsbx_error *err);

/*
 * Same, for a write (or mkdir) target: additionally refuses the working
 * directory itself ("refusing to write over the working directory itself").
 */
char *mafsbx_gp_resolve_write(const char *work_dir, const char *path, struct mafsbx_error *err);

/*
 * The path of `resolved` (an absolute guest path inside `work_dir`) relative
 * to the normalised work_dir: "out.txt", or "." for the work_dir itself.
 * A work_dir spelled `/maf-sandbox/work/.` still gives "out.txt".
 */
char *mafsbx_gp_relative(const char *work_dir, const char *resolved, struct mafsbx_error *err);

/* dirname of a normalised absolute path ("/a/b" -> "/a", "/a" -> "/", "/" -> "/"). */
char *mafsbx_gp_dirname(const char *abs_path, struct mafsbx_error *err);
/* True when normalised absolute `p` equals `dir` or lies under `dir + "/"` (all under "/"). */
bool mafsbx_gp_is_within(const char *dir, const char *p);

/*
 * The ancestor chain (doc/upstream.md §5.2): every prefix of normpath(work_dir)
 * from its FIRST component (`/` itself is never in the chain; the chain
 * always holds work_dir unless work_dir is `/`), then each further
 * component below work_dir down to dirname(target), or down to target
 * itself when `include_self`. `target` must be a normalised absolute path
 * inside work_dir (as from mafsbx_gp_resolve). The walk order is the array
 * order: top-down.
 *
 * Example: W=/maf-sandbox/work, target=/maf-sandbox/work/out/hostname ->
 *   /maf-sandbox, /maf-sandbox/work, /maf-sandbox/work/out
 */
struct mafsbx_gp_chain {
	char **paths;
	size_t n;
	size_t n_above;          /* how many leading entries are strict ancestors of work_dir */
};
int mafsbx_gp_ancestors(const char *work_dir, const char *target, bool include_self,
			struct mafsbx_gp_chain *out, struct mafsbx_error *err);
void mafsbx_gp_chain_free(struct mafsbx_gp_chain *c);

/*
 * Check a user-supplied relative name (a declared output, a FUSE lookup
 * path under work/): non-empty, relative, no empty, `.` or `..` component,
 * no backslash, each component at most 255 bytes.
 * With MAFSBX_GP_NAME_STRICT (the narrow rule of doc/upstream.md §5.12 for declared
 * outputs) also: no byte 1..31, valid UTF-8, at most 255 bytes in all.
 */
#define MAFSBX_GP_NAME_STRICT 0x1
int mafsbx_gp_check_name(const char *name, unsigned flags, struct mafsbx_error *err);

#endif
