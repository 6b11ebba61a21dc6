#!/usr/bin/env bash
# tests/platform/cgroupv2.sh: the mount on cgroup v2, in a small VM.
#
# This machine's PID 1 holds the cgroup v1 hierarchies, so a dockerd in v2
# mode cannot run here; a VM with its own kernel can. Run as root on the host;
# needs qemu-system-x86 (TCG is enough: this machine's /dev/kvm fails on the
# Debian kernel's decompressor, "KVM internal error ... emulation failure"),
# the host's engine, mkfs.ext4 and debootstrap (for tests/platform/debian13.sh).
#
#   1. the Debian 13 setup image of tests/platform/debian13.sh (made or found
#      by its --images-only)
#   2. the VM's disk under $MAFSBX_PLATFORM_CACHE (/var/cache/mafsbx): that
#      image plus linux-image-amd64, exported and written into an ext4 image
#      with mkfs.ext4 -d, its kernel and initrd beside it; made once, reused
#      (KEY: the setup image's and this script's init's hash)
#   3. the build, natively: a container of the setup image builds build/ in a
#      copy of the tree kept under the cache (incremental across runs), since
#      compiling under TCG would take most of an hour
#   4. the VM: qemu -snapshot (no disk is changed), -kernel/-initrd direct,
#      init=/sbin/mafsbx-vm-init (below), which mounts the built tree (the
#      second disk, an ext4 image made with mkfs.ext4 -d for each run) and
#      runs its tests/platform/vm-init.sh: cgroup2 at /sys/fs/cgroup (no v1
#      hierarchy at all), then tests/platform/vm-inside.sh: dockerd (cgroup
#      v2, driver cgroupfs), the offline image, the mount tests; the output
#      goes to the serial console and a 9p share, then the VM powers off
#
# MAFSBX_CGV2_TIMEOUT (seconds, default 1200) bounds the VM: timeout kills
# qemu then. MAFSBX_CGV2_TESTS names the meson tests run inside (default:
# cgroups cgroups-engine story story-engine). The VM's console, the meson
# log and the output are kept in $MAFSBX_PLATFORM_CACHE/cgroupv2-last/. Exits with the inside run's status; its last
# line is "cgroupv2: N passed, N failed, N skipped". --images-only makes (or
# finds) the images and stops.
set -euo pipefail
PROG=cgroupv2
# shellcheck source=tests/platform/lib.sh
. "$(dirname "$0")/lib.sh"
platform_start "${1:---}" docker qemu-system-x86_64 mkfs.ext4 sha256sum flock timeout
vm_timeout=${MAFSBX_CGV2_TIMEOUT:-1200}
vm_tests=${MAFSBX_CGV2_TESTS:-cgroups cgroups-engine story story-engine}
t0=$SECONDS

log "host: $(. /etc/os-release && echo "$PRETTY_NAME"), kernel $(uname -r), load: $(cut -d' ' -f1-3 /proc/loadavg)"
"$here/debian13.sh" --images-only || die "the Debian 13 images"
setup_image=$(setup_image_name)

# The VM's init: the least that makes a system docker runs on, with cgroup v2
# only. Its text is part of the disk's key.
read -r -d '' vm_init <<'INIT' || true
#!/bin/sh
# /sbin/mafsbx-vm-init: PID 1 of tests/platform/cgroupv2.sh's VM. The built
# tree is the second disk; its tests/platform/vm-init.sh does the rest.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /root/mafsbxfs
mount -t ext4 /dev/vdb /root/mafsbxfs && exec /bin/sh /root/mafsbxfs/tests/platform/vm-init.sh
echo "mafsbx-vm-init: cannot mount the tree (/dev/vdb) or run its vm-init.sh"
echo o >/proc/sysrq-trigger
sleep 60
INIT
vm_key=$(printf '%s\n%s\n' "$setup_image" "$vm_init" | sha256sum | cut -c1-16)
vm_dir=$cache/cgroupv2-$vm_key

(
	flock 9
	if [ ! -s "$vm_dir/rootfs.img" ]; then
		log "making the VM's disk $vm_dir (once)"
		s=$SECONDS
		rm -rf "$vm_dir" && mkdir -p "$vm_dir"
		ctr=mafsbx-cgv2-vm-$$
		docker rm -f "$ctr" >/dev/null 2>&1 || true
		docker run --name "$ctr" "$setup_image" bash -c 'export DEBIAN_FRONTEND=noninteractive
			apt-get update -q && apt-get install -y -q --no-install-recommends linux-image-amd64 initramfs-tools kmod &&
			apt-get clean' >"$vm_dir/kernel.log" 2>&1 ||
			{ tail -n 30 "$vm_dir/kernel.log" >&2; docker rm -f "$ctr" >/dev/null; die "installing the kernel failed"; }
		root=$vm_dir/root
		mkdir "$root"
		docker export "$ctr" | tar -C "$root" -xf - || die "docker export"
		docker rm -f "$ctr" >/dev/null
		cp "$root"/boot/vmlinuz-* "$vm_dir/vmlinuz" && cp "$root"/boot/initrd.img-* "$vm_dir/initrd.img" ||
			die "no kernel in the image"
		printf '%s\n' "$vm_init" >"$root/sbin/mafsbx-vm-init" && chmod 755 "$root/sbin/mafsbx-vm-init"
		# docker export leaves these as the container had them
		: >"$root/etc/hostname"
		mkfs.ext4 -q -F -L mafsbxroot -d "$root" "$vm_dir/rootfs.img.partial" 12G >/dev/null ||
			die "mkfs.ext4 -d"
		rm -rf "$root"
		mv "$vm_dir/rootfs.img.partial" "$vm_dir/rootfs.img"
		# disks of an older setup image or init (2 GB each)
		for d in "$cache"/cgroupv2-[0-9a-f]*; do
			[ "$d" = "$vm_dir" ] || rm -rf "$d"
		done
		log "the VM's disk took $((SECONDS - s)) s"
	fi
) 9>"$cache/.lock-cgroupv2"
log "images ready after $((SECONDS - t0)) s ($vm_dir)"
[ "$images_only" = 0 ] || exit 0

