/*
 * execkill.h: ending an exec's processes from this host (execkill.c), the
 * sandbox left running. Only where the engine runs here: the processes are
 * found from the engine's host PID and the exec's marker (execmark.h), and
 * signalled through pidfds that were checked to belong to the container
 * (never its init, never a host process, never one older than the exec).
 */
#ifndef MAFSBX_EXECKILL_H
#define MAFSBX_EXECKILL_H

#include "engine.h"
#include "error.h"
#include "pin.h"

/*
 * SIGKILL exec `exec_id`'s processes in container `container_id` (its full
 * ID): its process, every descendant, and every process of the container
 * started since that carries MAFSBX_EXEC_ID=<marker> in its environment,
 * with their descendants (execmark.h); `marker` is the value the exec was
 * given (mafsbx_exec_request.marker), NULL to read it from the exec's own
 * process. *killed: how many were signalled. Errors: ESRCH the exec runs
 * no more; EPERM its process is not a live process of that container on
 * this host (a remote engine); EINVAL a marker that is not one; the
 * engine's errors.
 */
int mafsbx_exec_kill_tree_marked(struct mafsbx_engine *e, const char *container_id, const char *exec_id,
				 const char *marker, int *killed, struct mafsbx_error *err);
/* The same, the marker read from the exec's own process. */
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
