#!/usr/bin/env bash
# faults.sh: the swarm loses a manager, then a node, under one mount over
# node 1's manager. Runs last: node 3 stays dead.
#   - a manager stopped (the leader when it is not node 1, so the swarm elects
#     another; its container paused, as a machine that hangs): `ls MOUNT`,
#     by-scope/ and a new acquire work while it is stopped; once it is back,
#     each of its sandboxes is what the swarm says of its task: `running`
#     (its files read) when the task runs, else `lost` naming the task's state
#     (ENOTCONN on its files);
#   - node 3 killed (its container and every process in it: dockerd and the
#     sandboxes): once the manager marks it down, its sandboxes' status says
#     `lost`, their files are ENOTCONN and an exec in one fails with a message,
#     while the sandboxes of the live nodes read, write and exec; the listing
#     still shows all of them;
#   - an acquire of a lost key makes a new sandbox of the same name on a live
#     node (the old service gone), which serves files;
#   - dispose of the lost ones and `mafsbx reap` leave no service of the run,
#     and no container or network on the live nodes.
. "$(dirname "$0")/testlib.sh"
require_env
: "${MAFSBX_CLI:?MAFSBX_CLI must name the mafsbx binary}"
nets_mark
# A node left paused by a failure is resumed before the cleanup asks the manager.
STOPPED=
faults_cleanup() {
	local rc=$?
	[ -n "$STOPPED" ] && hdocker unpause "$STOPPED" >/dev/null 2>&1
	(exit "$rc")
	cluster_test_cleanup
}
trap faults_cleanup EXIT
M=$T/mnt
mount_cluster "$M"

# ---- sandboxes on every node: at least one on node 3 and one elsewhere -------------
declare -A KEYOF=()
NAMES=()
for r in $(seq 1 12); do
	acquire "$M" "f$r" a k
	NAMES+=("$SBX")
	KEYOF[$SBX]=f$r
	i=$(sbx_node "$SBX") || fail "no node of $SBX"
	echo "$i" >"$T/node.$SBX"
	echo "content of $SBX" >"$M/$SBX/work/mine.txt" || fail "write in $SBX"
	[ "$r" -ge 6 ] && grep -qx 2 "$T"/node.* && grep -qvx 2 "$T"/node.* && break
done
grep -qx 2 "$T"/node.* || fail "twelve acquires and none on node 3"
on3=() live=() paused=()
for n in "${NAMES[@]}"; do
	if [ "$(cat "$T/node.$n")" = 2 ]; then on3+=("$n"); else live+=("$n"); fi
done
log "${#NAMES[@]} sandboxes: ${#on3[@]} on node 3, ${#live[@]} on nodes 1 and 2"

# ---- a manager stops --------------------------------------------------------------------
leader=$(docker node ls --format '{{.Hostname}} {{.ManagerStatus}}' | awk '$2 == "Leader" { print $1 }')
li=$(node_index "$leader") || fail "no leader among the nodes ($leader)"
[ "$li" = 0 ] && li=1 # the mount's own manager stays up: then another manager stops
STOPPED=${CLUSTER_NODES[$li]}
log "stopping manager $STOPPED (the leader was $leader)"
hdocker pause "$STOPPED" >/dev/null || fail "cannot pause $STOPPED"
s=$(date +%s%N)
expect_eq "$(timeout 120 ls "$M" | grep -c '^maf-sandbox-docker-')" "${#NAMES[@]}" "ls MOUNT with a manager stopped"
log "ls MOUNT with $STOPPED stopped: $((($(date +%s%N) - s) / 1000000)) ms"
expect_eq "$(timeout 120 ls "$M/by-scope/$SCOPE" | wc -l)" "${#NAMES[@]}" "by-scope/ with a manager stopped"
acquire "$M" during a k
DURING=$SBX
[ "$(jget "$CTL_REPLY" state)" = created ] || [ "$(jget "$CTL_REPLY" state)" = started ] ||
	fail "the acquire with a manager stopped: $CTL_REPLY"
hdocker unpause "$STOPPED" >/dev/null || fail "cannot resume $STOPPED"
STOPPED=
# A node paused past the dispatcher's heartbeat grace (the election alone
# takes about 20 s here) is marked down by the new leader, and with
# restart-condition none the swarm shuts its tasks down for good: its
# sandboxes are lost, not live. Only those on the third node that stays up
# are checked as live below; the paused node's are checked against the
# state the swarm gives their tasks.
keep=()
for n in "${live[@]}"; do
	if [ "$(cat "$T/node.$n")" = "$li" ]; then paused+=("$n"); else keep+=("$n"); fi
done
live=("${keep[@]}")
# all three managers back before a node dies: two of three keep the quorum
for t in $(seq 1 120); do
	[ "$(docker node ls --format '{{.Status}} {{.ManagerStatus}}' | grep -c '^Ready \(Leader\|Reachable\)$')" = 3 ] && break
	sleep 0.5
done
[ "$t" -lt 120 ] || fail "the stopped manager did not come back: $(docker node ls)"

