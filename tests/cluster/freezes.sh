#!/usr/bin/env bash
# freezes.sh: a node engine's freezes (src/freeze) over the swarm, on a
# sandbox placed on a follower manager that is not the manager the mount asks.
#   - a late cluster event does not break the proof: the follower is cut off
#     from the other managers' raft traffic (port 2377) while the leader
#     records a node update; a file read's freeze then pauses the sandbox more
#     than 2 s after that update, and the cut is lifted: the follower logs the
#     update late, after the pause, with the leader's older time. dockerd
#     stops its read of its ring at the first event older than the `since`
#     asked for, so a proof read from a moment before the pause missed the
#     pause (EIO, "no pause event" / "no longer reaches back"). The read
#     answers. The test checks that the late event was logged where it must
#     be, so it cannot pass without the case it is about.
#   - a daemon killed (SIGKILL) while a node's sandbox is frozen: the sandbox
#     stays paused until `mafsbx --cluster swarm thaw` (no mount) asks each
#     node's engine for its paused containers and lifts the freezes whose
#     marker, in that node's subdirectory of the runtime directory, names a
#     process that is gone, one line per node and per sandbox lifted; killed
#     so again, until the next mount on this host, whose janitor does the
#     same (no acquire, no file call needed).
. "$(dirname "$0")/testlib.sh"
require_env
: "${MAFSBXFS_TEST:?MAFSBXFS_TEST must name the mafsbxfs-test binary (its freeze hold knob)}"
: "${MAFSBX_CLI:?MAFSBX_CLI must name the mafsbx binary}"
M=$T/mnt

# The leader, and a node that is neither it nor node 1 (the mount's manager).
leader=$(timeout 60 docker node ls --format '{{.Hostname}} {{.ManagerStatus}}' | awk '$2 == "Leader" { print $1 }')
L=$(node_index "$leader") || fail "no leader in the swarm's node list"
for N in 2 1; do [ "$N" != "$L" ] && break; done
NODE=${CLUSTER_NODES[$N]}
LEADER_ID=$(ndocker "$L" info -f '{{.Swarm.NodeID}}') || fail "no node ID of the leader"
log "leader ${CLUSTER_NODES[$L]}, the sandbox on $NODE"

# raft_cut add|del: what the other managers send to node N's port 2377 (the
# leader's raft appends): N stops receiving the cluster's changes. What N
# sends (its agent's heartbeats, its raft answers, its /info's calls to the
# leader) still goes, so it stays a ready node, and its raft election timeout
# (10 s) is longer than the cut.
raft_cut() {
	local op=-I r=0
	[ "$1" = del ] && op=-D
	hdocker exec "$NODE" sh -c "iptables $op INPUT ! -i lo -p tcp --dport 2377 -j DROP &&
		iptables $op OUTPUT ! -o lo -p tcp --sport 2377 -j DROP" || r=$?
	[ "$1" = del ] || [ "$r" = 0 ] || fail "cannot cut $NODE off the raft traffic"
	CUT=$([ "$1" = add ] && echo 1 || echo 0)
	return "$r"
}
CUT=0
freezes_cleanup() {
	local rc=$?
	if [ "$CUT" = 1 ]; then raft_cut del || true; fi
	timeout 60 docker node update --label-rm mafsbx.late "$LEADER_ID" >/dev/null 2>&1 || true
	(exit "$rc")
	cluster_test_cleanup
}
trap freezes_cleanup EXIT

# ---- a late cluster event ---------------------------------------------------------
PLACE=node.hostname==$NODE
mount_cluster "$M" -o "placement=$PLACE"
acquire "$M" t late k
S=$SBX
echo before >"$M/$S/work/f.txt" || fail "write f.txt in $S"
echo late >"$M/$S/work/g.txt" || fail "write g.txt in $S"
expect_eq "$(sbx_node "$S")" "$N" "$S placed on $NODE"
CID=$(sbx_cid "$S") || fail "no task container of $S"
umount_fs "$M" "$DAEMON_PID"
# each freeze of this mount is held 4 s: the late event lands inside one
MAFSBXFS=$MAFSBXFS_TEST MAFSBX_TEST_FREEZE_HOLD_MS=4000 mount_cluster "$M" -o "placement=$PLACE"
# the sandbox's pauses and the node's cluster events, as node N logs them
DOCKER_HOST=${CLUSTER_URLS[$N]} timeout 120 docker events --filter "container=$CID" --filter event=pause \
	--format '{{.TimeNano}}' >"$T/pauses" &
watchers=($!)
DOCKER_HOST=${CLUSTER_URLS[$N]} timeout 120 docker events --filter type=node --format '{{.TimeNano}}' >"$T/late" &
watchers+=($!)
sleep 0.3
raft_cut add
timeout 60 docker node update --label-add "mafsbx.late=$RANDOM" "$LEADER_ID" >/dev/null ||
	fail "node update at the manager while $NODE is cut off"
