#!/usr/bin/env bash
# bench_passthrough.sh: local-plane reads with FUSE passthrough and without.
# A benchmark (prints figures, never run as a test), as root, on a machine
# with the engine and the test image:
#
#   tests/bench/bench_passthrough.sh MFS_TOOL MAFSBXFS [MAFSBXFS...]
#
# MFS_TOOL is the mount tests' helper, build/tests/mount/mfs_tool (not the
# mafsbx CLI).
#
# For each mafsbxfs binary given (e.g. one built with -Dpassthrough=enabled
# and one with -Dpassthrough=disabled): mount on the local plane, acquire a
# sandbox, make a 256 MiB and a 1 KiB file in it, then time reading the
# 256 MiB file (dd, 1 MiB blocks, RUNS runs, the median in MB/s) and 2000
# open-read-close cycles of the 1 KiB file (mean ms per cat, in one Python
# process so no process start is counted). Prints one line per binary with
# .ctl/engine's passthrough state, and beside it the same 256 MiB read from
# the backing file itself (through /proc/PID/root of the sandbox's init,
# with the docker CLI: the ceiling at that moment). RUNS: $BENCH_RUNS
# (default 5). The machine's load is printed: figures on a loaded machine
# are noisy.
set -euo pipefail
tool=$1
shift
runs=${BENCH_RUNS:-5}
image=${MAFSBX_TEST_IMAGE:-mafsbx/busybox:latest}
scope=mafsbxbench-pt-$$
T=$(mktemp -d /tmp/bench-passthrough.XXXXXX)
mnt=$T/mnt
mkdir -p "$mnt"
pid=
cleanup() {
	grep -q " $mnt " /proc/mounts && fusermount3 -u -z "$mnt" 2>/dev/null
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	"$tool" rm-scope "$scope" 2>/dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT
ctl() {
	local out
	out=$("$tool" ctl "$mnt/.ctl/$1" "$2")
	[ "${out%%$'\n'*}" = OK ] || { echo "$1 failed: $out" >&2; exit 1; }
	printf '%s' "${out#*$'\n'}"
}
median_rate() {
	local r=() s e
	for _ in $(seq 1 "$runs"); do
		s=$(date +%s%N)
		dd if="$1" of=/dev/null bs=1M 2>/dev/null
		e=$(date +%s%N)
		r+=("$(awk -v ns=$((e - s)) 'BEGIN { printf "%.0f", 256 * 1048576 / 1e6 / (ns / 1e9) }')")
	done
	printf '%s\n' "${r[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}
echo "load: $(cut -d' ' -f1-3 /proc/loadavg), kernel $(uname -r)"
printf '%-30s %-12s %14s %14s %16s\n' binary passthrough "256MiB MB/s" "1KiB cat ms" "backing MB/s"
for bin in "$@"; do
	"$bin" -f -o plane=local "$mnt" >"$T/daemon.log" 2>&1 &
	pid=$!
	for _ in $(seq 1 200); do grep -q " $mnt " /proc/mounts && break; sleep 0.05; done
	reply=$(ctl acquire "{\"scope\": \"$scope\", \"thread\": \"t\", \"agent\": \"a\", \"kind\": \"k\", \"image\": \"$image\"}")
	name=$(printf '%s' "$reply" | "$tool" jget name)
	ctl exec "{\"sandbox\": \"$name\", \"command\": \"dd if=/dev/zero of=/maf-sandbox/work/big bs=1048576 count=256 2>/dev/null && head -c 1024 /dev/zero > /maf-sandbox/work/small\"}" >/dev/null
	pt=$("$tool" jget passthrough.on <"$mnt/.ctl/engine")
	backing=-
	if command -v docker >/dev/null && gpid=$(docker inspect -f '{{.State.Pid}}' "$name" 2>/dev/null) &&
		[ -r "/proc/$gpid/root/maf-sandbox/work/big" ]; then
		backing=$(median_rate "/proc/$gpid/root/maf-sandbox/work/big")
	fi
	rates=()
	for _ in $(seq 1 "$runs"); do
		sync
		s=$(date +%s%N)
		dd if="$mnt/$name/work/big" of=/dev/null bs=1M 2>/dev/null
		e=$(date +%s%N)
		rates+=("$(awk -v ns=$((e - s)) 'BEGIN { printf "%.0f", 256 * 1048576 / 1e6 / (ns / 1e9) }')")
	done
	median=$(printf '%s\n' "${rates[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
	cat_ms=$(python3 - "$mnt/$name/work/small" <<'PY'
import os, sys, time
p = sys.argv[1]
n = 2000
t = time.perf_counter()
for _ in range(n):
    fd = os.open(p, os.O_RDONLY)
    os.read(fd, 4096)
    os.close(fd)
print("%.4f" % ((time.perf_counter() - t) * 1000 / n))
PY
)
	printf '%-30s %-12s %14s %14s %16s   (runs: %s)\n' "$bin" "$pt" "$median" "$cat_ms" "$backing" "${rates[*]}"
	ctl dispose "{\"name\": \"$name\"}" >/dev/null
	fusermount3 -u "$mnt"
	wait "$pid" || true
	pid=
done
