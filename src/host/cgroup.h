/*
 * cgroup.h: the one reader of /proc/PID/cgroup texts, shared by the pin
 * check (pin.c), the exec-kill tree (execkill.c), the warm work-dir check
 * (acquire.c), the egress proof (egress.c) and the fingerprint
 * (fingerprint.c).
 *
 * A text is lines "HIERARCHY:CONTROLLERS:PATH": cgroup v1 has one line per
 * hierarchy ("8:pids:/docker/ID"), v2 one line "0::/PATH", a hybrid host
 * both. A container's cgroup is named, as one whole path component, by its
 * 64-hex ID in one of these forms:
 *   ID                   cgroupfs driver: /docker/ID, nested /docker/A/docker/ID
 *   docker-ID.scope      systemd driver (rootful, or rootless under user@UID.service)
 *   libpod-ID.scope      Podman (systemd manager), libpod-ID (cgroupfs manager)
 *   crio-ID.scope, cri-containerd-ID.scope   Kubernetes runtimes
 * optionally followed by deeper components (Podman's ".../container", a
 * runtime's "/init"). Anything else is refused: the ID as a prefix or a
 * suffix of another component, inside a longer hex string, with another
 * prefix ("libpod-conmon-ID.scope" is Podman's monitor, not the container),
 * or a line that is not of the form above.
 */
#ifndef MAFSBX_CGROUP_H
#define MAFSBX_CGROUP_H

#include <stdbool.h>
#include <stddef.h>

/* True when the text names the 64-hex (lower-case) container ID as above. Pure. */
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
