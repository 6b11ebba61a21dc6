#!/bin/bash
# treekill.sh: a cancel or a timeout ends everything the command started
# (doc/protocol.md "Detached execs", doc/security.md "Findings fixed after
# review"), on this host's engine:
#   1. every exec's environment holds MAFSBX_EXEC_ID, the mount's own value
#      even where the request names it;
#   2. a cancelled detached command that ran `sleep 101 & sleep 102 &
#      (sleep 103 &) ; setsid sleep 104 & wait` (103 daemonised: adopted by
#      the guest's init) leaves nothing of it in the guest 1 s after rmdir
#      returns; a concurrent exec's `sleep 105` in the same sandbox survives;
#      the same when the kill reads the marker from the command's own
#      process (mafsbx_exec_kill_tree, as for a job adopted from elsewhere);
#   3. the same for a blocking exec with timeout 2: ETIMEDOUT, the sandbox
#      kept, nothing of the command left, `sleep 105` still there; and for
#      one whose caller was killed (doc/protocol.md "Interrupted callers"):
#      the command runs on, and its timeout (4 s) ends all of it;
#   4. what a command detached on purpose (`setsid sleep 106 &`, and a
#      detached exec's `setsid sleep 107 &`) outlives the exec's end, the
#      forgetting of the finished exec, and other execs' cancels;
#   5. the guest's init is the same process all along (its start time);
#   6. on a remote engine (tcp://, a relay to this host's) a cancel and a
#      timeout dispose the sandbox, as documented.
. "$(dirname "$0")/lib.sh"
require_env

M=$T/mnt
mount_fs "$M" -o "image=$IMAGE,scope=$SCOPE"
acquire "$M" t a x
N=$SBX

# init_start: the start time of the guest's PID 1 (field 22 of /proc/1/stat)
init_start() {
	run_exec "$M" "$N" "cut -d' ' -f22 /proc/1/stat"
	[ "$CTL_STATUS" = OK ] || fail "reading the init's start time: $CTL_STATUS $CTL_REPLY"
	jget "$CTL_REPLY" stdout | tr -d '\n'
}
# until_procs PATTERN COUNT: wait (up to 30 s) until the guest runs COUNT processes matching PATTERN
until_procs() {
	for _ in $(seq 1 150); do
		[ "$(guest_procs "$1")" = "$2" ] && return 0
		sleep 0.2
	done
	fail "the guest never ran $2 processes of '$1' (it runs $(guest_procs "$1"))"
}
INIT0=$(init_start)
[ -n "$INIT0" ] || fail "no start time for the guest's init"
TREE='sleep 101 & sleep 102 & (sleep 103 &) ; setsid sleep 104 & wait'

# --- 1. the marker ----------------------------------------------------------------------
ctl "$M" exec "{\"sandbox\": \"$N\", \"command\": \"echo \$MAFSBX_EXEC_ID; env | grep -c ^MAFSBX_EXEC_ID=\", \"env\": {\"MAFSBX_EXEC_ID\": \"mine\"}}"
expect_eq "$CTL_STATUS" OK "an exec naming MAFSBX_EXEC_ID ($CTL_REPLY)"
out=$(jget "$CTL_REPLY" stdout)
mark=${out%%$'\n'*}
printf '%s' "$mark" | grep -Eqx '[0-9a-f]{32}' || fail "MAFSBX_EXEC_ID in a blocking exec is '$mark'"
expect_eq "${out#*$'\n'}" 1 "the entries naming MAFSBX_EXEC_ID in the exec's environment"
detach_exec '"command": "echo $MAFSBX_EXEC_ID"'
w=$(timeout 30 cat "$M/$N/execs/$XID/wait") || fail "wait of the detached exec"
expect_eq "$(jget "$w" stdout | tr -d '\n')" "$XID" "MAFSBX_EXEC_ID in a detached exec"
rmdir "$M/$N/execs/$XID" || fail "forgetting the finished exec"
log "ok: every exec carries its marker"

# --- 2. a cancel ends the whole tree, not a concurrent exec ------------------------------------
detach_exec '"command": "sleep 105"'
KEEP=$XID
detach_exec "\"command\": \"$TREE\""
until_procs 'sleep 10[1-5]' 5
# sleep 103's parent is gone: the guest's init adopted it
run_exec "$M" "$N" "ps -o ppid,args | grep ' sleep 103\$'"
expect_eq "$(jget "$CTL_REPLY" stdout | tr -d ' \n')" 1sleep103 "the parent of the daemonised sleep 103"
t0=$(date +%s%N)
rmdir "$M/$N/execs/$XID" || fail "rmdir (cancel) failed"
log "figure: the cancel took $((($(date +%s%N) - t0) / 1000000)) ms with $(ls /proc | grep -c '^[0-9]') processes on the host"
sleep 1
expect_eq "$(guest_procs 'sleep 10[1-4]')" 0 "the cancelled command's processes 1 s after the cancel"
expect_eq "$(guest_procs 'sleep 105')" 1 "the concurrent exec's sleep 105 after the cancel"
expect_eq "$(jget "$(cat "$M/$N/execs/$KEEP/status")" running)" true "the concurrent exec after the cancel"
expect_eq "$("$MFS_TOOL" state "$N")" running "the sandbox after the cancel"
log "ok: a cancel ends what the command daemonised, nothing of another exec"

