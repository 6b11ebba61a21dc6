#!/bin/bash
# startup.sh: the daemon's life cycle (mafsbxfs(1) OPTIONS).
#  - --help / --version exit 0; a bad option value is a usage error (exit 2)
#    naming the option; nothing is mounted.
#  - an unreachable engine, a context that does not exist and a malformed
#    ssh:// endpoint exit non-zero with "mafsbxfs: message" BEFORE mounting.
#  - with stderr the journal (JOURNAL_STREAM names its device:inode, as
#    systemd sets it) that message starts with sd-daemon's "<3>" (err), so
#    journalctl -p err shows it; the variable naming another stream: plain.
#  - the mount shows as fuse.mafsbxfs in /proc/self/mountinfo.
#  - SIGTERM and SIGINT unmount cleanly (exit 0); so does fusermount3 -u;
#    SIGTERM in the middle of reads leaves nothing frozen; a freeze left by
#    a daemon killed with SIGKILL is lifted by the next mount;
#    the daemonised mode (no -f) works and is unmounted with fusermount3 -u.
. "$(dirname "$0")/lib.sh"
# Freezes and their recovery belong to the engine plane (the local plane never freezes).
PLANE=engine
require_env

M=$T/mnt
mkdir -p "$M"

out=$("$MAFSBXFS" --version) || fail "--version failed"
expect_contains "$out" "mafsbxfs" "--version"
out=$("$MAFSBXFS" --help 2>&1) || fail "--help failed"
expect_contains "$out" "max_read" "--help lists our options"
expect_contains "$out" "max_threads" "--help lists max_threads"

refused() {  # WANT_STATUS NEEDLE ARGS...
	local want=$1 needle=$2
	shift 2
	local err st
	err=$(timeout 60 "$MAFSBXFS" -f "$@" "$M" 2>&1 </dev/null)
	st=$?
	if [ "$want" = nonzero ]; then
		[ "$st" != 0 ] || fail "mafsbxfs $* succeeded"
	else
		[ "$st" = "$want" ] || fail "mafsbxfs $*: exit $st, want $want ($err)"
	fi
	expect_contains "$err" "mafsbxfs: " "mafsbxfs $*: message"
	expect_contains "$err" "$needle" "mafsbxfs $*: message"
	is_mounted "$M" && fail "mafsbxfs $* mounted anyway"
	return 0
}
refused 2 "max_read" -o max_read=lots
refused 2 "exec_timeout" -o exec_timeout=0
refused 2 "memory" -o memory=1
refused 2 "not both" -o host=unix:///x.sock,context=y
err=$("$MAFSBXFS" -o scope=x 2>&1)
expect_eq "$?" 2 "exit status without a mount point"
expect_contains "$err" "mafsbxfs: no mount point" "message without a mount point"
refused 1 "cannot reach" -o "host=unix://$T/nobody-listens.sock"
refused nonzero "no-such-context-$SCOPE" -o "context=no-such-context-$SCOPE"
# stderr as the journal: a file whose dev:ino JOURNAL_STREAM names
jlog=$T/journal-stream
: >"$jlog"
jstream=$(stat -c '%d:%i' "$jlog")
JOURNAL_STREAM=$jstream timeout 60 "$MAFSBXFS" -f -o "host=unix://$T/nobody-listens.sock" "$M" 2>>"$jlog" </dev/null
expect_eq "$(head -c 40 "$jlog")" "<3>mafsbxfs: cannot reach the Docker eng" "an error line on the journal"
: >"$jlog"
JOURNAL_STREAM=${jstream%:*}:1 timeout 60 "$MAFSBXFS" -f -o "host=unix://$T/nobody-listens.sock" "$M" 2>>"$jlog" </dev/null
expect_eq "$(head -c 37 "$jlog")" "mafsbxfs: cannot reach the Docker eng" "the line with another stream's JOURNAL_STREAM"
refused nonzero "must not start with '-'" -o host=ssh://user@-example.com
refused nonzero "not-an-option" -o not-an-option

