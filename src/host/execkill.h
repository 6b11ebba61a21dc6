/*
 * execkill.h: ending an exec's process tree from this host (execkill.c), the
 * sandbox left running. Only where the engine runs here: the processes are
 * found by the engine's host PID and signalled through pidfds that were
 * checked to belong to the container (never its init, never a host process).
 */
#ifndef MAFSBX_EXECKILL_H
#define MAFSBX_EXECKILL_H

#include "engine.h"
#include "error.h"
#include "pin.h"

/*
 * SIGKILL exec `exec_id`'s process and every descendant, in container
 * `container_id` (its full ID). *killed: how many were signalled. Errors:
 * ESRCH the exec runs no more; EPERM its process is not a live process of
 * that container on this host (a remote engine); the engine's errors.
 */
int mafsbx_exec_kill_tree(struct mafsbx_engine *e, const char *container_id, const char *exec_id, int *killed,
			  struct mafsbx_error *err);

/*
 * The proofs that the process whose /proc directory is piddir belongs to
 * container `id` (full ID), whose init's PID namespace and root are `init`:
 * its cgroup names the container where the engine puts it (cgroup.h), it
 * is in the init's PID namespace, and its root is the init's. 0, or -EPERM
 * with *why naming the proof that failed.
 */
int mafsbx_proc_prove_member(int piddir, const char *id, const struct mafsbx_proc_ident *init, const char **why);

#endif