# --- 2b. a kill without the marker in hand (a job adopted from elsewhere) reads it from the command -------------------
TREE2='sleep 111 & sleep 112 & (sleep 113 &) ; setsid sleep 114 & wait'
detach_exec "\"command\": \"$TREE2\""
until_procs 'sleep 11[1-4]' 4
killed=$("$MFS_TOOL" killexec "$N" "$TREE2") || fail "the kill without the marker in hand"
[ "$killed" -ge 5 ] || fail "the kill without the marker in hand signalled $killed processes, want the shell and 4 sleeps"
sleep 1
expect_eq "$(guest_procs 'sleep 11[1-4]')" 0 "the command's processes 1 s after the kill without the marker in hand"
expect_eq "$(guest_procs 'sleep 105')" 1 "the concurrent exec's sleep 105 after the kill without the marker in hand"
w=$(timeout 30 cat "$M/$N/execs/$XID/wait") || fail "wait of the killed exec"
expect_eq "$(jget "$w" exit_code)" 137 "the exit code of the exec killed without the marker in hand"
rmdir "$M/$N/execs/$XID" || fail "forgetting the killed exec"
log "ok: a kill without the marker in hand reads it from the command's own process"

# --- 3. a blocking timeout ends the whole tree -------------------------------------------------
expect_ctl_error "$M" exec "{\"sandbox\": \"$N\", \"command\": \"$TREE\", \"timeout\": 2}" ETIMEDOUT "the sandbox kept"
expect_eq "$(jget "$CTL_REPLY" timed_out)" true "timed_out"
expect_eq "$(jget "$CTL_REPLY" sandbox_disposed)" false "sandbox_disposed"
sleep 1
expect_eq "$(guest_procs 'sleep 10[1-4]')" 0 "the timed-out command's processes 1 s after its reply"
expect_eq "$(guest_procs 'sleep 105')" 1 "the concurrent exec's sleep 105 after the timeout"
expect_eq "$("$MFS_TOOL" state "$N")" running "the sandbox after the timeout"
log "ok: a blocking timeout ends what the command daemonised, nothing of another exec"

# --- 3b. a caller that gives up: the command runs on, its timeout still ends it all ----------------
"$MFS_TOOL" ctl "$M/.ctl/exec" "{\"sandbox\": \"$N\", \"command\": \"$TREE\", \"timeout\": 4}" >/dev/null 2>&1 &
WRITER=$!
until_procs 'sleep 10[1-4]' 4
kill -KILL "$WRITER"
wait "$WRITER" 2>/dev/null
expect_eq "$(guest_procs 'sleep 10[1-4]')" 4 "the command right after its caller was killed"
until_procs 'sleep 10[1-4]' 0
expect_eq "$(guest_procs 'sleep 105')" 1 "the concurrent exec's sleep 105 after the abandoned exec's timeout"
expect_eq "$("$MFS_TOOL" state "$N")" running "the sandbox after the abandoned exec's timeout"
log "ok: a killed caller's command runs on; its timeout ends what it daemonised"

# --- 4. a finished exec's detached programs live on ---------------------------------------------
run_exec "$M" "$N" "setsid sleep 106 >/dev/null 2>&1 </dev/null & echo started"
expect_eq "$CTL_STATUS" OK "an exec leaving sleep 106 behind ($CTL_REPLY)"
detach_exec '"command": "setsid sleep 107 >/dev/null 2>&1 </dev/null & echo started"'
w=$(timeout 30 cat "$M/$N/execs/$XID/wait") || fail "wait of the exec leaving sleep 107 behind"
expect_eq "$(jget "$w" exit_code)" 0 "the exec leaving sleep 107 behind"
rmdir "$M/$N/execs/$XID" || fail "forgetting the finished exec"
rmdir "$M/$N/execs/$KEEP" || fail "cancel of sleep 105"
sleep 1
expect_eq "$(guest_procs 'sleep 105')" 0 "sleep 105 after its own cancel"
expect_eq "$(guest_procs 'sleep 10[67]')" 2 "what finished execs detached on purpose"
log "ok: what a finished exec detached on purpose outlives it"

# --- 5. the init -----------------------------------------------------------------------------------
expect_eq "$(init_start)" "$INIT0" "the start time of the guest's init"
umount_fs "$M" "$DAEMON_PID"

# --- 6. a remote engine (tcp://, here a relay to this host's): a cancel and a timeout dispose -------------
ENGINE_SOCK=${DOCKER_HOST:-unix:///var/run/docker.sock}
tcp_relay "${ENGINE_SOCK#unix://}"
mount_fs "$M" -o "image=$IMAGE,scope=$SCOPE,host=tcp://127.0.0.1:$PORT"
detach_exec "\"command\": \"$TREE\""
until_procs 'sleep 10[1-4]' 4
rmdir "$M/$N/execs/$XID" || fail "cancel on a remote engine"
expect_eq "$("$MFS_TOOL" state "$N")" absent "the sandbox after a cancel on a remote engine"
acquire "$M" t a y
N=$SBX
expect_ctl_error "$M" exec "{\"sandbox\": \"$N\", \"command\": \"sleep 30\", \"timeout\": 2}" ETIMEDOUT "disposed"
expect_eq "$(jget "$CTL_REPLY" sandbox_disposed)" true "sandbox_disposed after a timeout on a remote engine"
expect_eq "$("$MFS_TOOL" state "$N")" absent "the sandbox after a timeout on a remote engine"
log "ok: on a remote engine a cancel and a timeout dispose, as documented"
log "PASS"
