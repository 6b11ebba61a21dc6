#!/bin/bash
# bench_jobs.sh: what job monitors cost (doc/protocol.md "Jobs that outlive
# the daemon"). A benchmark (prints figures, never run as a test), as root,
# on a machine with the engine and the test image:
#
#   MAFSBXFS=build/fs/mafsbxfs MFS_TOOL=build/tests/mount/mfs_tool tests/bench/bench_jobs.sh
#
# Starts 64 detached execs (`sleep 600`, 32 in each of two sandboxes: the
# mount's bounds), restarts the daemon (a clean unmount, then a mount), and
# checks that all 64 are adopted and running; then prints the monitors'
# resident memory together (VmRSS summed, and PSS from smaps_rollup, which
# shares the pages of the binary and its libraries among them), the time
# the 64 detaches took, and how long the new mount took to adopt them. The
# jobs are cancelled and the sandboxes removed at the end.
. "$(dirname "$0")/../mount/lib.sh"
require_env

M=$T/mnt
mount_fs "$M" -o "image=$IMAGE,scope=$SCOPE"
acquire "$M" t a x
A=$SBX
acquire "$M" t b x
B=$SBX
declare -A OURS
t0=$(date +%s%N)
for s in "$A" "$B"; do
	N=$s
	for i in $(seq 1 32); do
		detach_exec '"argv": ["sleep", "600"]'
		OURS[$XID]=1
	done
done
t1=$(date +%s%N)
umount_fs "$M" "$DAEMON_PID"
t2=$(date +%s%N)
mount_fs "$M" -o "image=$IMAGE,scope=$SCOPE"
t3=$(date +%s%N)
adopted=0
for s in "$A" "$B"; do
	for x in "$M/$s/execs"/*; do
		[ "$(jget "$(cat "$x/status")" running)" = true ] && adopted=$((adopted + 1))
	done
done
rss=0 pss=0 n=0
for p in /proc/[0-9]*; do
	cmd=$({ tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null) || continue
	case "$cmd" in *--job-monitor*) ;; *) continue ;; esac
	# only this run's: the job directory's last segment is one of its IDs
	x=${cmd% }
	[ -n "${OURS[${x##*/}]:-}" ] || continue
	r=$(awk '/^VmRSS:/ { print $2 }' "$p/status" 2>/dev/null) || continue
	q=$(awk '/^Pss:/ { print $2 }' "$p/smaps_rollup" 2>/dev/null)
	rss=$((rss + ${r:-0}))
	pss=$((pss + ${q:-0}))
	n=$((n + 1))
done
printf 'jobs: 64 started in %d ms; daemon restarted (unmount %d ms, mount with adoption %d ms)\n' \
	$(((t1 - t0) / 1000000)) $(((t2 - t1) / 1000000)) $(((t3 - t2) / 1000000))
printf 'jobs: %d of 64 adopted running; %d monitors: VmRSS %d KiB together (%d KiB each), PSS %d KiB together\n' \
	"$adopted" "$n" "$rss" $((n ? rss / n : 0)) "$pss"
for s in "$A" "$B"; do
	for x in "$M/$s/execs"/*; do rmdir "$x" 2>/dev/null & done
done
wait
[ "$adopted" = 64 ] || fail "$adopted of 64 jobs adopted"
