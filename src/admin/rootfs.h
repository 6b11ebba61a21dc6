/*
 * rootfs.h: the offline test image's root filesystem, built in memory as a
 * tar (what `mafsbx mkimage` imports; no registry is reachable).
 *
 * Contents: /bin/busybox copied from the host's static busybox and a
 * symlink /bin/APPLET -> busybox for every applet it lists; /etc/passwd with
 * root and sandbox (uid 1000, gid 1000, home /home/sandbox); /etc/group;
 * /tmp 1777, /root 0700, /home/sandbox owned 1000:1000; empty /dev, /proc,
 * /sys mount points.
 */
#ifndef MAFSBX_ROOTFS_H
#define MAFSBX_ROOTFS_H

#include <stddef.h>

#include "error.h"

#define MAFSBX_ROOTFS_BUSYBOX "/bin/busybox"
#define MAFSBX_ROOTFS_PASSWD \
	"root:x:0:0:root:/root:/bin/sh\n" \
	"sandbox:x:1000:1000:sandbox:/home/sandbox:/bin/sh\n"
#define MAFSBX_ROOTFS_GROUP \
	"root:x:0:\n" \
	"sandbox:x:1000:\n"

/*
 * Refuse anything but a statically linked ELF executable (no PT_INTERP):
 * a dynamically linked busybox would not run in an image with no libc.
 * Missing file: EK_INVALID with ENOENT, naming the Debian package.
 */
int mafsbx_rootfs_check_static(const char *path, struct mafsbx_error *err);

/*
 * The applet names of `busybox --list` (run with an empty environment and a
 * bounded wait). *names is a NULL-terminated malloc'd array of malloc'd
 * strings; free with mafsbx_rootfs_free_names().
 */
int mafsbx_rootfs_applets(const char *busybox, char ***names, size_t *count, struct mafsbx_error *err);
void mafsbx_rootfs_free_names(char **names);

/*
 * Build the rootfs tar (pax-restricted: plain ustar headers unless a field
 * needs pax) into *tar (malloc'd, *tar_len bytes). `busybox` NULL means
 * MAFSBX_ROOTFS_BUSYBOX. `applets` (optional) receives the number of links.
 */
int mafsbx_rootfs_build(const char *busybox, void **tar, size_t *tar_len, size_t *applets,
			struct mafsbx_error *err);

/*
 * The egress proxy image's rootfs: the same busybox tree plus the static
 * proxy program (tools/egress-proxy, refused when dynamically linked) at
 * MAFSBX_ROOTFS_PROXY_IN_IMAGE.
 */
#define MAFSBX_ROOTFS_PROXY_IN_IMAGE "/usr/bin/mafsbx-egress-proxy"
int mafsbx_rootfs_build_proxy(const char *busybox, const char *proxy, void **tar, size_t *tar_len,
			      struct mafsbx_error *err);

#endif
