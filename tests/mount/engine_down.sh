#!/bin/bash
# engine_down.sh: the engine going away while mounted, and coming back.
#
# dockerd is shared with other tests, so instead of stopping it this test
# mounts through a private unix socket that relays to the real one
# (`mfs_tool fwd`, a forwarder the test starts and stops). Stopping the
# relay is, to the daemon, exactly an engine that went away: connections
# are cut and new ones are refused. While it is down, listing, stat, read
# and a .ctl request fail with ENOTCONN (or EIO) and a reply naming the
# problem, nothing hangs, and the daemon stays up; once the relay is back,
# everything works again without remounting, and no container is left
# frozen.
. "$(dirname "$0")/lib.sh"
# What an unreachable engine does to file calls: the engine plane (the local plane
# serves a pinned sandbox without the engine; files_local.sh shows that).
PLANE=engine
require_env

relay_init
start_relay
M=$T/mnt
mount_fs "$M" -o "host=unix://$SOCK"
PID=$DAEMON_PID
expect_eq "$(jget "$(cat "$M/.ctl/engine")" endpoint)" "unix://$SOCK" ".ctl/engine endpoint"

acquire "$M" t a k ', "outputs": ["out.txt"]'
N=$SBX
run_exec "$M" "$N" "echo before > out.txt"
expect_eq "$CTL_STATUS" OK "exec before the outage"
expect_eq "$(cat "$M/$N/work/out.txt")" before "read before the outage"

# --- the engine goes away ---------------------------------------------------
stop_relay
down_errno() {  # desc OP PATH
	local got
	got=$(timeout 60 "$MFS_TOOL" try "$2" "$3") || fail "$1: hung or failed ($got)"
	case "$got" in
	ENOTCONN | EIO) ;;
	*) fail "$1 with the engine down: got '$got', want ENOTCONN or EIO" ;;
	esac
}
down_errno "readdir of the root" readdir "$M"
down_errno "read of an output" read "$M/$N/work/out.txt"
down_errno "stat of a new path" stat "$M/$N/work/other.txt"
down_errno "status" read "$M/$N/status"
out=$(timeout 60 "$MFS_TOOL" ctl "$M/.ctl/exec" "{\"sandbox\": \"$N\", \"argv\": [\"true\"]}") || fail "exec hung"
CTL_STATUS=${out%%$'\n'*}
CTL_REPLY=${out#*$'\n'}
case "$CTL_STATUS" in
ENOTCONN | EIO) ;;
*) fail "exec with the engine down: got '$CTL_STATUS', want ENOTCONN or EIO ($CTL_REPLY)" ;;
esac
expect_eq "$(jget "$CTL_REPLY" ok)" false "exec reply with the engine down"
expect_eq "$(jget "$CTL_REPLY" error.errno)" "$CTL_STATUS" "exec reply errno"
[ -n "$(jget "$CTL_REPLY" error.message)" ] || fail "exec reply names no problem"
kill -0 "$PID" 2>/dev/null || fail "the daemon died while the engine was down"
is_mounted "$M" || fail "the mount went away while the engine was down"

# --- the engine is back: no remount needed -------------------------------------
start_relay
ls "$M" | grep -qx "$N" || fail "the root does not list $N after the engine came back"
expect_eq "$(cat "$M/$N/work/out.txt")" before "read after the engine came back"
run_exec "$M" "$N" "echo after > out.txt"
expect_eq "$CTL_STATUS" OK "exec after the engine came back ($CTL_REPLY)"
expect_eq "$(cat "$M/$N/work/out.txt")" after "read of the new content"
expect_eq "$(jget "$(cat "$M/$N/status")" state)" running "state after the outage"
no_paused

umount_fs "$M" "$PID"
log "PASS"
