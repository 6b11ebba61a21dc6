#!/bin/bash
# thaw.sh: no guest stays frozen because a holder died or the engine went
# away for a while, and freeze lock files do not pile up.
#   1. an unpause that fails (the engine cut mid-freeze) is retried with
#      backoff by the mount until the engine answers again, with no file call
#      needed to trigger it;
#   2. `mafsbx thaw` leaves a live freeze alone, lifts it once its holder
#      (a SIGKILLed mount) is gone, and collects the lock files of removed
#      containers;
#   3. a sandbox's five lock files go when the mount disposes of it, and when
#      someone else removes it (the janitor's collection pass), its detached
#      execs' job files too.
. "$(dirname "$0")/lib.sh"
# Freezes belong to the engine plane (the local plane never freezes).
PLANE=engine
require_env
: "${MAFSBX_CLI:?MAFSBX_CLI must name the mafsbx binary}"

relay_init

# wait_state NAME STATE SECONDS
wait_state() {
	local i s
	for i in $(seq 1 $(($3 * 10))); do
		s=$("$MFS_TOOL" state "$1")
		[ "$s" = "$2" ] && return 0
		sleep 0.1
	done
	fail "$1 is '$s' after $3 s, want '$2'"
}
locks_of() { ls "$1" 2>/dev/null | grep -c "^$2\\." ; }

# --- 1. the mount retries a failed unpause until the engine answers ----------
R1=$T/run1
mkdir -p "$R1"
start_relay
M=$T/mnt
MAFSBX_RUNDIR=$R1 MAFSBX_TEST_FREEZE_HOLD_MS=2500 MAFSBX_TEST_JANITOR_GC_MS=1000 \
	mount_fs "$M" -o "host=unix://$SOCK,scope=$SCOPE"
PID=$DAEMON_PID
acquire "$M" t a one ', "outputs": ["out.txt"]'
N=$SBX
ID=$(jget "$CTL_REPLY" id)
run_exec "$M" "$N" "echo hi > out.txt"
expect_eq "$CTL_STATUS" OK "exec"
(timeout 60 cat "$M/$N/work/out.txt" >/dev/null 2>&1) &
READER=$!
wait_state "$N" paused 10
stop_relay      # the freeze's unpause will find no engine
wait "$READER"
sleep 3         # longer than the first retries: each fails, the engine is away
expect_eq "$("$MFS_TOOL" state "$N")" paused "still frozen while the engine is away"
start_relay
wait_state "$N" running 45
daemon_log_has "$T/daemon.mnt.log" "lifted a freeze left behind" || fail "the janitor did not say it lifted the freeze"
log "ok: a failed unpause is retried until the engine answers"

# --- 3. lock files go with the container ---------------------------------------
[ "$(locks_of "$R1" "$ID")" -ge 3 ] || fail "expected lock files of $ID in $R1: $(ls "$R1")"
ctl "$M" dispose "{\"name\": \"$N\"}"
expect_eq "$(jget "$CTL_REPLY" disposed)" 1 "dispose"
expect_eq "$(locks_of "$R1" "$ID")" 0 "lock files of a disposed sandbox"
# removed by someone else: the janitor's pass collects the locks and the file list
acquire "$M" t a two ', "outputs": ["out.txt"]'
N2=$SBX
ID2=$(jget "$CTL_REPLY" id)
echo data >"$M/$N2/work/written.txt" || fail "write through the mount"
[ "$(locks_of "$R1" "$ID2")" -ge 3 ] || fail "expected lock files of $ID2 in $R1"
# and a finished detached exec's job files (RUNDIR/jobs/ID/JOB)
N=$N2
detach_exec '"command": "echo job"'
timeout 60 cat "$M/$N2/execs/$XID/wait" >/dev/null || fail "wait of the detached exec in $N2"
[ -d "$R1/jobs/$ID2/$XID" ] || fail "expected the job files of $XID under $R1/jobs/$ID2"
"$MFS_TOOL" rm-scope "$SCOPE"
for i in $(seq 1 100); do
	[ "$(locks_of "$R1" "$ID2")" = 0 ] && break
	sleep 0.1
done
expect_eq "$(locks_of "$R1" "$ID2")" 0 "lock files of a container removed by someone else"
for i in $(seq 1 50); do
	daemon_log_has "$T/daemon.mnt.log" "file lists of [1-9]" && break
	sleep 0.1
done
daemon_log_has "$T/daemon.mnt.log" "file lists of [1-9]" || fail "the janitor did not collect the file list of $N2"
for i in $(seq 1 50); do
	[ -e "$R1/jobs/$ID2" ] || break
	sleep 0.1
done
[ -e "$R1/jobs/$ID2" ] && fail "the janitor left the job files of $N2, removed by someone else: $(ls -R "$R1/jobs/$ID2")"
daemon_log_has "$T/daemon.mnt.log" "job files of [1-9]" || fail "the janitor did not say it collected the job files of $N2"
umount_fs "$M" "$PID"
log "ok: lock files, file lists and job files are collected"

