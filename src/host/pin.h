/*
 * pin.h: a running container pinned from this host, for the local plane
 * (mafsbxfs(1) READING AND WRITING FILES) and the fingerprint.
 *
 * A pin is the container's init process held by a pidfd, checked against
 * the engine (inspect: same ID, same StartedAt, same PID, before and after
 * the pidfd was taken), checked against the kernel (the process's cgroup
 * names the container ID where its engine puts it, or, where the engine
 * gives containers no cgroup, its parent is the runtime shim started for
 * that ID; its PID namespace is not this daemon's unless the engine says
 * the container shares one; its root is the engine's GraphDriver MergedDir
 * where that mount is visible here), and an O_PATH handle of its root directory
 * (/proc/PID/root) opened while the pidfd said the process was alive. So a
 * recycled PID is never followed into another process's root: if the
 * container's init died before the root was opened the pidfd says so and the
 * pin is refused; if it dies later, mafsbx_pin_alive() turns false and the
 * caller pins again (a restarted container has a new PID).
 *
 * Ids seen inside the container are mapped to host ids through the init
 * process's uid_map/gid_map (userns-remap); an id outside the map cannot be
 * acted as (EK_UNSUPPORTED).
 *
 * A pin is immutable after mafsbx_pin_open() and may be shared between
 * threads; its owner frees it when no thread uses it any more.
 */
#ifndef MAFSBX_PIN_H
#define MAFSBX_PIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"

struct mafsbx_engine;

#define MAFSBX_PIN_MAP_MAX 16

struct mafsbx_id_map {
	uint32_t inside, outside, count;
};

struct mafsbx_pin {
	char id[65];
	pid_t pid;                /* the container's init, in our PID namespace */
	int pidfd;
	int root;                 /* O_PATH | O_DIRECTORY of /proc/PID/root */
	char started_at[64];      /* State.StartedAt as the engine said it */
	bool privileged;          /* HostConfig.Privileged */
	bool host_pid;            /* HostConfig.PidMode is "host" or another container's */
	size_t n_uid_map, n_gid_map;
	struct mafsbx_id_map uid_map[MAFSBX_PIN_MAP_MAX];
	struct mafsbx_id_map gid_map[MAFSBX_PIN_MAP_MAX];
	size_t n_groups;          /* init's supplementary groups (host ids) */
	gid_t groups[32];
	uid_t init_uid;           /* init's effective ids (host ids) */
	gid_t init_gid;
};

/*
 * Pin the running container `container` (name or ID). Errors:
 *  EK_NO_CONTAINER   no such container;
 *  EK_NOT_RUNNING    not running (no init process; a stopped sandbox);
 *  EK_UNSUPPORTED    the process is not visible or not this container's
 *                    (another PID namespace, a remote engine, a cgroup that
 *                    does not name the ID), or /proc cannot be trusted;
 *  plus the engine's errors. The message says which.
 */
int mafsbx_pin_open(struct mafsbx_engine *e, const char *container, struct mafsbx_pin **out,
		    struct mafsbx_error *err);
void mafsbx_pin_free(struct mafsbx_pin *p);

/*
 * True when the parent of the process whose /proc directory is piddir (an
 * O_PATH handle) is the runtime shim of container `id` (a containerd shim
 * with "-id ID" among its arguments): the proof that it is the container's
 * init where the engine gives containers no cgroup (cgroup driver 'none').
 * Only for a process in no container's cgroup, and a shim whose real and
 * effective uids are this process's own: anyone may take a shim's name and
 * arguments, and a process of another user or of a rootful guest must never
 * pass for an init.
 */
bool mafsbx_pid_shim_names(int piddir, const char *id);

/* A process's PID namespace and root directory, as (device, inode) pairs. */
struct mafsbx_proc_ident {
	dev_t ns_dev;
	ino_t ns_ino;
	dev_t root_dev;
	ino_t root_ino;
};

/* Of the process whose /proc directory is piddir (stat of ns/pid and root). 0 or -errno. */
int mafsbx_proc_ident_of(int piddir, struct mafsbx_proc_ident *out);

/*
 * The proofs that the process whose /proc directory is piddir (PID pid in
 * this namespace) is container id's init, each refused with a message
 * naming the proof that failed (EK_UNSUPPORTED EOPNOTSUPP):
 *  - the cgroup proof: its cgroup names the container where the engine
 *    puts it (cgroup.h), or its parent is the container's shim (above);
 *  - the PID namespace proof: unless pidmode (HostConfig.PidMode) shares a
 *    namespace, the process's is not this daemon's own;
 *  - the root filesystem proof: where merged_dir (GraphDriver.Data.MergedDir;
 *    NULL or "" for none) is a mount point in this mount namespace, the
 *    process's root is that mount's root.
 * The caller checks its pidfd afterwards, as for every /proc read. 0 or <0.
 */
int mafsbx_pin_prove_init(int piddir, pid_t pid, const char *id, const char *pidmode, const char *merged_dir,
			  struct mafsbx_error *err);

/* False once the pinned init process has exited (the pidfd is readable). */
bool mafsbx_pin_alive(const struct mafsbx_pin *p);

/* Guest id -> host id through the maps. 0, or -ERANGE when unmapped. */
int mafsbx_pin_host_uid(const struct mafsbx_pin *p, uid_t guest, uid_t *host);
int mafsbx_pin_host_gid(const struct mafsbx_pin *p, gid_t guest, gid_t *host);
/* Host id -> guest id (what a stat shows the guest). -ERANGE when unmapped. */
int mafsbx_pin_guest_uid(const struct mafsbx_pin *p, uid_t host, uid_t *guest);
int mafsbx_pin_guest_gid(const struct mafsbx_pin *p, gid_t host, gid_t *guest);

/*
 * Re-open an O_PATH handle through /proc/thread-self/fd (checked procfs)
 * with `flags` (O_CLOEXEC is added): the same inode, with the permission
 * check of the calling thread's credentials. Callers check the type first:
 * never re-open a fifo or a device from the host. A new fd or -errno.
 */
int mafsbx_reopen(int opath_fd, int flags);
/* Run fn(dirfd, name) on the magic link of an O_PATH handle (chmod, utimensat). */
int mafsbx_proc_fd_path(int opath_fd, int *dirfd, char *name, size_t size);

/* True when HostConfig.PidMode shares another PID namespace ("host", "container:ID"); "" (Docker's
 * own namespace) and "private" (Podman's word for it) do not. Pure. */
bool mafsbx_pidmode_shared(const char *pidmode);
/* Parse one /proc/PID/{uid,gid}_map text. 0 or -EINVAL. Pure; unit-tested. */
int mafsbx_id_map_parse(const char *text, struct mafsbx_id_map *out, size_t max, size_t *n);

#endif
