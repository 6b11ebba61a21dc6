#!/bin/bash
# jobs.sh: jobs that outlive the daemon (doc/protocol.md "Jobs that outlive
# the daemon"). 16 detached execs at once, each printing a numbered line
# every 0.2 s for 20 s, then 2 MiB of binary output, exit 7; 5 s in, the
# daemon is killed (kill -9; in the background mode, MAFSBX_TEST_MOUNT=
# background, a clean unmount instead), and 8 s in a new daemon mounts:
#   1. every job is adopted: execs/ID/ is listed again, its stdout holds
#      every line in order and the 2 MiB byte-exact (md5 against the same
#      output made inside the guest), status says exit 7, wait returns it;
#   2. a job whose monitor was killed while no daemon ran is adopted as
#      lost, with what it had spooled; rmdir kills its command and forgets it;
#   3. a job adopted while it runs is cancelled by rmdir: its processes,
#      what it daemonised (setsid) too, are gone from the guest, the
#      sandbox runs on;
#   4. an exec forgotten (rmdir) leaves no job files behind;
#   5. past the spool budget the monitor stops spooling (`truncated`), and
#      the command is not blocked: it runs to its exit code;
#   6. a dispose of the sandbox through the mount removes its jobs' files.
. "$(dirname "$0")/lib.sh"
require_env

M=$T/mnt
mount_fs "$M" -o "image=$IMAGE,scope=$SCOPE"
acquire "$M" t a x
N=$SBX
JOBS=16
JOBDIR=${MAFSBX_RUNDIR:-/run/mafsbxfs}/jobs