# --- 2. mafsbx thaw --------------------------------------------------------------
R2=$T/run2
mkdir -p "$R2"
M2=$T/mnt2
MAFSBX_RUNDIR=$R2 mount_fs "$M2" -o scope="$SCOPE"
acquire "$M2" t a three ', "outputs": ["out.txt"]'
N3=$SBX
ID3=$(jget "$CTL_REPLY" id)
run_exec "$M2" "$N3" "echo hi > out.txt"
umount_fs "$M2" "$DAEMON_PID"
# the same runtime directory, now with a mount whose file calls hold their freeze for a minute
MAFSBX_RUNDIR=$R2 MAFSBX_TEST_FREEZE_HOLD_MS=60000 mount_fs "$M2" -o scope="$SCOPE"
PID2=$DAEMON_PID
(timeout 90 cat "$M2/$N3/work/out.txt" >/dev/null 2>&1) &
READER=$!
BGPIDS+=("$READER")
wait_state "$N3" paused 10
out=$("$MAFSBX_CLI" thaw --rundir "$R2" --json) || fail "thaw with a live freeze: exit $? ($out)"
expect_eq "$(jget "$out" thawed)" 0 "thaw leaves a live freeze alone"
expect_eq "$("$MFS_TOOL" state "$N3")" paused "a live freeze is left alone"
kill -KILL "$PID2"
wait "$PID2" 2>/dev/null
fusermount3 -u -z "$M2" 2>/dev/null
out=$("$MAFSBX_CLI" thaw --rundir "$R2" --json) || fail "thaw: exit $? ($out)"
expect_eq "$(jget "$out" thawed)" 1 "thaw lifts the freeze of a dead holder"
expect_eq "$("$MFS_TOOL" state "$N3")" running "thawed"
out=$("$MAFSBX_CLI" thaw --rundir "$R2" --json) || fail "thaw again: exit $? ($out)"
expect_eq "$(jget "$out" thawed)" 0 "a second thaw has nothing to do"
"$MFS_TOOL" rm-scope "$SCOPE"
out=$("$MAFSBX_CLI" thaw --rundir "$R2" --json) || fail "thaw after removal: exit $? ($out)"
[ "$(jget "$out" lock_files_collected)" -ge 1 ] || fail "thaw collected no lock files: $out"
expect_eq "$(locks_of "$R2" "$ID3")" 0 "lock files of $N3 after its removal"
"$MAFSBX_CLI" thaw --bogus >/dev/null 2>&1
expect_eq "$?" 125 "thaw usage error"
log "ok: mafsbx thaw"

# --- 4. an exec whose output stream is cut stays registered until it ends -------
# Cutting the engine connection mid-exec ends the stream while
# the command still runs; the exec call must keep the command registered with
# the freezer (no file call may pause the container while it can exit) until
# the engine says it ended, and then report its exit code, not a bare EIO.
R4=$T/run4
mkdir -p "$R4"
M4=$T/mnt4
MAFSBX_RUNDIR=$R4 mount_fs "$M4" -o "host=unix://$SOCK,scope=$SCOPE"
PID4=$DAEMON_PID
acquire "$M4" t a four ', "outputs": ["out.txt"]'
N4=$SBX
run_exec "$M4" "$N4" "echo before > out.txt"
expect_eq "$CTL_STATUS" OK "exec before the cut"
t0=$(date +%s%N)
"$MFS_TOOL" ctl "$M4/.ctl/exec" "{\"sandbox\": \"$N4\", \"command\": \"sleep 6; echo done > /tmp/ended\", \"timeout\": 60}" >"$T/cut.out" &
EXEC=$!
sleep 1.5
stop_relay      # the exec's stream is cut with the command still sleeping
start_relay
# a file call now must not freeze the container before the command has ended
(timeout 120 cat "$M4/$N4/work/out.txt" >"$T/cut.read" 2>&1; date +%s%N >"$T/cut.read.t") &
READ=$!
wait "$EXEC"
t1=$(date +%s%N)
wait "$READ"
status=$(head -n 1 "$T/cut.out")
reply=$(tail -n +2 "$T/cut.out")
log "cut exec: $status after $(((t1 - t0) / 1000000)) ms: $reply"
[ $(((t1 - t0) / 1000000)) -ge 5500 ] || fail "the exec call returned before its command ended"
expect_eq "$status" EIO "a cut stream is an error"
expect_eq "$(jget "$reply" exit_code)" 0 "the exit code of the command that ran to its end"
expect_contains "$(jget "$reply" error.message)" "ran to its end" "the cut exec's message"
expect_eq "$(cat "$T/cut.read")" before "the read after the cut"
[ "$(cat "$T/cut.read.t")" -ge "$t1" ] || [ "$(cat "$T/cut.read.t")" -ge $((t0 + 6000000000)) ] ||
	fail "the read finished before the command ended (it froze a container with an exec running)"
umount_fs "$M4" "$PID4"
log "ok: a cut exec stream keeps the exec registered until the command ends"