# ---- node 3 dies --------------------------------------------------------------------------
log "killing ${CLUSTER_NODES[2]}"
cluster_kill 2
for t in $(seq 1 120); do
	docker node ls --format '{{.Hostname}} {{.Status}}' | grep -qx "${CLUSTER_NODES[2]} Down" && break
	sleep 0.5
done
[ "$t" -lt 120 ] || fail "the manager did not mark ${CLUSTER_NODES[2]} down: $(docker node ls)"
n=${on3[0]}
for t in $(seq 1 60); do
	[ "$(jget "$(cat "$M/$n/status")" state)" = lost ] && break
	sleep 0.5
done
for n in "${on3[@]}"; do
	expect_eq "$(jget "$(cat "$M/$n/status")" state)" lost "status of $n on the dead node"
	expect_errno "a file of $n on the dead node" ENOTCONN read "$M/$n/work/mine.txt"
done
run_exec "$M" "${on3[0]}" "true"
[ "$CTL_STATUS" != OK ] || fail "an exec in a lost sandbox succeeded: $CTL_REPLY"
[ -n "$(jget "$CTL_REPLY" error.message)" ] || fail "an exec in a lost sandbox: no message ($CTL_REPLY)"
log "exec in a lost sandbox: $CTL_STATUS $(jget "$CTL_REPLY" error.message)"
for n in "${live[@]}"; do
	expect_eq "$(cat "$M/$n/work/mine.txt")" "content of $n" "a file of $n on a live node"
	run_exec "$M" "$n" "cat mine.txt"
	expect_eq "$CTL_STATUS" OK "exec in $n on a live node"
	expect_eq "$(jget "$CTL_REPLY" stdout)" "content of $n" "exec in $n on a live node"
done
# task_state NAME: the state of the newest task of sandbox NAME's service, the
# swarm's own view (one replica, restart-condition none: one task).
task_state() {
	local t
	t=$(timeout 60 docker service ps -q --no-trunc "$1" | head -n 1) || return 1
	[ -n "$t" ] && timeout 60 docker inspect -f '{{.Status.State}}' "$t"
}
# Each sandbox of the paused node as the swarm has its task: a running task
# is a running sandbox whose files read; any other state is a lost sandbox
# whose status names that state (read again after the status, so that the two
# are of one moment).
for n in "${paused[@]}"; do
	for t in 1 2 3; do
		ts=$(task_state "$n") || fail "no task of $n"
		status=$(cat "$M/$n/status") || fail "status of $n"
		[ "$(task_state "$n")" = "$ts" ] && break
	done
	if [ "$ts" = running ]; then
		expect_eq "$(jget "$status" state)" running "status of $n, whose task runs on the node that was paused"
		expect_eq "$(cat "$M/$n/work/mine.txt")" "content of $n" "a file of $n on the node that was paused"
	else
		expect_eq "$(jget "$status" state)" lost "status of $n, whose task is $ts"
		expect_contains "$(jget "$status" lost)" "its task is $ts" "status of $n names its task's state"
		expect_errno "a file of $n, whose task is $ts" ENOTCONN read "$M/$n/work/mine.txt"
	fi
	log "$n on the node that was paused: task $ts, sandbox $(jget "$status" state)"
done
expect_eq "$(ls "$M" | grep -c '^maf-sandbox-docker-')" "$((${#NAMES[@]} + 1))" "ls MOUNT with a node dead"

# ---- a lost key acquired again: a new sandbox on a live node ---------------------------
n=${on3[0]}
old=$(docker service inspect -f '{{.ID}}' "$n") || fail "no service of $n before the re-acquire"
acquire "$M" "${KEYOF[$n]}" a k
expect_eq "$SBX" "$n" "the re-acquire's name (the key's)"
new=$(docker service inspect -f '{{.ID}}' "$n") || fail "no service of $n after the re-acquire"
[ "$new" != "$old" ] || fail "the re-acquire kept the lost service $old"
i=$(sbx_node "$n") || fail "no node of the re-acquired $n"
[ "$i" != 2 ] || fail "the re-acquired $n is on the dead node"
expect_eq "$(jget "$(cat "$M/$n/status")" state)" running "status of the re-acquired $n"
echo again >"$M/$n/work/again.txt" && expect_eq "$(cat "$M/$n/work/again.txt")" again "files of the re-acquired $n"
log "$n acquired again on ${CLUSTER_NODES[$i]}"

# ---- dispose and reap ------------------------------------------------------------------------
for n in "${on3[@]:1}"; do
	rmdir "$M/$n" || fail "dispose of the lost $n"
	expect_eq "$(docker service ls -q --filter "name=$n" | wc -l)" 0 "the service of the lost $n after its dispose"
done
sleep 2
out=$("$MAFSBX_CLI" --cluster swarm -H "$CLUSTER_MANAGER" reap --older-than 1s --scope "$SCOPE") ||
	fail "mafsbx reap: $out"
log "reap: $out"
nothing_left "after dispose and reap" 0 1
umount_fs "$M" "$DAEMON_PID"
log "ok"
