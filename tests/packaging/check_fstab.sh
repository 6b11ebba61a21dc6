#!/bin/sh
# check_fstab.sh FSTAB_EXAMPLE MAFSBXFS MAFSBX
#
# The fstab example works through mount.fuse3: take its one line, drop the
# x-* options as mount(8) does before it runs the helper, and run
# `mount.fuse3 SOURCE DIR -o OPTIONS` exactly as mount(8) would, with the
# built mafsbxfs first in PATH and a temporary mount point. The mount must
# appear as fuse.mafsbxfs and answer .ctl/engine; then it is unmounted, and
# the daemon mount(8) left in the background must be gone within 2 s.
# Skips (77) without root, /dev/fuse, mount.fuse3 or an engine, unless
# MAFSBX_REQUIRE_ENGINE=1 (CI), where a missing engine fails.
set -u
example=$1 daemon=$2 cli=$3

skip() { echo "SKIP: $*" >&2; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (allow_other and a system mount)"
[ -c /dev/fuse ] || skip "no /dev/fuse"
helper=$(command -v mount.fuse3 || ls /sbin/mount.fuse3 /usr/sbin/mount.fuse3 2>/dev/null | head -n1)
[ -n "$helper" ] || skip "no mount.fuse3"
if ! "$cli" ls >/dev/null 2>&1; then
	[ "${MAFSBX_REQUIRE_ENGINE:-0}" = 1 ] && { echo "FAIL: no engine answers" >&2; exit 1; }
	skip "no engine answers"
fi

line=$(grep -v '^[[:space:]]*#' "$example" | grep -v '^[[:space:]]*$')
[ "$(printf '%s\n' "$line" | wc -l)" = 1 ] || { echo "FAIL: the example must hold exactly one fstab line" >&2; exit 1; }
set -- $line
[ $# = 6 ] || { echo "FAIL: the fstab line has $# fields, not 6" >&2; exit 1; }
source=$1 type=$3 options=$4
[ "$type" = fuse ] || { echo "FAIL: the type is '$type'; mount.fuse3 passes the source along unless it is plain 'fuse'" >&2; exit 1; }
[ "$source" = mafsbxfs ] || { echo "FAIL: the source is '$source', not the program's name" >&2; exit 1; }
opts=$(printf '%s' "$options" | tr ',' '\n' | grep -v '^x-' | paste -sd, -)

mnt=$(mktemp -d "${TMPDIR:-/tmp}/mafsbx-fstab.XXXXXX") || exit 1
bindir=$(mktemp -d "${TMPDIR:-/tmp}/mafsbx-fstab-bin.XXXXXX") || exit 1
ln -s "$(readlink -f "$daemon")" "$bindir/mafsbxfs"
cleanup() {
	fusermount3 -u -z "$mnt" 2>/dev/null
	rmdir "$mnt" 2>/dev/null
	rm -rf "$bindir"
}
trap cleanup EXIT INT TERM

if ! PATH="$bindir:$PATH" timeout 60 "$helper" "$source" "$mnt" -o "$opts"; then
	echo "FAIL: $helper $source $mnt -o $opts failed" >&2
	exit 1
fi
fail=0
fstype=$(awk -v m="$mnt" '$5 == m { for (i = 7; i <= NF; i++) if ($i == "-") { print $(i + 1); exit } }' /proc/self/mountinfo)
[ "$fstype" = fuse.mafsbxfs ] || { echo "FAIL: $mnt is mounted as '$fstype', not fuse.mafsbxfs" >&2; fail=1; }
if ! grep -q '"server_version"' "$mnt/.ctl/engine"; then
	echo "FAIL: $mnt/.ctl/engine does not answer" >&2
	fail=1
fi
# The daemon: the mafsbxfs process with the mount point among its arguments.
pid=
for p in /proc/[0-9]*; do
	[ "$(readlink "$p/exe" 2>/dev/null)" = "$(readlink -f "$daemon")" ] || continue
	tr '\0' '\n' <"$p/cmdline" 2>/dev/null | grep -qxF -- "$mnt" && pid=${p#/proc/}
done
[ -n "$pid" ] || { echo "FAIL: no mafsbxfs daemon serves $mnt" >&2; fail=1; }
if ! fusermount3 -u "$mnt"; then
	echo "FAIL: fusermount3 -u $mnt" >&2
	fail=1
fi
# gone: no process, or a zombie init has not reaped yet
if [ -n "$pid" ]; then
	i=0
	while st=$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null) && [ -n "$st" ] && [ "$st" != Z ]; do
		i=$((i + 1))
		if [ $i -gt 40 ]; then
			echo "FAIL: the daemon $pid still runs 2 s after the unmount" >&2
			fail=1
			break
		fi
		sleep 0.05
	done
fi
[ $fail = 0 ] && echo "the fstab example mounts through $helper: mafsbxfs $mnt -o $opts"
exit $fail
