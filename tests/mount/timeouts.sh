#!/bin/bash
# timeouts.sh: an exec's timeout (doc/protocol.md "The transactions"),
# on this host's engine (where a command can be killed without disposing):
#   1. a default mount takes a 900 s timeout (over the old 300 s ceiling),
#      blocking and detached (the detached one cancelled); so does the shell
#      verb `mafsbx exec --timeout`;
#   2. a blocking exec past its timeout fails with ETIMEDOUT, timed_out,
#      the output so far, "sandbox_disposed": false: its processes are gone
#      from the guest, the sandbox and its work files are still there; the
#      shell verb's timeout (exit 124) keeps the sandbox too;
#   3. "on_timeout": "dispose" disposes the sandbox, as upstream; an unknown
#      value is EINVAL naming the field;
#   4. -o max_exec_timeout=600 refuses 900 with EINVAL naming the option,
#      and takes 600; -o max_exec_timeout=0 takes 1e12 s (blocking, and
#      detached, then cancelled);
#   5. -o exec_timeout=700,max_exec_timeout=600 refuses to mount, saying why.
. "$(dirname "$0")/lib.sh"
require_env
: "${MAFSBX_CLI:?MAFSBX_CLI must name the mafsbx binary}"

M=$T/mnt
mount_fs "$M" -o "image=$IMAGE,scope=$SCOPE"
acquire "$M" t a x
N=$SBX

# --- 1. a timeout past the old ceiling -------------------------------------------------
ctl "$M" exec "{\"sandbox\": \"$N\", \"argv\": [\"true\"], \"timeout\": 900}"
expect_eq "$CTL_STATUS" OK "a blocking exec with timeout 900 on a default mount ($CTL_REPLY)"
expect_eq "$(jget "$CTL_REPLY" exit_code)" 0 "its exit code"
ctl "$M" exec "{\"sandbox\": \"$N\", \"command\": \"sleep 120\", \"timeout\": 900, \"detach\": true}"
expect_eq "$CTL_STATUS" OK "a detached exec with timeout 900 on a default mount ($CTL_REPLY)"
XID=$(jget "$CTL_REPLY" exec)
expect_eq "$(jget "$(cat "$M/$N/execs/$XID/status")" running)" true "the detached exec runs"
rmdir "$M/$N/execs/$XID" || fail "cancel of the detached exec"
expect_eq "$(guest_procs 'sleep 120')" 0 "the cancelled command's processes"
out=$(timeout 120 "$MAFSBX_CLI" exec --timeout 900 "$N" -- echo long) ||
	fail "mafsbx exec --timeout 900: exit $?"
expect_eq "$out" long "mafsbx exec --timeout 900"
log "ok: a 900 s timeout is taken"

# --- 2. a blocking timeout keeps the sandbox ---------------------------------------------
printf 'kept\n' >"$M/$N/work/before.txt" || fail "write a work file"
expect_ctl_error "$M" exec "{\"sandbox\": \"$N\", \"command\": \"echo started; sleep 30\", \"timeout\": 2}" \
	ETIMEDOUT "the sandbox kept"
expect_eq "$(jget "$CTL_REPLY" timed_out)" true "timed_out"
expect_eq "$(jget "$CTL_REPLY" sandbox_disposed)" false "sandbox_disposed"
expect_eq "$(jget "$CTL_REPLY" stdout)" started "the output so far"
expect_eq "$("$MFS_TOOL" state "$N")" running "the sandbox after a blocking timeout"
ls "$M" | grep -qx "$N" || fail "the sandbox is no longer listed after a blocking timeout"
expect_eq "$(cat "$M/$N/work/before.txt")" kept "a work file after a blocking timeout"
expect_eq "$(guest_procs 'sleep 30')" 0 "the timed-out command's processes in the guest"
run_exec "$M" "$N" "cat before.txt"
expect_eq "$(jget "$CTL_REPLY" stdout)" kept "an exec after the timeout"
# the shell verb: exit 124, the sandbox kept as well
timeout 120 "$MAFSBX_CLI" exec --timeout 2 "$N" -- sleep 31 >/dev/null 2>&1
expect_eq "$?" 124 "mafsbx exec --timeout 2 -- sleep 31: exit status"
expect_eq "$("$MFS_TOOL" state "$N")" running "the sandbox after the shell verb's timeout"
expect_eq "$(guest_procs 'sleep 31')" 0 "the shell verb's timed-out command in the guest"
log "ok: a blocking timeout kills the command, the sandbox and its files stay"

