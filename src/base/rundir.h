/*
 * rundir.h: the runtime directory of this process's private files (the
 * freeze lock files, the ssh transport's sockets): which one it is, and
 * making it.
 */
#ifndef MAFSBX_RUNDIR_H
#define MAFSBX_RUNDIR_H

#include "error.h"

#define MAFSBX_RUNDIR_DEFAULT "/run/mafsbxfs"
#define MAFSBX_RUNDIR_ENV "MAFSBX_RUNDIR"

/*
 * `explicit_dir` if non-NULL, else $MAFSBX_RUNDIR, else /run/mafsbxfs as
 * root and $XDG_RUNTIME_DIR/mafsbxfs (or /tmp/mafsbxfs-UID) otherwise.
 * malloc'd, or NULL when out of memory.
 */
char *mafsbx_rundir_choose(const char *explicit_dir);

/*
 * Make `dir` and its missing parents (0700), then check with lstat that it
 * is a directory (not a link) owned by this effective uid. 0 or a negative
 * errno with `err` set.
 */
int mafsbx_rundir_ensure(const char *dir, struct mafsbx_error *err);

#endif
