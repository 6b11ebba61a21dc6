#!/bin/bash
# execs.sh: detached execs (doc/protocol.md "Detached execs"), on this
# host's engine (where a command can be killed without disposing):
#   1. output grows while the command runs, status says running, wait gives
#      the blocking exec's reply with the whole output;
#   2. rmdir NAME/execs/ID cancels: no process of the command runs in the
#      guest right after it returns, the sandbox runs on, host processes and
#      the guest's init are untouched;
#   3. a timeout kills the command and keeps the sandbox;
#   4. output past the per-stream cap is cut and says `truncated`;
#   5. the 33rd finished exec of a sandbox evicts the oldest;
#   6. a guest PID equal to a host process's PID: the cancel never signals
#      the host process (the guest's PID namespace is steered with
#      ns_last_pid so that the command gets the host process's number);
#   7. bad requests: detach not a boolean, an unknown exec, writes refused.
. "$(dirname "$0")/lib.sh"
require_env

M=$T/mnt
mount_fs "$M" -o "image=$IMAGE,scope=$SCOPE"
acquire "$M" t a x
N=$SBX

# detach MOUNT JSON-MEMBERS: starts a detached exec; sets XID
detach() {
	detach_exec "$1"
	expect_eq "$(jget "$CTL_REPLY" path)" "$N/execs/$XID" "the reply's path"
}

# --- 1. live output, status, wait ---------------------------------------------------
detach '"command": "for i in 1 2 3 4 5 6 7 8 9 10; do echo line $i; sleep 0.3; done; echo done >&2; exit 3"'
X=$M/$N/execs/$XID
sleep 1.5
lines=$(wc -l <"$X/stdout")
[ "$lines" -ge 2 ] || fail "after 1.5 s stdout holds $lines lines"
expect_eq "$(jget "$(cat "$X/status")" running)" true "status while it runs"
ls "$M/$N/execs" | grep -qx "$XID" || fail "execs/ does not list $XID"
[ "$(stat -c %s "$X/stdout")" -gt 0 ] || fail "stdout's size does not grow"
w=$(timeout 30 cat "$X/wait") || fail "wait failed"
expect_eq "$(jget "$w" ok)" true "wait: ok"
expect_eq "$(jget "$w" exit_code)" 3 "wait: exit_code"
expect_eq "$(jget "$w" stdout | grep -c "^line ")" 10 "wait: every line"
expect_eq "$(jget "$w" stderr)" "done" "wait: stderr"
st=$(cat "$X/status")
expect_eq "$(jget "$st" running)" false "status at the end"
expect_eq "$(jget "$st" exit_code)" 3 "status exit_code"
expect_eq "$(wc -l <"$X/stdout")" 10 "stdout at the end"
log "ok: live output, status, wait"

# --- 2. cancel ---------------------------------------------------------------------------
sleep 1000 &
HOSTSLEEP=$!
BGPIDS+=("$HOSTSLEEP")
detach '"command": "sh -c \"sleep 300 & sleep 301\"; echo never"'
X=$M/$N/execs/$XID
sleep 1
expect_eq "$(guest_procs 'sleep 30[01]')" 2 "the command's processes before the cancel"
rmdir "$M/$N/execs/$XID" || fail "rmdir (cancel) failed"
expect_eq "$(guest_procs 'sleep 30[01]')" 0 "live processes of the command after the cancel"
[ -e "$X" ] && fail "a cancelled exec is still listed"
expect_eq "$("$MFS_TOOL" state "$N")" running "the sandbox after a cancel"
kill -0 "$HOSTSLEEP" 2>/dev/null || fail "a host process died in the cancel"
run_exec "$M" "$N" "true"
expect_eq "$CTL_STATUS" OK "an exec after the cancel"
log "ok: cancel kills the command's tree, nothing else"

