#!/bin/sh
# check_fstab.sh FSTAB_EXAMPLE MAFSBXFS MAFSBX
#
# Both fstab types work through mount.fuse3, run exactly as mount(8) runs it
# (mount(8) itself resets PATH for its helpers, so the built mafsbxfs could
# not be found through it), with the built mafsbxfs first in PATH and a
# temporary mount point:
#  1. the example's one line (type fuse.mafsbxfs), its x-* and mount(8)-only
#     options dropped as mount(8) drops them:
#     `mount.fuse3 SOURCE DIR -o OPTIONS -t fuse.mafsbxfs`, which runs
#     `mafsbxfs SOURCE DIR -o OPTIONS`;
#  2. the older form, type fuse with the program's name as the source:
#     `mount.fuse3 mafsbxfs DIR -o OPTIONS`, which runs `mafsbxfs DIR -o OPTIONS`.
# Each mount must appear as fuse.mafsbxfs and answer .ctl/engine; then it is
# unmounted, and the daemon mount(8) left in the background must be gone
# within 20 s (its own bound on its end, plus slack). Skips (77) without
# root, /dev/fuse, mount.fuse3 or an engine,
# unless MAFSBX_REQUIRE_ENGINE=1 (CI), where a missing engine fails.
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
[ "$type" = fuse.mafsbxfs ] || { echo "FAIL: the type is '$type', not fuse.mafsbxfs" >&2; exit 1; }
[ "$source" = mafsbxfs ] || { echo "FAIL: the source is '$source', not the program's name" >&2; exit 1; }
opts=$(printf '%s' "$options" | tr ',' '\n' | grep -v '^x-' | grep -vx '_netdev\|nofail\|noauto' | paste -sd, -)

work=$(mktemp -d "${TMPDIR:-/tmp}/mafsbx-fstab.XXXXXX") || exit 1
mnt=$work/mnt bindir=$work/bin
mkdir "$mnt" "$bindir" || exit 1
ln -s "$(readlink -f "$daemon")" "$bindir/mafsbxfs"
cleanup() {
	fusermount3 -u -z "$mnt" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

fail=0
# check_mount WHAT COMMAND...: mount with COMMAND, check it serves, unmount.
check_mount() {
	what=$1
	shift
	if ! PATH="$bindir:$PATH" timeout 60 "$@"; then
		echo "FAIL: $what: $* failed" >&2
		fail=1
		return
	fi
	fstype=$(awk -v m="$mnt" '$5 == m { for (i = 7; i <= NF; i++) if ($i == "-") { print $(i + 1); exit } }' /proc/self/mountinfo)
	[ "$fstype" = fuse.mafsbxfs ] || { echo "FAIL: $what: $mnt is mounted as '$fstype', not fuse.mafsbxfs" >&2; fail=1; }
	if ! grep -q '"server_version"' "$mnt/.ctl/engine"; then
		echo "FAIL: $what: $mnt/.ctl/engine does not answer" >&2
		fail=1
	fi
	# The daemon: the mafsbxfs process with the mount point among its arguments.
	pid=
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/exe" 2>/dev/null)" = "$(readlink -f "$daemon")" ] || continue
		tr '\0' '\n' <"$p/cmdline" 2>/dev/null | grep -qxF -- "$mnt" && pid=${p#/proc/}
	done
	[ -n "$pid" ] || { echo "FAIL: $what: no mafsbxfs daemon serves $mnt" >&2; fail=1; }
	if ! fusermount3 -u "$mnt"; then
		echo "FAIL: $what: fusermount3 -u $mnt" >&2
		fail=1
		fusermount3 -u -z "$mnt" 2>/dev/null
	fi
	# gone: no process, or a zombie init has not reaped yet. The bound is
	# the daemon's own on its end (engine calls end 10 s after the session,
	# an unpause 5 s more: fs/main.c) plus 5 s: a daemon that never exits
	# fails, while a CPU-starved one may take seconds (measured here with 45
	# runnable tasks on 2 cores: 0.5-3 s; quiet: ~30 ms).
	if [ -n "$pid" ]; then
		until=$(($(date +%s) + 20))
		while st=$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null) && [ -n "$st" ] && [ "$st" != Z ]; do
			if [ "$(date +%s)" -ge "$until" ]; then
				echo "FAIL: $what: the daemon $pid still runs 20 s after the unmount" >&2
				fail=1
				break
			fi
			sleep 0.05
		done
	fi
	echo "$what: mounts through $helper and unmounts"
}

check_mount "the example's line (type $type)" "$helper" "$source" "$mnt" -o "$opts" -t "$type"
check_mount "type fuse" "$helper" mafsbxfs "$mnt" -o "$opts"
exit $fail
