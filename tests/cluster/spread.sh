#!/usr/bin/env bash
# spread.sh: one mount over the swarm's manager (-o cluster=swarm, -o
# placement=node.labels.sandbox==true, -o cap_drop_all), twelve sandboxes:
#   - twelve acquires at once make twelve services the swarm spreads over at
#     least two nodes, each with the placement constraint, one replica,
#     restart-condition none, upstream's labels on the service and on its task
#     container, and the hardening of a single engine on that container (cap
#     drop ALL, pids limit, init, no new privileges) with one internal overlay
#     network of its own and no route out;
#   - `status` names the node (hostname and ID) the manager placed it on;
#   - on a sandbox of each node: the §9.3/§9.4/§9.6 tables of
#     tests/mount/files.sh (files_tables.sh), an exec and a detached exec;
#   - `ls MOUNT`, `ls -l by-scope/SCOPE/t` and `mafsbx --cluster swarm ls`
#     list all twelve, the mount with one list of services at the manager and
#     no call at any other node's engine;
#   - dispose (rmdir) removes the service, and its task container is gone
#     from its node when the call returns; `mafsbx reap` removes the rest;
#     nothing of the run is left on any node: no service, container or network.
. "$(dirname "$0")/testlib.sh"
require_env
# shellcheck source=tests/mount/files_tables.sh
. "$(dirname "$0")/../mount/files_tables.sh"
: "${MAFSBX_CLI:?MAFSBX_CLI must name the mafsbx binary}"
nets_mark
M=$T/mnt
mount_cluster "$M" -o placement=node.labels.sandbox==true,cap_drop_all

# ---- twelve acquires at once -----------------------------------------------------
pids=()
for i in $(seq 1 12); do
	(acquire "$M" t "a$i" k && echo "$SBX" >"$T/sbx.$i") &
	pids+=($!)
done
wait_pids 300 "${pids[@]}"
NAMES=()
for i in $(seq 1 12); do
	[ -s "$T/sbx.$i" ] || fail "acquire $i failed"
	NAMES+=("$(cat "$T/sbx.$i")")
done
expect_eq "$(printf '%s\n' "${NAMES[@]}" | sort -u | wc -l)" 12 "twelve distinct sandboxes"
expect_eq "$(scope_services)" 12 "services of the scope at the manager"

# Where each runs (the manager's account), one sandbox per node for the tables.
declare -A ON_NODE=() NODEID=()
NETS=()
for i in "${!CLUSTER_NODES[@]}"; do
	NODEID[$i]=$(ndocker "$i" info -f '{{.Swarm.NodeID}}') || fail "no node ID of ${CLUSTER_NODES[$i]}"
done
for n in "${NAMES[@]}"; do
	i=$(sbx_node "$n") || fail "the manager places no running task of $n"
	[ -n "${ON_NODE[$i]:-}" ] || ON_NODE[$i]=$n
	st=$(cat "$M/$n/status") || fail "status of $n"
	expect_contains "$st" "${NODEID[$i]}" "status of $n names its node's ID"
	expect_contains "$st" "${CLUSTER_NODES[$i]}" "status of $n names its node's hostname"
	spec=$(docker service inspect -f '{{.Spec.Mode.Replicated.Replicas}} {{.Spec.TaskTemplate.RestartPolicy.Condition}} {{.Spec.TaskTemplate.Placement.Constraints}} {{index .Spec.Labels "maf-sandbox.scope"}}' "$n") ||
		fail "service inspect $n"
	expect_eq "$spec" "1 none [node.labels.sandbox==true] $SCOPE" "service $n: replicas, restart, placement, scope label"
	cid=$(sbx_cid "$n") || fail "no task container of $n"
	hc=$(ndocker "$i" inspect -f '{{.HostConfig.CapDrop}} {{.HostConfig.Init}} {{index .Config.Labels "maf-sandbox.scope"}} {{len .NetworkSettings.Networks}} {{.HostConfig.PidsLimit}}' "$cid") ||
		fail "inspect $cid on node $i"
	expect_eq "${hc% *}" "[ALL] true $SCOPE 1" "task container of $n: cap drop, init, scope label, one network"
	[ "${hc##* }" -gt 0 ] 2>/dev/null || fail "task container of $n: pids limit '${hc##* }'"
	net=$(ndocker "$i" inspect -f '{{range $k, $v := .NetworkSettings.Networks}}{{$k}}{{end}}' "$cid")
	expect_eq "$(docker network inspect -f '{{.Driver}} {{.Internal}}' "$net")" "overlay true" "network $net of $n"
	NETS+=("$net")
	expect_eq "$(gsh "$n" "grep NoNewPrivs /proc/self/status | tr -d '\t '")" "NoNewPrivs:1" "no new privileges in $n"
	# an internal network: a route to its own subnet only, no default route
	gsh "$n" "awk 'NR > 1 && \$2 == \"00000000\"' /proc/net/route" | grep -q . && fail "$n has a default route"
