#!/bin/bash
# interrupt.sh: a caller killed while its request waits in the daemon is gone
# at once (doc/protocol.md "Interrupted callers"); without FUSE interrupts
# the kernel keeps it in state D until the daemon answers:
#   1. a SIGKILLed reader of a detached exec's `wait` (command `sleep 60`)
#      is gone within the bound; the command runs on, and a later reader of
#      `wait` gets the reply when it ends (here: a cancel);
#   2. readers of `wait` killed about when their command ends (the interrupt
#      racing the end): each is gone, and `wait` still answers after;
#   3. a SIGKILLed writer of `.ctl/exec` (a blocking `sleep`) is gone within
#      the bound; its command runs on to its own end, and another descriptor
#      of the same open file reads the request's reply once it ended;
#   4. a writer of `.ctl/exec` that catches a signal meanwhile is not
#      interrupted: its write succeeds and the command runs once;
#   5. on the engine plane (MAFSBX_TEST_PLANE=engine), a SIGKILLed `stat`
#      waiting for a freeze behind a running exec is gone within the bound,
#      nothing is left paused, the exec runs on, and a stat after it works.
# 1 to 4 do not depend on the plane: the engine variant runs 5 alone.
. "$(dirname "$0")/lib.sh"
require_env

# How long a killed caller may take to be gone: "within 1 s" on a quiet
# machine; 3 s leaves room for a loaded one (without interrupts it is the
# command's whole run, 60 s here).
GONE_BOUND_S=3

M=$T/mnt
mount_fs "$M" -o "image=$IMAGE,scope=$SCOPE"
acquire "$M" t a x
N=$SBX

# in_request PID: the process waits for an answer of the daemon (polled for up to 20 s)
in_request() {
	local w
	for _ in $(seq 1 200); do
		w=$(cat "/proc/$1/wchan" 2>/dev/null) || return 1
		case "$w" in *request_wait_answer* | *fuse*) return 0 ;; esac
		sleep 0.1
	done
	log "process $1 waits in '$w', not in a FUSE request"
	return 1
}
# gone_within PID T0: the process is gone before T0 (date +%s%N) plus
# GONE_BOUND_S, by the clock (a loaded machine slows the polling); sets GONE_MS
gone_within() {
	local pid=$1 t0=$2 now
	while :; do
		now=$(date +%s%N)
		if gone "$pid"; then
			GONE_MS=$(((now - t0) / 1000000))
			wait "$pid" 2>/dev/null
			return 0
		fi
		[ $((now - t0)) -lt $((GONE_BOUND_S * 1000000000)) ] || return 1
		sleep 0.02
	done
}
# kill_and_time PID WHAT: SIGKILL, then the milliseconds until it is gone
# (fails past GONE_BOUND_S)
kill_and_time() {
	local pid=$1 what=$2 t0
	t0=$(date +%s%N)
	kill -KILL "$pid" || fail "$what: cannot signal $pid"
	gone_within "$pid" "$t0" ||
		fail "$what: still there (state $(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null)) ${GONE_BOUND_S} s after SIGKILL"
	log "$what: gone ${GONE_MS} ms after SIGKILL"
}

if [ "$PLANE" = local ]; then
# --- 1. a killed reader of `wait` -------------------------------------------------------
detach_exec '"command": "sleep 60"'
X=$M/$N/execs/$XID
cat "$X/wait" >/dev/null &
READER=$!
in_request "$READER" || fail "the reader of wait is not waiting for the command"
sleep 0.5
kill_and_time "$READER" "a reader of wait"
expect_eq "$(jget "$(cat "$X/status")" running)" true "the command after its reader was killed"
expect_eq "$(guest_procs 'sleep 60')" 1 "the command's process after its reader was killed"
# the waiter was taken off: a new reader parks and is answered at the end
cat "$X/wait" >"$T/wait1" &
READER=$!
in_request "$READER" || fail "the second reader of wait is not waiting"
rmdir "$X" || fail "rmdir (cancel) failed"
for _ in $(seq 1 300); do
	gone "$READER" && break
	sleep 0.1
done
gone "$READER" || fail "the second reader of wait still waits after the cancel"
wait "$READER" || fail "the second reader of wait failed after the cancel"
expect_eq "$(jget "$(cat "$T/wait1")" cancelled)" true "wait after a cancel: cancelled"
log "ok: a killed reader of wait is gone; the command ran on; wait answers later readers"