# --- 3. timeout ----------------------------------------------------------------------------
detach '"command": "sleep 60", "timeout": 1'
w=$(timeout 30 cat "$M/$N/execs/$XID/wait") || fail "wait after a timeout"
expect_eq "$(jget "$w" timed_out)" true "wait: timed_out"
expect_eq "$(jget "$w" error.errno)" ETIMEDOUT "wait: the error"
expect_eq "$(jget "$w" sandbox_disposed)" false "a timeout keeps the sandbox on this host"
expect_eq "$("$MFS_TOOL" state "$N")" running "the sandbox after a timeout"
expect_eq "$(guest_procs 'sleep 60')" 0 "the timed-out command's processes"
log "ok: a timeout kills the command, the sandbox stays"

# --- 4. the per-stream cap -------------------------------------------------------------------
detach '"command": "head -c 9437184 /dev/zero; echo small >&2"'
w=$(timeout 60 cat "$M/$N/execs/$XID/status")
timeout 60 cat "$M/$N/execs/$XID/wait" >/dev/null || fail "wait of the big output"
st=$(cat "$M/$N/execs/$XID/status")
expect_eq "$(jget "$st" truncated)" true "over the cap: truncated"
expect_eq "$(jget "$st" stdout_bytes)" 8388608 "stdout kept up to the cap"
expect_eq "$(stat -c %s "$M/$N/execs/$XID/stdout")" 8388608 "stdout's size"
expect_eq "$(cat "$M/$N/execs/$XID/stderr")" small "stderr beside a capped stdout"
log "ok: the cap"

# --- 5. 32 kept per sandbox -----------------------------------------------------------------------
for d in "$M/$N/execs"/*; do rmdir "$d" || fail "rmdir $d"; done
detach '"argv": ["true"]'
FIRST=$XID
timeout 30 cat "$M/$N/execs/$FIRST/wait" >/dev/null
for i in $(seq 2 32); do
	detach '"argv": ["true"]'
	timeout 30 cat "$M/$N/execs/$XID/wait" >/dev/null
done
expect_eq "$(ls "$M/$N/execs" | wc -l)" 32 "32 kept"
detach '"argv": ["true"]'
expect_eq "$(ls "$M/$N/execs" | wc -l)" 32 "still 32 after the 33rd"
[ -e "$M/$N/execs/$FIRST" ] && fail "the oldest was not evicted by the 33rd"
log "ok: 32 kept, the oldest evicted"

# --- 6. a guest PID that is a host process's PID too -------------------------------------
sleep 1000 &
VICTIM=$!
BGPIDS+=("$VICTIM")
INIT=$("$MFS_TOOL" initpid "$N") || fail "the sandbox's init PID"
G=
for try in 1 2 3; do
	# the guest's next PID is the victim's number (pid_max is one for all namespaces)
	nsenter -t "$INIT" -p -- sh -c "echo $((VICTIM - 1)) > /proc/sys/kernel/ns_last_pid" ||
		fail "cannot steer the guest's PIDs"
	detach '"command": "echo $$; exec sleep 300"'
	for i in $(seq 1 50); do
		G=$(head -n 1 "$M/$N/execs/$XID/stdout")
		[ -n "$G" ] && break
		sleep 0.1
	done
	[ "$G" = "$VICTIM" ] && break
	rmdir "$M/$N/execs/$XID"   # another process took the number: again
done
expect_eq "$G" "$VICTIM" "the command's guest PID is the host process's PID"
rmdir "$M/$N/execs/$XID" || fail "cancel"
kill -0 "$VICTIM" 2>/dev/null || fail "the host process with the guest's PID number was signalled"
expect_eq "$(guest_procs 'sleep 300')" 0 "the command after the cancel"
log "ok: a guest PID equal to a host PID: only the guest's process was killed"

# --- 7. refusals ----------------------------------------------------------------------------------
ctl "$M" exec "{\"sandbox\": \"$N\", \"detach\": 1, \"argv\": [\"true\"]}"
expect_eq "$CTL_STATUS" EINVAL "detach not a boolean"
expect_errno "an unknown exec" ENOENT read "$M/$N/execs/0123456789abcdef/status"
expect_errno "rmdir of an unknown exec" ENOENT rmdir "$M/$N/execs/0123456789abcdef"
XID=$(ls "$M/$N/execs" | head -n 1)
[ -n "$XID" ] || fail "no exec kept to write to"
expect_errno "a write to stdout" EACCES write "$M/$N/execs/$XID/stdout" x
log "PASS"