# lines K: the numbered lines and then job K's 2 MiB, as the job prints them
# shellcheck disable=SC2016
lines='i=1; while [ $i -le 100 ]; do echo job K line $i; i=$((i+1)); SLEEP; done'
job_cmd() { # K: the job's command
	local l=${lines//K/$1}
	printf '%s; head -c 2097152 /dev/urandom >/tmp/blob.%s; cat /tmp/blob.%s; exit 7' "${l//SLEEP/sleep 0.2}" "$1" "$1"
}
expect_cmd() { # K: the same output again, at once, its md5
	local l=${lines//K/$1}
	printf '{ %s; cat /tmp/blob.%s; } | md5sum | cut -c1-32' "${l//SLEEP/:}" "$1"
}
# monitor_of XID: the PID of the job's monitor (mafsbxfs --job-monitor .../XID)
monitor_of() {
	local p
	for p in /proc/[0-9]*; do
		if { tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null | grep -q -- "--job-monitor .*/$1 \$"; then
			echo "${p#/proc/}"
			return 0
		fi
	done
	return 1
}

XIDS=()
for k in $(seq 1 $JOBS); do
	detach_exec "\"command\": \"$(job_cmd "$k")\""
	XIDS+=("$XID")
done
detach_exec '"command": "echo spooled; sleep 301"'
LOST=$XID
detach_exec '"command": "setsid sleep 303 & sleep 302"'
RUN=$XID
sleep 5
[ "$(grep -c '^job 1 line' "$M/$N/execs/${XIDS[0]}/stdout")" -ge 5 ] || fail "job 1 printed under 5 lines in 5 s"
expect_eq "$(cat "$M/$N/execs/$LOST/stdout")" spooled "the lost job's output before"

if [ "$MOUNT_MODE" = background ]; then
	umount_fs "$M" "$DAEMON_PID"
	how="unmount"
else
	kill -9 "$DAEMON_PID"
	wait_exit "$DAEMON_PID" 10 || fail "the daemon survived kill -9"
	fusermount3 -u -z "$M" || fail "cannot detach the dead mount"
	how="kill -9"
fi
mon=$(monitor_of "$LOST") || fail "no monitor runs for $LOST after the daemon's end ($how)"
kill -9 "$mon"
for k in 1 2 3; do
	monitor_of "${XIDS[$((k - 1))]}" >/dev/null || fail "job $k's monitor did not outlive the daemon"
done
sleep 3
mount_fs "$M" -o "image=$IMAGE,scope=$SCOPE"
log "daemon ended ($how) at 5 s, mounted again at 8 s"

# --- 1. every job adopted, no byte and no exit code lost -----------------------------
for k in $(seq 1 $JOBS); do
	X=$M/$N/execs/${XIDS[$((k - 1))]}
	[ -d "$X" ] || fail "job $k (${XIDS[$((k - 1))]}) was not adopted"
done
st1=$(cat "$M/$N/execs/${XIDS[0]}/status"); log "job 1 after the restart: $st1"
for k in $(seq 1 $JOBS); do
	X=$M/$N/execs/${XIDS[$((k - 1))]}
	w=$(timeout 120 cat "$X/wait") || fail "wait of job $k"
	# (the reply's stdout holds NULs, \u0000, which jget refuses: its exit code by its text)
	expect_eq "$(printf '%s' "$w" | grep -o '"exit_code": *[0-9-]*' | tr -d ' ')" '"exit_code":7' "job $k: wait's exit_code"
	st=$(cat "$X/status")
	expect_eq "$(jget "$st" exit_code)" 7 "job $k: status exit_code"
	expect_eq "$(jget "$st" state)" exited "job $k: state"
	expect_eq "$(jget "$st" truncated)" false "job $k: truncated"
	expect_eq "$(grep -a -c "^job $k line" "$X/stdout")" 100 "job $k: its lines"
	expect_eq "$(grep -a "^job $k line" "$X/stdout" | awk '{ print $4 }' | tr '\n' ' ')" "$(seq 1 100 | tr '\n' ' ')" \
		"job $k: its lines in order"
	run_exec "$M" "$N" "$(expect_cmd "$k")"
	want=$(jget "$CTL_REPLY" stdout | tr -d '\n')
	expect_eq "$(md5sum <"$X/stdout" | cut -d' ' -f1)" "$want" "job $k: stdout (lines and 2 MiB) byte-exact"
done
log "ok: $JOBS jobs adopted after $how, every byte and the exit code kept"

# --- 2. a job whose monitor died: lost, with what it spooled -------------------------
X=$M/$N/execs/$LOST
[ -d "$X" ] || fail "the job whose monitor died is not listed"
st=$(cat "$X/status")
expect_eq "$(jget "$st" state)" lost "a dead monitor's job: state"
expect_eq "$(jget "$st" running)" false "a dead monitor's job: running"
expect_eq "$(cat "$X/stdout")" spooled "a dead monitor's job: its spooled output"
w=$(timeout 30 cat "$X/wait") || fail "wait of a lost job"
expect_eq "$(jget "$w" error.errno)" ESRCH "wait of a lost job: the error"
expect_eq "$(guest_procs 'sleep 301')" 1 "a lost job's command runs on in the guest"
rmdir "$X" || fail "rmdir of a lost job"
expect_eq "$(guest_procs 'sleep 301')" 0 "a lost job's command after its rmdir"
log "ok: a lost job says so, with its output; rmdir ends its command"

# --- 3. cancel of an adopted job ------------------------------------------------------
X=$M/$N/execs/$RUN
expect_eq "$(jget "$(cat "$X/status")" running)" true "the adopted sleep"
expect_eq "$(guest_procs 'sleep 30[23]')" 2 "the adopted command and what it daemonised before the cancel"
rmdir "$X" || fail "rmdir (cancel) of an adopted job"
expect_eq "$(guest_procs 'sleep 30[23]')" 0 "the adopted command and what it daemonised after the cancel"
[ -e "$X" ] && fail "a cancelled adopted job is still listed"
expect_eq "$("$MFS_TOOL" state "$N")" running "the sandbox after the cancel"
log "ok: cancel of an adopted job"

# --- 4. rmdir removes the job's files ---------------------------------------------------
for x in "${XIDS[@]}"; do
	rmdir "$M/$N/execs/$x" || fail "rmdir of $x"
done
left=$(find "$JOBDIR" -mindepth 2 -maxdepth 2 \( -name "${XIDS[0]}" -o -name "$LOST" -o -name "$RUN" \) | wc -l)
expect_eq "$left" 0 "job directories left after rmdir"
log "ok: rmdir removes the job's files"

# --- 5. past the spool budget the monitor stops spooling; the command runs on ---------
# a 4 MiB budget: the sandbox's share is 2 MiB, the job writes 6 MiB
umount_fs "$M" "$DAEMON_PID"
mount_fs "$M" -o "image=$IMAGE,scope=$SCOPE,spool_budget=4M"
detach_exec '"command": "i=0; while [ $i -lt 12 ]; do head -c 524288 /dev/zero; sleep 0.3; i=$((i+1)); done; exit 3"'
w=$(timeout 120 cat "$M/$N/execs/$XID/wait") || fail "wait of the job past the budget"
expect_eq "$(jget "$w" exit_code)" 3 "past the budget: the command ran to its end"
expect_eq "$(jget "$w" truncated)" true "past the budget: truncated"
[ -e "$JOBDIR"/*/"$XID/stop" ] || fail "the monitor was not told to stop spooling"
log "ok: past the budget the monitor stops spooling, the command ends as it would"

# --- 6. a dispose through the mount removes the sandbox's jobs ---------------------------
CDIR=$(dirname "$(ls -d "$JOBDIR"/*/"$XID")")
ctl "$M" dispose "{\"name\": \"$N\"}"
expect_eq "$CTL_STATUS" OK "dispose"
[ -e "$CDIR" ] && fail "the disposed sandbox's jobs are still in $CDIR"
log "PASS"
