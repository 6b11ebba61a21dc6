#!/bin/bash
# background.sh: a mount made the way users make it (no -f: the daemon forks)
# leaves nothing frozen, keeps its transfer watchdog, and exits when
# unmounted or signalled. Before the fix, the burst timer and the
# watchdog were started before libfuse's fork and lost in the daemon: the
# first read froze the sandbox for good, the next exec hung, a stalled
# transfer was never cut, and the unmounted daemon never exited.
#   1. the exact scenario: background mount, engine plane, one read; the
#      sandbox is running again within 1 s, an exec works, the unmount ends
#      the daemon (within DAEMON_EXIT_BOUND_S: tests/mount/lib.sh), nothing
#      is paused;
#   2. SIGTERM ends it the same way, a burst's freeze released;
#   3. a stalled engine transfer is cut (stall cut-off 10 s): the read
#      fails instead of succeeding once a 30 s stall ends (the relay holds
#      the engine's side of the stream until then, and the engine queues
#      the unpause behind it, so the failure itself comes after ~30 s);
#   4. start-up errors still reach the caller with its exit status, and a
#      thread that exists before the fork refuses the start.
export MAFSBX_TEST_MOUNT=${MAFSBX_TEST_MOUNT:-background}
. "$(dirname "$0")/lib.sh"
require_relay_env
start_relay

# wait_running NAME SECONDS: the sandbox is not paused (asked on the real socket)
wait_running() {
	local i s
	for i in $(seq 1 $(($2 * 20))); do
		s=$("$MFS_TOOL" state "$1")
		[ "$s" = running ] && return 0
		sleep 0.05
	done
	fail "$1 is '$s' $2 s after the read, want running"
}

# --- 1. the exact scenario ----------------------------------------------------------
M=$T/mnt
mount_relayed "$M"
PID=$DAEMON_PID
[ "$MOUNT_MODE" = foreground ] || [ "$(ps -o ppid= -p "$PID" | tr -d " ")" != "$$" ] || fail "the daemon is the test's child: it did not fork"
acquire "$M" t a one
N=$SBX
run_exec "$M" "$N" "echo hi > o.txt"
expect_eq "$CTL_STATUS" OK "exec before the read"
expect_eq "$(cat "$M/$N/work/o.txt")" hi "read through the background mount"
wait_running "$N" 1
out=$(timeout 30 "$MFS_TOOL" ctl "$M/.ctl/exec" "{\"sandbox\": \"$N\", \"command\": \"cat o.txt\"}") ||
	fail "the exec after the read hung or failed: $out"
CTL_STATUS=${out%%$'\n'*}
CTL_REPLY=${out#*$'\n'}
expect_eq "$CTL_STATUS" OK "exec after the read"
expect_eq "$(jget "$CTL_REPLY" stdout)" "hi" "exec after the read sees the file"
# a fresh burst right before the unmount: its freeze must go with the daemon
cat "$M/$N/work/o.txt" >/dev/null
umount_fs "$M" "$PID"
log "ok: background mount, engine plane: read, not left paused, exec, unmount, exit"

# --- 2. SIGTERM ---------------------------------------------------------------------
mount_relayed "$M" -o burst_ms=200
PID=$DAEMON_PID
cat "$M/$N/work/o.txt" >/dev/null || fail "read before SIGTERM"
kill -TERM "$PID"
wait_exit "$PID" "$DAEMON_EXIT_BOUND_S" || fail "the background daemon did not exit within $DAEMON_EXIT_BOUND_S s of SIGTERM"
for i in $(seq 1 20); do
	is_mounted "$M" || break
	sleep 0.05
done
is_mounted "$M" && fail "$M is still mounted after SIGTERM"
no_paused_now
log "ok: SIGTERM ends the background daemon, its freeze released"

# --- 3. the transfer watchdog lives in the daemon --------------------------------
mount_relayed "$M"
PID=$DAEMON_PID
head -c 400000 /dev/urandom | base64 -w 0 >"$T/big.src"
cp "$T/big.src" "$M/$N/work/big.bin" || fail "write big.bin"
rule stall GET '*/archive[?]path=*' resp=200000 ms=30000
t0=$(date +%s)
if timeout 100 cat "$M/$N/work/big.bin" >/dev/null 2>"$T/read.err"; then
	fail "a read stalled for 30 s succeeded: nothing cut the stalled transfer"
fi
el=$(($(date +%s) - t0))
[ "$(fired "$RULE")" = 1 ] || fail "the stall never fired"
[ "$el" -le 90 ] || fail "the stalled read took $el s"
case "$(cat "$T/read.err")" in
*"Input/output error"* | *"timed out"*) ;;
*) fail "the stalled read failed with: $(cat "$T/read.err")" ;;
esac
rctl clear >/dev/null
wait_unpaused 5 || fail "a sandbox is paused after the cut transfer"
umount_fs "$M" "$PID"
log "ok: a stalled transfer was cut; the read failed after $el s"

# --- 4. start-up errors in the foreground --------------------------------------------
M2=$T/mnt2
mkdir -p "$M2"
rc=0
err=$("$MAFSBXFS" -o "host=unix://$T/nobody.sock" "$M2" 2>&1) || rc=$?
expect_eq "$rc" 1 "exit status of a background mount with no engine"
expect_contains "$err" "cannot reach the Docker engine" "message of a background mount with no engine"
is_mounted "$M2" && fail "a mount with no engine was made"
daemon_pid_of "$M2" >/dev/null && fail "a daemon was left for a mount that failed"
rc=0
err=$("$MAFSBXFS" -o "host=unix://$RELAY_SOCK" -o plane=bogus "$M2" 2>&1) || rc=$?
expect_eq "$rc" 2 "exit status of a background mount with a bad option"
is_mounted "$M2" && fail "a mount with a bad option was made"
: "${MFS_THREAD_PRELOAD:?MFS_THREAD_PRELOAD must name the thread-starting preload}"
rc=0
err=$(LD_PRELOAD=$MFS_THREAD_PRELOAD "$MAFSBXFS" -o "host=unix://$RELAY_SOCK" "$M2" 2>&1) || rc=$?
expect_eq "$rc" 1 "exit status with a thread before the fork"
expect_contains "$err" "threads exist before the daemon forks" "message with a thread before the fork"
is_mounted "$M2" && fail "a mount was made with a thread before the fork"
log "ok: start-up errors reach the caller; a thread before the fork refuses the start"
log "PASS"
