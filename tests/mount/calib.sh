#!/bin/bash
# calib.sh: an engine's first freeze does not wait on a Date bound. The
# freeze proofs read the engine's events up to a time certainly past its
# present (src/freeze/clock.h); with only an answer's Date to bound it,
# dockerd holds that read up to a second. The clock is calibrated in the
# background from the Date's second tick (src/freeze/calib.h) when the
# mount starts, so the first acquire on the engine plane (a freeze of the
# new sandbox) reads up to a tight bound. Checked in the daemon's debug
# log, which names the bound each events read used, not by a duration.
. "$(dirname "$0")/lib.sh"
require_env
[ "$PLANE" = engine ] || fail "calib.sh runs on the engine plane (MAFSBX_TEST_PLANE=engine)"

M=$T/mnt
mount_fs "$M" -o loglevel=debug
LOGF=$T/daemon.mnt.log
# the calibration runs off the callers' path: wait for it (a few seconds), not a fixed time
for _ in $(seq 1 200); do
	grep -q "the engine's clock calibrated to within" "$LOGF" && break
	sleep 0.1
done
grep -q "the engine's clock calibrated to within" "$LOGF" || fail "no clock calibration in 20 s"
log "$(grep -m1 "the engine's clock calibrated to within" "$LOGF")"
grep -q "events read up to" "$LOGF" && fail "an events read before the first acquire"

acquire "$M" t1 a1 python
first=$(grep -m1 "events read up to" "$LOGF") || fail "the acquire read no events (no freeze proof?)"
log "$first"
expect_contains "$first" "a tight bound" "the first freeze's events read"

umount_fs "$M" "$DAEMON_PID"
log OK
