/*
 * cgroup.h: the one reader of /proc/PID/cgroup texts, shared by the pin
 * check (pin.c), the exec-kill tree (execkill.c), the warm work-dir check
 * (acquire.c), the egress proof (egress.c) and the fingerprint
 * (fingerprint.c).
 *
 * A text is lines "HIERARCHY:CONTROLLERS:PATH": cgroup v1 has one line per
 * hierarchy ("8:pids:/docker/ID"), v2 one line "0::/PATH", a hybrid host
 * both. A container's cgroup is named by its 64-hex ID as one whole path
 * component, at the place where its engine puts it, in one of these
 * layouts (U: the engine's uid, this process's own for a rootless engine):
 *   /docker/ID                      cgroupfs driver
 *   /system.slice/docker-ID.scope   systemd driver
 *   /user.slice/user-U.slice/user@U.service/user.slice/docker-ID.scope
 *                                   rootless Docker (systemd driver)
 *   /user.slice/user-U.slice/user@U.service/app.slice/docker.service/docker/ID
 *                                   rootless Docker (cgroupfs driver)
 *   /machine.slice/libpod-ID.scope, /libpod_parent/libpod-ID, and rootless
 *   Podman's .../user@U.service/user.slice/libpod-ID.scope     Podman
 *   /kubepods[.slice]/.../{ID, docker-ID.scope, crio-ID.scope, cri-containerd-ID.scope}
 *                                   Kubernetes runtimes (kubelet's subtree)
 *   OUTER/docker/ID                 an engine inside a container, OUTER that
 *                                   container's own cgroup in a layout above
 * optionally followed by deeper components (Podman's ".../container", a
 * runtime's "/init"): the container's own subtree. Anything else is refused:
 * the ID as a prefix or a suffix of another component, inside a longer hex
 * string, with another prefix ("libpod-conmon-ID.scope" is Podman's
 * monitor, not the container), a line not of the form above, and the ID in
 * any other place, above all under a subtree delegated to a user (which that
 * user fills as it likes: ".../user@1000.service/x/docker-ID.scope") or
 * another uid's rootless engine.
 */
#ifndef MAFSBX_CGROUP_H
#define MAFSBX_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* True when the text names the 64-hex (lower-case) container ID as above, with U the engine's uid. Pure. */
bool mafsbx_cgroup_names_container_as(const char *cgroup_text, const char *id, uid_t engine_uid);
/* The same with U this process's effective uid (a rootless engine runs as the user reaching it). */
bool mafsbx_cgroup_names_container(const char *cgroup_text, const char *id);

/* Some line's path holds a run of 64 hex digits: the process is in some
 * container's cgroup (any engine's way of naming one), whichever it is. */
bool mafsbx_cgroup_names_some_container(const char *cgroup_text);

/*
 * Where the cgroup's process list is: the v1 "pids" hierarchy when there is
 * one (*v1_pids true), else the v2 unified one ("0::"). *path receives the
 * path inside that hierarchy (starts with '/', no "." or ".." component, no
 * empty one), malloc'd. 0; -ENOENT when neither hierarchy is listed;
 * -EINVAL for a malformed text or path; -ENOMEM. Pure.
 */
int mafsbx_cgroup_procs_path(const char *cgroup_text, bool *v1_pids, char **path);

#endif