done
expect_eq "$(printf '%s\n' "${NETS[@]}" | sort -u | wc -l)" 12 "one network per sandbox"
[ "${#ON_NODE[@]}" -ge 2 ] || fail "the twelve sandboxes are all on one node"
log "twelve sandboxes over ${#ON_NODE[@]} nodes"

# ---- files and execs on each node, the nodes at once -----------------------------
# node_files I: on node I's sandbox, the tables, an exec and a detached exec
# (in a job of its own: its own N, W, scratch folder and probes passed).
node_files() {
	N=${ON_NODE[$1]}
	W=$M/$N/work
	T=$T/node$1
	mkdir -p "$T"
	log "files on ${CLUSTER_NODES[$1]} ($N)"
	files_layout
	files_out
	files_in
	files_delete
	run_exec "$M" "$N" "echo exec on \$(hostname) > out.txt; cat out.txt"
	expect_eq "$CTL_STATUS" OK "exec in $N"
	expect_eq "$(jget "$CTL_REPLY" exit_code)" 0 "exec exit code in $N"
	expect_contains "$(jget "$CTL_REPLY" stdout)" "exec on" "exec stdout in $N"
	expect_eq "$(cat "$W/out.txt")" "$(jget "$CTL_REPLY" stdout | tr -d '\n')" "the exec's file read through the mount"
	detach_exec "\"command\": \"echo detached; exit 3\""
	expect_eq "$(timeout 60 cat "$M/$N/execs/$XID/wait" | "$MFS_TOOL" jget exit_code)" 3 "detached exec's exit code in $N"
	expect_eq "$(cat "$M/$N/execs/$XID/stdout")" detached "detached exec's stdout in $N"
}
# The three nodes at once: the stage's time, and the load under which the
# manager's stale /info answers once failed the freeze proofs (see
# doc/scale-out.md "Freeze proofs on a manager's engine").
pids=()
for i in "${!ON_NODE[@]}"; do
	node_files "$i" &
	pids+=($!)
done
wait_pids 400 "${pids[@]}"

# ---- one list for the whole cluster -------------------------------------------------
# one_list WHAT: since calls_mark, one list of services at the manager (node
# 1's engine) and no call at the other nodes' engines.
one_list() {
	local i
	for i in "${!CLUSTER_NODES[@]}"; do
		log "$1: ${CLUSTER_NODES[$i]} served $(calls_since "$i") calls: $(calls_lines_since "$i" | tr '\n' ';')"
	done
	expect_eq "$(calls_lines_since 0 | grep -c '^GET /v[0-9.]*/services')" 1 "$1: lists of services at the manager"
	for i in 1 2; do
		expect_eq "$(calls_since "$i")" 0 "$1: calls at ${CLUSTER_NODES[$i]}'s engine"
	done
}
sleep 1 # the attribute and entry caches of the acquires above lapse
calls_mark
expect_eq "$(ls "$M" | grep -c '^maf-sandbox-docker-')" 12 "ls MOUNT lists the twelve"
one_list "ls MOUNT"
calls_mark
expect_eq "$(ls -l "$M/by-scope/$SCOPE/t" | grep -c ' a[0-9]*$')" 12 "ls -l by-scope/SCOPE/t lists the twelve"
one_list "ls -l by-scope"
out=$("$MAFSBX_CLI" --cluster swarm -H "$CLUSTER_MANAGER" ls --scope "$SCOPE") || fail "mafsbx ls: $out"
for n in "${NAMES[@]}"; do
	expect_contains "$out" "$n" "mafsbx --cluster swarm ls"
done

# ---- dispose and reap ------------------------------------------------------------------
# three by rmdir (each waits for its task container to go), nine by the reap
for k in 0 1 2; do
	n=${NAMES[$k]}
	i=$(sbx_node "$n") || fail "no node of $n"
	rmdir "$M/$n" || fail "rmdir (dispose) $n"
	expect_eq "$(docker service ls -q --filter "name=$n" | wc -l)" 0 "the service of $n after its dispose"
	expect_eq "$(ndocker "$i" ps -aq --filter "label=com.docker.swarm.service.name=$n" | wc -l)" 0 \
		"the task container of $n on ${CLUSTER_NODES[$i]} when the dispose returned"
done
expect_eq "$(scope_services)" 9 "nine services left"
sleep 2 # older than 1 s
out=$("$MAFSBX_CLI" --cluster swarm -H "$CLUSTER_MANAGER" reap --older-than 1s --scope "$SCOPE") ||
	fail "mafsbx reap: $out"
expect_contains "$out" "reap: removed 9 sandbox service(s)" "mafsbx --cluster swarm reap (mafsbx(1))"
nothing_left "after dispose and reap"
expect_eq "$(ls "$M" | grep -c '^maf-sandbox-docker-')" 0 "ls MOUNT after the reap"
umount_fs "$M" "$DAEMON_PID"
# what the freeze proofs said (a failed one fails a table above; these are the warnings)
log "freeze warnings in the daemon's log: $(grep -c 'freeze: ' "$T/daemon.mnt.log" || true)"
grep 'freeze: ' "$T/daemon.mnt.log" | head -n 5 >&2 || true
log "ok"