# --- the build, natively, in the setup image ---------------------------------
tree=$cache/cgroupv2-tree
mkdir -p "$tree"
s=$SECONDS
stage=$(mktemp -d)
out=
qpid=
cleanup() {
	[ -n "$qpid" ] && kill "$qpid" 2>/dev/null && log "killed the VM (qemu pid $qpid)"
	[ -n "$qpid" ] && wait "$qpid" 2>/dev/null
	rm -rf "$stage"
	[ -n "$out" ] && rm -rf "$out"
	docker rm -f "mafsbx-cgv2-build-$$" >/dev/null 2>&1 || true
	return 0
}
trap cleanup EXIT
trap 'exit 143' TERM INT
# Only files whose content changed are written, so that ninja rebuilds what
# changed; files the tree no longer has are removed (a stale header left by a
# moved file would be found before the new one).
tar -C "$src" --exclude='./build*' --exclude=./.git -cf - . | tar -C "$stage" -xf -
(cd "$stage" && find . -type f) | while read -r f; do
	if ! cmp -s "$stage/$f" "$tree/$f"; then
		mkdir -p "$(dirname "$tree/$f")"
		cp "$stage/$f" "$tree/$f.new" && chmod --reference="$stage/$f" "$tree/$f.new" && mv "$tree/$f.new" "$tree/$f"
	fi
done
(cd "$tree" && find . -path ./build -prune -o -type f -print) | while read -r f; do
	[ -e "$stage/$f" ] || rm -f "$tree/$f"
done
docker run --rm --name "mafsbx-cgv2-build-$$" -v "$tree:/root/mafsbxfs" -w /root/mafsbxfs "$setup_image" \
	bash -c '{ [ -f build/build.ninja ] || CC=gcc meson setup build -Dwerror=true; } >/tmp/build.log 2>&1 &&
		meson compile -C build >>/tmp/build.log 2>&1 || { tail -n 40 /tmp/build.log >&2; exit 1; }' ||
	die "the build in $setup_image failed"
log "built in $((SECONDS - s)) s"

# --- the VM --------------------------------------------------------------------
out=$(mktemp -d /var/tmp/mafsbx-cgv2-out.XXXXXX)

# The built tree as the VM's second disk (copying it in over 9p took minutes under TCG).
mkfs.ext4 -q -F -L mafsbxrun -d "$tree" "$out/tree.img" 2G >/dev/null 2>&1 || die "mkfs.ext4 -d $tree"
mkdir "$out/share"
printf '%s\n' "$vm_tests" >"$out/share/tests"
accel=tcg,thread=multi
log "booting the VM (qemu $accel, 2 CPUs, 4 GiB; timeout $vm_timeout s; load: $(cut -d' ' -f1-3 /proc/loadavg))"
s=$SECONDS
timeout -k 10 "$vm_timeout" qemu-system-x86_64 -accel "$accel" -cpu max -m 4G -smp 2 \
	-nographic -no-reboot -snapshot -nic none \
	-kernel "$vm_dir/vmlinuz" -initrd "$vm_dir/initrd.img" \
	-append "console=ttyS0 root=LABEL=mafsbxroot rw init=/sbin/mafsbx-vm-init quiet panic=-1" \
	-drive "file=$vm_dir/rootfs.img,format=raw,if=virtio" \
	-drive "file=$out/tree.img,format=raw,if=virtio" \
	-virtfs "local,path=$out/share,mount_tag=out,security_model=none" \
	</dev/null >"$out/console" 2>&1 &
qpid=$!
qrc=0
wait "$qpid" || qrc=$?
qpid=
log "the VM ran $((SECONDS - s)) s (qemu status $qrc; load: $(cut -d' ' -f1-3 /proc/loadavg))"
last=$cache/cgroupv2-last
rm -rf "$last" && mkdir -p "$last" && cp "$out/console" "$out/share/"* "$last/" 2>/dev/null
[ -f "$out/share/log" ] && cat "$out/share/log" || { tail -n 60 "$out/console" >&2; die "the VM wrote no log"; }
# what the cgroup checks saw, from the tests' own output
grep -h '^cgroups: ' "$out/share/cgv2.txt" 2>/dev/null | cut -c1-300 || true
[ "$qrc" = 124 ] || [ "$qrc" = 137 ] && die "the VM did not finish within $vm_timeout s"
rc=$(cat "$out/share/rc" 2>/dev/null || echo 99)
# a failed VM shows its kernel's last words and its console's end here: the
# run's directory is gone afterwards, and $last is overwritten by the next run
if [ "$rc" != 0 ]; then
	[ -s "$out/share/kernel.log" ] && sed 's/^/cgroupv2: kernel: /' "$out/share/kernel.log" >&2
	tail -n 40 "$out/console" | sed 's/^/cgroupv2: console: /' >&2
fi
log "cgroup v2 stage finished with status $rc after $((SECONDS - t0)) s"
exit "$rc"