# The read: a lookup under a first freeze (held 4 s), then the file's bytes
# under a second one, which the proof checks, paused more than the proof's
# window before a pause (PRIOR_WINDOW_NS, 2 s) after the update; the cut ends
# when that second one began.
timeout 120 cat "$M/$S/work/g.txt" >"$T/read" 2>"$T/read.err" &
reader=$!
for _ in $(seq 1 200); do
	[ "$(wc -l <"$T/pauses")" -ge 2 ] || ! kill -0 "$reader" 2>/dev/null && break
	sleep 0.05
done
raft_cut del
# the premise: the node logs the update while the read's freeze is held
for _ in $(seq 1 100); do
	[ -s "$T/late" ] && break
	sleep 0.05
done
if ! kill -0 "$reader" 2>/dev/null || [ ! -s "$T/late" ]; then
	fail "$NODE did not log the late node update while the read's freeze was held (the test's premise)"
fi
kill "${watchers[@]}" 2>/dev/null
wait "$reader" || fail "the read under a freeze with a late cluster event: $(cat "$T/read.err")"
expect_eq "$(cat "$T/read")" late "the read under a freeze with a late cluster event"
# The premise: in node N's ring, a node update logged inside a freeze (after
# a pause of the sandbox, before its unpause), with a time more than 2 s
# before that pause.
ndocker "$N" events --since 0 --until "$(date +%s)" --format '{{.TimeNano}} {{.Type}} {{.Action}} {{.Actor.ID}}' \
	>"$T/ring" || fail "node $NODE's events"
late=$(awk -v cid="$CID" '
	$2 == "container" && index($4, cid) == 1 { p = $3 == "pause" ? $1 : 0 }
	p && $2 == "node" && $3 == "update" && $1 < p - 2000000000 { n++ }
	END { print n + 0 }' "$T/ring")
if [ "$late" = 0 ]; then
	grep -E " node | container (pause|unpause) " "$T/ring" | tail -n 20 >&2
	fail "no node update was logged on $NODE after a pause of $CID with an older time (the test's premise)"
fi
log "the late event: $late node update(s) logged on $NODE after a pause, older than it by more than 2 s"

# ---- a daemon killed inside a node's freeze -----------------------------------------
# Its freeze marker stays in the node's directory of the runtime directory;
# `mafsbx --cluster swarm thaw` lifts the freeze; killed so again, the next
# mount on this host (no acquire, no file call) lifts it.
paused_state() { ndocker "$N" inspect -f '{{.State.Paused}}' "$CID"; }
# kill_in_freeze: a read freezes the sandbox (held 4 s by the test daemon), the daemon is killed inside it
kill_in_freeze() {
	(timeout 60 cat "$M/$S/work/f.txt" >/dev/null 2>&1) &
	reader=$!
	for _ in $(seq 1 100); do
		[ "$(paused_state)" = true ] && break
		sleep 0.1
	done
	expect_eq "$(paused_state)" true "$S frozen by a read (its freeze held 4 s)"
	kill -KILL "$DAEMON_PID"
	wait "$DAEMON_PID" 2>/dev/null
	fusermount3 -u -z "$M" 2>/dev/null
	wait "$reader" 2>/dev/null
}
kill_in_freeze
sleep 4.5 # past the killed freeze's hold: nothing of it is left to unpause it
expect_eq "$(paused_state)" true "$S after its mount was killed inside a freeze"
s=$(date +%s%N)
"$MAFSBX_CLI" --cluster swarm -H "$CLUSTER_MANAGER" thaw >"$T/thaw.out" 2>"$T/thaw.err" ||
	fail "mafsbx --cluster swarm thaw: $(cat "$T/thaw.out" "$T/thaw.err")"
log "mafsbx --cluster swarm thaw took $((($(date +%s%N) - s) / 1000000)) ms"
expect_eq "$(paused_state)" false "$S after mafsbx --cluster swarm thaw"
NID=$(ndocker "$N" info -f '{{.Swarm.NodeID}}')
expect_contains "$(cat "$T/thaw.out")" "node $NODE (${NID:0:12}): lifted ${CID:0:12} " "thaw's line for the sandbox"
expect_contains "$(cat "$T/thaw.out")" "node $NODE (${NID:0:12}): lifted 1" "thaw's line for its node"
expect_contains "$(cat "$T/thaw.out")" "on 3 of 3 nodes" "thaw's summary"
MAFSBXFS=$MAFSBXFS_TEST MAFSBX_TEST_FREEZE_HOLD_MS=4000 mount_cluster "$M" -o "placement=$PLACE"
kill_in_freeze
sleep 0.5
expect_eq "$(paused_state)" true "$S after its mount was killed inside a freeze again"
s=$(date +%s%N)
mount_cluster "$M" -o "placement=$PLACE"
for _ in $(seq 1 150); do
	[ "$(paused_state)" = false ] && break
	sleep 0.2
done
expect_eq "$(paused_state)" false "$S once the next mount started (its janitor)"
log "the next mount lifted the freeze in $((($(date +%s%N) - s) / 1000000)) ms (mount included)"
daemon_log_has "$T/daemon.mnt.log" "lifted a freeze left behind" || fail "the janitor did not say it lifted the freeze"
expect_eq "$(cat "$M/$S/work/f.txt")" before "a read after the freeze was lifted"
umount_fs "$M" "$DAEMON_PID"
log "ok"
