#!/bin/bash
# soak.sh: the soak program (soak.c) through a mount whose engine
# connections the fault relay cuts at random: 16 readers, 4 writers and 4
# execs over 4 sandboxes, and 64 agents each acquiring, writing, running,
# reading and disposing sandboxes of their own (FAULT_SOAK_AGENTS), for
# FAULT_SOAK_SECONDS (default 60; CI), a fault every ~2 s. Checks: zero wrong bytes, no hung call, the daemon's RSS
# bounded, every sandbox's execs keep succeeding (soak.c: a guest left
# frozen shows as a long gap); no container of this run paused at the end
# (asked on the real socket); the mount still answers afterwards.
. "$(dirname "$0")/lib.sh"
require_relay_env
: "${FAULT_SOAK:?FAULT_SOAK must name the soak binary}"

SECS=${FAULT_SOAK_SECONDS:-60}
RELAY_LOG=$T/relay.log
start_relay
M=$T/mnt
mount_relayed "$M"
PID=$DAEMON_PID

NAMES=()
for k in 0 1 2 3; do
	acquire "$M" t a "kind$k" ', "outputs": ["static.bin", "w.bin"]'
	NAMES+=("$SBX")
done

st=0
"$FAULT_SOAK" --mount "$M" --relay-ctl "$RELAY_CTL" --pid "$PID" --seconds "$SECS" \
	--agents "${FAULT_SOAK_AGENTS:-64}" --scope "$SCOPE" --image "$IMAGE" ${FAULT_SOAK_ARGS:-} "${NAMES[@]}" || st=$?
log "relay: $(rctl stats) ($(grep -c 'cut connection' "$RELAY_LOG") connections cut)"

wait_unpaused 30 || fail "a container of this run is still paused 30 s after the soak"
for n in "${NAMES[@]}"; do
	got=$(timeout 60 "$MFS_TOOL" try read "$M/$n/work/static.bin")
	case "$got" in
	OK*) ;;
	*) fail "after the soak, a read in $n gave $got" ;;
	esac
done
kill -0 "$PID" 2>/dev/null || fail "the daemon died"
[ "$st" = 0 ] || fail "the soak program failed (exit $st)"
umount_fs "$M" "$PID"
log "PASS"