# --- 2. interrupts racing the command's end -------------------------------------------
for i in 1 2 3 4 5 6; do
	detach_exec '"command": "sleep 1"'
	X=$M/$N/execs/$XID
	cat "$X/wait" >/dev/null &
	READER=$!
	# from 0.8 s to 1.3 s: before, about and after the end
	sleep "$(printf '%d.%d' $(((7 + i) / 10)) $(((7 + i) % 10)))"
	t0=$(date +%s%N)
	kill -KILL "$READER" 2>/dev/null
	gone_within "$READER" "$t0" || fail "round $i: the killed reader of wait is still there after ${GONE_BOUND_S} s"
	w=$(timeout 30 cat "$X/wait") || fail "round $i: wait after a killed reader"
	expect_eq "$(jget "$w" ok)" true "round $i: wait's reply"
	expect_eq "$(jget "$w" exit_code)" 0 "round $i: wait's exit_code"
done
log "ok: readers killed about the command's end are gone; wait still answers"

# --- 3. a killed writer of .ctl/exec ------------------------------------------------------
# The writer is a subshell holding the open file; a child of it keeps a
# second descriptor of the same open file and reads the reply later.
(
	exec 3<>"$M/.ctl/exec"
	(
		sleep 2
		timeout 60 cat <&3 >"$T/reply"
	) &
	printf '{"sandbox": "%s", "command": "sleep 12; echo slept"}\n' "$N" >&3
	echo "the write returned" >"$T/returned"
) &
WRITER=$!
for _ in $(seq 1 100); do
	[ "$(guest_procs 'sleep 12')" = 1 ] && break
	sleep 0.1
done
in_request "$WRITER" || fail "the writer of .ctl/exec is not waiting for its command"
kill_and_time "$WRITER" "a writer of .ctl/exec"
[ -e "$T/returned" ] && fail "the killed writer's write returned"
expect_eq "$(guest_procs 'sleep 12')" 1 "the command after its writer was killed"
for _ in $(seq 1 300); do
	[ -s "$T/reply" ] && break
	sleep 0.1
done
[ -s "$T/reply" ] || fail "no reply on the other descriptor within 30 s"
r=$(cat "$T/reply")
expect_eq "$(jget "$r" ok)" true "the reply of the killed writer's exec"
expect_eq "$(jget "$r" stdout)" slept "the command ran to its end"
run_exec "$M" "$N" "echo after"
expect_eq "$CTL_STATUS" OK "an exec after the killed writer's"
log "ok: a killed writer of .ctl/exec is gone; its command ran to its end; the reply is kept"

# --- 4. a caught signal does not interrupt a .ctl write ------------------------------------
# (an EINTR there would make a caller that retries run the request twice)
(
	trap 'echo caught >>"$T/caught"' USR1
	exec 3<>"$M/.ctl/exec"
	printf '{"sandbox": "%s", "command": "sleep 3; echo once >>/tmp/interrupt-once"}\n' "$N" >&3 ||
		exit 1
	cat <&3 >"$T/reply4"
) &
WRITER=$!
for _ in $(seq 1 100); do
	[ "$(guest_procs 'sleep 3')" = 1 ] && break
	sleep 0.1
done
in_request "$WRITER" || fail "the writer of .ctl/exec is not waiting for its command"
kill -USR1 "$WRITER"
wait "$WRITER" || fail "a write of .ctl/exec failed on a caught signal"
expect_eq "$(cat "$T/caught")" caught "the writer's signal handler ran"
expect_eq "$(jget "$(cat "$T/reply4")" ok)" true "the reply after a caught signal"
run_exec "$M" "$N" "cat /tmp/interrupt-once"
expect_eq "$(jget "$CTL_REPLY" stdout)" once "the command ran once"
log "ok: a caught signal leaves a .ctl write to its end"
fi

if [ "$PLANE" = engine ]; then
# --- 5. a killed file call waiting for a freeze behind an exec ---------------------------
detach_exec '"command": "sleep 60"'
X=$M/$N/execs/$XID
sleep 1
stat "$M/$N/work/absent-while-exec" >/dev/null 2>&1 &
STATER=$!
in_request "$STATER" || fail "the stat is not waiting for the daemon"
sleep 1
gone "$STATER" && fail "the stat did not wait for a freeze behind the exec"
kill_and_time "$STATER" "a stat waiting for a freeze"
expect_eq "$("$MFS_TOOL" paused "$SCOPE")" 0 "sandboxes paused after the killed stat"
expect_eq "$(jget "$(cat "$X/status")" running)" true "the exec after the killed stat"
rmdir "$X" || fail "rmdir (cancel) failed"
expect_errno "a stat after the exec" ENOENT stat "$M/$N/work/absent-while-exec"
no_paused
log "ok: a killed file call waiting for a freeze is gone; nothing stays paused"
fi

umount_fs "$M" "$DAEMON_PID"
log "ok"