# --- 3. on_timeout ------------------------------------------------------------------------
expect_ctl_error "$M" exec "{\"sandbox\": \"$N\", \"argv\": [\"true\"], \"on_timeout\": \"later\"}" \
	EINVAL "field 'on_timeout'"
acquire "$M" t a doomed
D=$SBX
expect_ctl_error "$M" exec \
	"{\"sandbox\": \"$D\", \"command\": \"echo started; sleep 30\", \"timeout\": 2, \"on_timeout\": \"dispose\"}" \
	ETIMEDOUT "disposed"
expect_eq "$(jget "$CTL_REPLY" timed_out)" true "timed_out with on_timeout dispose"
expect_eq "$(jget "$CTL_REPLY" sandbox_disposed)" true "sandbox_disposed with on_timeout dispose"
expect_eq "$("$MFS_TOOL" state "$D")" absent "a sandbox disposed on timeout"
ls "$M" | grep -qx "$D" && fail "a sandbox disposed on timeout is still listed"
log "ok: on_timeout dispose disposes"
umount_fs "$M" "$DAEMON_PID"

# --- 4. -o max_exec_timeout ----------------------------------------------------------------
mount_fs "$M" -o "image=$IMAGE,scope=$SCOPE,max_exec_timeout=600"
expect_ctl_error "$M" exec "{\"sandbox\": \"$N\", \"argv\": [\"true\"], \"timeout\": 900}" EINVAL \
	"-o max_exec_timeout"
expect_contains "$(jget "$CTL_REPLY" error.message)" "field 'timeout'" "the refusal names the field"
ctl "$M" exec "{\"sandbox\": \"$N\", \"argv\": [\"true\"], \"timeout\": 600}"
expect_eq "$CTL_STATUS" OK "timeout 600 under -o max_exec_timeout=600 ($CTL_REPLY)"
umount_fs "$M" "$DAEMON_PID"
log "ok: -o max_exec_timeout is the ceiling"

# no ceiling: any timeout, kept as a finite deadline; a long detached one still cancels
mount_fs "$M" -o "image=$IMAGE,scope=$SCOPE,max_exec_timeout=0"
ctl "$M" exec "{\"sandbox\": \"$N\", \"argv\": [\"true\"], \"timeout\": 1e12}"
expect_eq "$CTL_STATUS" OK "timeout 1e12 under -o max_exec_timeout=0 ($CTL_REPLY)"
ctl "$M" exec "{\"sandbox\": \"$N\", \"command\": \"sleep 121\", \"timeout\": 1e12, \"detach\": true}"
expect_eq "$CTL_STATUS" OK "a detached exec with timeout 1e12 ($CTL_REPLY)"
XID=$(jget "$CTL_REPLY" exec)
sleep 1
expect_eq "$(jget "$(cat "$M/$N/execs/$XID/status")" running)" true "the detached exec without a ceiling runs"
rmdir "$M/$N/execs/$XID" || fail "cancel of the detached exec without a ceiling"
expect_eq "$(guest_procs 'sleep 121')" 0 "the cancelled command's processes (no ceiling)"
umount_fs "$M" "$DAEMON_PID"
log "ok: -o max_exec_timeout=0 takes any timeout"

# --- 5. a default over the ceiling refuses to mount -----------------------------------------
err=$(timeout 60 "$MAFSBXFS" -f -o "exec_timeout=700,max_exec_timeout=600" "$M" 2>&1 </dev/null)
st=$?
expect_eq "$st" 2 "exit status of -o exec_timeout=700,max_exec_timeout=600 ($err)"
expect_contains "$err" "mafsbxfs: -o exec_timeout=700 is over -o max_exec_timeout=600" "its message"
is_mounted "$M" && fail "mounted with exec_timeout over max_exec_timeout"
log "ok: -o exec_timeout over -o max_exec_timeout refuses to mount"

log "PASS"