# --- a clean unmount on SIGTERM, SIGINT and fusermount3 -u -------------------
for sig in TERM INT; do
	mount_fs "$M"
	grep -q " $M .* - fuse.mafsbxfs mafsbxfs " /proc/self/mountinfo || fail "mountinfo does not show fuse.mafsbxfs mafsbxfs"
	ls "$M/.ctl" >/dev/null || fail "the fresh mount does not answer"
	kill -"$sig" "$DAEMON_PID"
	wait_exit "$DAEMON_PID" 30 || fail "SIG$sig did not stop the daemon"
	expect_eq "$EXIT_STATUS" 0 "exit status after SIG$sig"
	is_mounted "$M" && fail "still mounted after SIG$sig"
done
mount_fs "$M"
umount_fs "$M" "$DAEMON_PID"

# SIGTERM in the middle of reads leaves no container frozen.
mount_fs "$M"
acquire "$M" t a reads ', "outputs": ["r.bin"]'
N=$SBX
run_exec "$M" "$N" "head -c 1048576 /dev/urandom > r.bin"
expect_eq "$CTL_STATUS" OK "exec setup"
for i in 1 2 3 4; do
	(while cat "$M/$N/work/r.bin" >/dev/null 2>&1; do :; done) &
	BGPIDS+=($!)
done
sleep 2
kill -TERM "$DAEMON_PID"
wait_exit "$DAEMON_PID" 60 || fail "SIGTERM during reads did not stop the daemon"
expect_eq "$EXIT_STATUS" 0 "exit status after SIGTERM during reads"
is_mounted "$M" && fail "still mounted after SIGTERM during reads"
no_paused
expect_eq "$("$MFS_TOOL" state "$N")" running "the sandbox after SIGTERM during reads"

# A daemon killed inside a freeze leaves the sandbox paused; the next mount
# lifts that freeze by itself (in the background, after mounting).
export MAFSBX_TEST_FREEZE_HOLD_MS=6000
mount_fs "$M"
unset MAFSBX_TEST_FREEZE_HOLD_MS
KILLED=$DAEMON_PID
cat "$M/$N/work/r.bin" >/dev/null 2>&1 &
BGPIDS+=($!)
for _ in $(seq 1 100); do
	[ "$("$MFS_TOOL" state "$N")" = paused ] && break
	sleep 0.05
done
expect_eq "$("$MFS_TOOL" state "$N")" paused "the sandbox inside a held freeze"
kill -KILL "$KILLED"
wait_exit "$KILLED" 10 || fail "kill -9 did not stop the daemon"
fusermount3 -u -z "$M"
expect_eq "$("$MFS_TOOL" state "$N")" paused "the sandbox after its daemon died"
mount_fs "$M"
for _ in $(seq 1 200); do
	[ "$("$MFS_TOOL" state "$N")" = running ] && break
	sleep 0.1
done
expect_eq "$("$MFS_TOOL" state "$N")" running "the freeze a dead daemon left, after the next mount"
expect_eq "$(cat "$M/$N/work/r.bin" | wc -c)" 1048576 "a read after the recovery"
umount_fs "$M" "$DAEMON_PID"

# --- the daemonised mode ---------------------------------------------------------
"$MAFSBXFS" "$M" </dev/null >"$T/bg.out" 2>&1 || fail "mafsbxfs (daemonised) failed: $(cat "$T/bg.out")"
is_mounted "$M" || fail "the daemonised mafsbxfs did not mount"
DAEMONS+=("none:$M:$T/bg.out")  # no pid: cleanup only unmounts it
ls "$M/.ctl" >/dev/null || fail "the daemonised mount does not answer"
[ -n "$(cat "$M/.ctl/engine")" ] || fail ".ctl/engine is empty"
fusermount3 -u "$M" || fail "fusermount3 -u of the daemonised mount"
is_mounted "$M" && fail "still mounted"
log "PASS"
