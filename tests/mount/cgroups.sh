#!/bin/bash
# cgroups.sh: the mount against the engine's own cgroups, whichever version
# the machine runs (CI's host: cgroup v1; tests/platform/cgroupv2.sh's VM:
# cgroup v2 only, the unified hierarchy at /sys/fs/cgroup).
#
#   - .ctl/engine's cgroup_version and cgroup_driver are the engine's, and
#     the version is the one /sys/fs/cgroup holds
#   - a sandbox's init has the /proc/PID/cgroup text of that version (v2: the
#     one line "0::/PATH", PATH naming the container's ID), and a file call
#     passes the pin check, which reads that text (src/host/cgroup.h)
#   - `mafsbx fingerprint` finds the init among its cgroup's processes
#     (cgroup.procs of the v2 path, or of the v1 pids hierarchy)
#   - a pause freezes that cgroup (v2: cgroup.freeze 1 and "frozen 1" in
#     cgroup.events; v1: freezer.state FROZEN), an unpause thaws it, and on
#     the engine plane (MAFSBX_TEST_PLANE=engine) the file calls, which run
#     under such a freeze, work and leave nothing paused
. "$(dirname "$0")/lib.sh"
require_env
command -v docker >/dev/null || skip_or_fail "the docker CLI is missing"
: "${MAFSBX_CLI:?MAFSBX_CLI must name the mafsbx binary}"

M=$T/mnt
mount_fs "$M"
ENG=$(cat "$M/.ctl/engine")
VER=$(jget "$ENG" cgroup_version)
DRV=$(jget "$ENG" cgroup_driver)
log "plane $PLANE; .ctl/engine: cgroup v$VER, driver $DRV; /sys/fs/cgroup is $(stat -fc %T /sys/fs/cgroup)"
expect_eq "$VER" "$(docker info --format '{{.CgroupVersion}}')" ".ctl/engine cgroup_version"
expect_eq "$DRV" "$(docker info --format '{{.CgroupDriver}}')" ".ctl/engine cgroup_driver"
case "$VER" in
2) expect_eq "$(stat -fc %T /sys/fs/cgroup)" cgroup2fs "/sys/fs/cgroup with the engine on cgroup v2" ;;
1) [ "$(stat -fc %T /sys/fs/cgroup)" != cgroup2fs ] || fail "the engine says cgroup v1 on a cgroup2 /sys/fs/cgroup" ;;
*) fail ".ctl/engine cgroup_version '$VER' (want 1 or 2)" ;;
esac

acquire "$M" t a k
N=$SBX
ID=$(jget "$CTL_REPLY" id)
run_exec "$M" "$N" "echo seen > seen.txt"
expect_eq "$CTL_STATUS" OK "exec ($CTL_REPLY)"
PID=$(docker inspect -f '{{.State.Pid}}' "$ID")
[ "$PID" -gt 0 ] 2>/dev/null || fail "the sandbox's init has no PID ($PID)"
TEXT=$(cat "/proc/$PID/cgroup")
log "/proc/$PID/cgroup: $(printf '%s' "$TEXT" | tr '\n' ' ')"

# the file call: on the local plane, after the pin check of that text
expect_eq "$(cat "$M/$N/work/seen.txt")" seen "read through the mount"

# the init among the fingerprint's processes (PIDs of the container's namespace)
"$MAFSBX_CLI" fingerprint "$N" --json -o "$T/fp.json" >/dev/null || fail "mafsbx fingerprint $N"
"$MFS_TOOL" jget processes <"$T/fp.json" | grep -q '"pid": *1,' ||
	fail "the fingerprint's processes lack the init (PID 1 inside): $("$MFS_TOOL" jget processes <"$T/fp.json")"

if [ "$VER" = 2 ]; then
	lines=$(printf '%s\n' "$TEXT" | grep -c .)
	expect_eq "$lines" 1 "lines of /proc/$PID/cgroup on cgroup v2"
	case "$TEXT" in
	0::/*"$ID"*) ;;
	*) fail "/proc/$PID/cgroup is not one '0::/PATH' line naming $ID: $TEXT" ;;
	esac
	CG=/sys/fs/cgroup${TEXT#0::}
	[ -f "$CG/cgroup.freeze" ] || fail "no $CG/cgroup.freeze"
	frozen() { expect_eq "$(cat "$CG/cgroup.freeze")" "$1" "$CG/cgroup.freeze ($2)"
		grep -qx "frozen $1" "$CG/cgroup.events" || fail "$CG/cgroup.events ($2): $(tr '\n' ' ' <"$CG/cgroup.events")"; }
else
	path=$(printf '%s\n' "$TEXT" | sed -n 's/^[0-9]*:\(.*,\)\{0,1\}freezer\(,[^:]*\)\{0,1\}://p')
	[ -n "$path" ] || fail "no freezer line in /proc/$PID/cgroup"
	CG=/sys/fs/cgroup/freezer$path
	frozen() {
		local want=THAWED
		[ "$1" = 1 ] && want=FROZEN
		expect_eq "$(cat "$CG/freezer.state")" "$want" "$CG/freezer.state ($2)"
	}
fi
# On the engine plane a file call's freeze outlives it by the burst
# (-o burst_ms, 5 ms) and the unpause the engine then makes: wait for that
# (as no_paused does) before saying the cgroup is thawed.
thawed_soon() {
	local i
	for i in $(seq 1 30); do
		[ "$(docker inspect -f '{{.State.Paused}}' "$ID")" = false ] && break
		sleep 0.1
	done
	frozen 0 "$1"
}
thawed_soon "running"
docker pause "$ID" >/dev/null || fail "docker pause"
frozen 1 "paused"
docker unpause "$ID" >/dev/null || fail "docker unpause"
frozen 0 "unpaused"

# file calls again (on the engine plane each runs under a freeze of that
# cgroup), then nothing left frozen
echo written >"$M/$N/work/new.txt" || fail "write through the mount"
expect_eq "$(cat "$M/$N/work/new.txt")" written "read back through the mount"
ls "$M/$N/work" | grep -qx new.txt || fail "new.txt not listed"
thawed_soon "after the file calls"
no_paused
log "ok: cgroup v$VER ($DRV), pin check, fingerprint, freeze and thaw, file calls on the $PLANE plane"
