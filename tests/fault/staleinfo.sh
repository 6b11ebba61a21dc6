#!/bin/bash
# staleinfo.sh: freeze proofs when the engine's GET /info answers are stale,
# as dockerd 26 makes them: it shares one /info answer among the calls that
# arrive while it is computed (a singleflight group), so a call may get a
# SystemTime taken before it was made, by as long as /info takes (hundreds of
# ms on a busy swarm manager). The fault relay plays that here on the host's
# dockerd: every GET .../info is answered with the engine's answer fetched at
# least 4 s before (relay.c `rule replay`), with a fresh Date header.
#
# Before the fix (the freezer took the engine's clock from SystemTime as if
# read during its call) the proof of every engine-plane freeze read the
# events up to a time 4 s before its own pause: `ls -l`, reads and writes in
# the sandbox failed with EIO ("no pause event"). And a verify read up to a
# time 4 s early: an unpause by someone else in the last 4 s of a transfer
# was not seen, the proof failing open. Checked: the file calls work, and an
# external `docker unpause` + `docker pause` during a read's transfer (its
# answer held 3 s by the relay) is caught: EIO, the daemon logs the broken
# freeze.
. "$(dirname "$0")/lib.sh"
require_relay_env

start_relay
rule replay GET '*/info' ms=4000 count=-1
INFO=$RULE
M=$T/mnt
mount_relayed "$M"
LOGF="$T/daemon.$(basename "$M").log"
echo hello >"$T/hello.txt"

# The relay fetches the answers it replays from the first /info it relayed
# (the mount asks /v1.41/info of an engine of API 1.41 and later: dockerd 20.10
# here): one is asked here, then the relay holds 4 s old ones when the first
# freeze (in the acquire: the work directory is made under a freeze) asks.
curl -sf --unix-socket "$RELAY_SOCK" -o /dev/null http://engine/v1.41/info || fail "GET /v1.41/info through the relay"
sleep 4.5
acquire "$M" t a stale
N=$SBX

# --- file calls under freezes, with stale /info answers ------------------------------
for round in 1 2 3; do
	cp "$T/hello.txt" "$M/$N/work/f$round.txt" 2>"$T/err" || fail "round $round: write: $(cat "$T/err")"
	got=$(cat "$M/$N/work/f$round.txt" 2>"$T/err") || fail "round $round: read: $(cat "$T/err")"
	expect_eq "$got" hello "round $round: the file read back"
	ls -l "$M/$N/work" >"$T/ls" 2>"$T/err" || fail "round $round: ls -l: $(cat "$T/err")"
	grep -q "f$round.txt" "$T/ls" || fail "round $round: ls -l does not list f$round.txt"
done
n=$(rctl fired "$INFO")
[ "$n" -ge 1 ] || fail "no GET /info was answered stale: the test proved nothing ($(rctl seen GET '*/info') GET /info seen)"
log "file calls: OK, with $n stale /info answer(s)"
if grep -q "cannot find the engine's record of the pause" "$LOGF"; then
	fail "a freeze proof missed its own pause: $(grep -m1 "cannot find the engine's record" "$LOGF")"
fi

# --- an external unpause in the last moments of a transfer -------------------------
# Right after the file calls above the engine plane's burst may still hold a
# freeze (src/freeze/burst.h): let it go, so that the read freezes afresh.
sleep 3
rule stall GET '*/archive[?]path=*' resp=0 ms=3000
STALL=$RULE
(cat "$M/$N/work/f1.txt" >"$T/read.out" 2>"$T/read.err"; echo $? >"$T/read.rc") &
RD=$!
"$FAULT_RELAY" wait "$RELAY_CTL" "$STALL" 30 || fail "the read never reached the archive GET"
docker unpause "$N" >/dev/null || fail "docker unpause"
docker pause "$N" >/dev/null || fail "docker pause (the re-pause)"
wait "$RD"
rctl clear >/dev/null
rc=$(cat "$T/read.rc")
[ "$rc" != 0 ] || fail "the read under a freeze broken within 3 s of its end SUCCEEDED: the proof failed open"
grep -q "Input/output error" "$T/read.err" || fail "the broken read failed with: $(cat "$T/read.err")"
grep -q "was broken by someone else (unpaused)" "$LOGF" ||
	fail "the read failed, but not as a broken freeze: $(grep "freeze:" "$LOGF" | tail -n 3)"
log "the external unpause: caught (EIO, the daemon logged the broken freeze)"
wait_unpaused 15 || fail "the sandbox is still paused 15 s after the read"

# and the next call works
got=$(cat "$M/$N/work/f2.txt" 2>"$T/err") || fail "the read after: $(cat "$T/err")"
expect_eq "$got" hello "the read after the broken freeze"
log "relay: $(rctl stats)"
umount_fs "$M" "$DAEMON_PID"
log "PASS"
