# tests/cluster/testlib.sh: sourced by every cluster test (tests/cluster/*.sh
# run by tests/cluster/cluster.sh) after it is started with
# MAFSBX_CLUSTER_ENV naming the swarm's state (tests/cluster/lib.sh's
# cluster_env). Brings in tests/mount/lib.sh (mounts, .ctl transactions,
# expect_*, a scope of the run's own) and tests/cluster/lib.sh (ndocker,
# cluster_kill), and adds what a test of the cluster needs: a mount over the
# manager, where a sandbox runs (its node and task container), a root shell in
# it on its node, the API calls each node's engine served, and what the run
# left on each node. The exit trap removes the scope's services too.
# shellcheck shell=bash
: "${MAFSBX_CLUSTER_ENV:?run the cluster tests through tests/cluster/cluster.sh}"
# shellcheck source=tests/mount/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../mount/lib.sh"
# The nodes are not this host's engine: their sandboxes' files are on the
# engine plane (what the shared tables log; the mount chooses it itself).
PLANE=engine
die() { fail "$*"; }
# shellcheck source=tests/cluster/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# the swarm's state (after lib.sh, which starts it empty)
# shellcheck source=/dev/null
. "$MAFSBX_CLUSTER_ENV"
# Every docker CLI call and mfs_tool call of the test goes to the manager
# unless it names a node's engine (ndocker, gsh).
export DOCKER_HOST=$CLUSTER_MANAGER

# The scope's services go before lib.sh's cleanup, which removes the scope's
# containers and networks (a sandbox's network carries its labels) through
# the manager: once their task containers are gone from the live nodes, so
# that no endpoint holds a network.
cluster_test_cleanup() {
	local rc=$? i t n left
	DOCKER_HOST=$CLUSTER_MANAGER timeout 60 docker service ls -q --filter "label=maf-sandbox.scope=$SCOPE" 2>/dev/null |
		xargs -r env DOCKER_HOST="$CLUSTER_MANAGER" timeout 60 docker service rm >/dev/null 2>&1
	for t in $(seq 1 60); do
		left=0
		for i in "${!CLUSTER_URLS[@]}"; do
			n=$(DOCKER_HOST=${CLUSTER_URLS[$i]} timeout 10 docker ps -aq --filter "label=maf-sandbox.scope=$SCOPE" 2>/dev/null |
				wc -l)
			left=$((left + n))
		done
		[ "$left" = 0 ] && break
		sleep 0.5
	done
	(exit "$rc")
	cleanup
}
trap cluster_test_cleanup EXIT

# wait_pids SECONDS PID...: the background jobs PID end within SECONDS (a
# bare `wait` would wait for the mounts' daemons too) and succeed; one still
# running then is killed, and it or one that failed fails the test.
wait_pids() {
	local secs=$1 p t alive
	shift
	for t in $(seq 1 $((secs * 5))); do
		alive=0
		for p in "$@"; do
			if kill -0 "$p" 2>/dev/null; then alive=1; fi
		done
		[ "$alive" = 1 ] || break
		sleep 0.2
	done
	for p in "$@"; do
		if kill -0 "$p" 2>/dev/null; then
			kill -TERM "$@" 2>/dev/null
			fail "a background job ($p) still runs after $secs s"
		fi
		wait "$p" || fail "a background job ($p) failed (its output above)"
	done
}

# mount_cluster MOUNTPOINT [options...]: a mount over the swarm's manager,
# its plane left to the mount (PLANE=local: mount_fs then names none).
mount_cluster() {
	local mnt=$1
	shift
	PLANE=local mount_fs "$mnt" -o cluster=swarm -H "$CLUSTER_MANAGER" "$@"
}

# node_index HOSTNAME: the index (0-based) of the node of that hostname (the
# nodes' hostnames are their containers' names).
node_index() {
	local i
	for i in "${!CLUSTER_NODES[@]}"; do
		[ "${CLUSTER_NODES[$i]}" = "$1" ] && { echo "$i"; return 0; }
	done
	return 1
}

# sbx_node NAME: the index of the node the manager placed sandbox NAME's
# running task on (the manager's own account, not the mount's).
sbx_node() {
	local h
	h=$(timeout 60 docker service ps --filter desired-state=running --format '{{.Node}}' "$1" 2>/dev/null | head -n 1)
	[ -n "$h" ] || return 1
	node_index "$h"
}

# sbx_cid NAME: the ID of sandbox NAME's task container, asked of its node.
sbx_cid() {
	local i
	i=$(sbx_node "$1") || return 1
	ndocker "$i" ps -aq --filter "label=com.docker.swarm.service.name=$1" | head -n 1
}

# gsh NAME COMMAND: a root shell in sandbox NAME on its node (docker exec on
# that node's engine, retried while a freeze holds it: lib.sh's dexec_as).
gsh() {
	local n=$1 i cid
	shift
	i=$(sbx_node "$n") || fail "the manager places no running task of $n"
	cid=$(ndocker "$i" ps -aq --filter "label=com.docker.swarm.service.name=$n" | head -n 1)
	[ -n "$cid" ] || fail "no container of $n on ${CLUSTER_NODES[$i]}"
	DOCKER_HOST=${CLUSTER_URLS[$i]} dexec_as 0 "$cid" sh -c "$*"
}

# calls I: the API calls node I's engine has served so far (its dockerd logs
# each with --debug); calls_of I PATTERN: those whose "METHOD PATH" matches.
calls() { grep -c 'msg="Calling ' "$CLUSTER_DIR/node$(($1 + 1))/log/dockerd.log"; }
calls_of() {
	grep 'msg="Calling ' "$CLUSTER_DIR/node$(($1 + 1))/log/dockerd.log" | grep -c -E "$2"
}
# calls_mark: the calls of every node now, in CALLS0; calls_since I: node I's since.
calls_mark() {
	local i
	CALLS0=()
	for i in "${!CLUSTER_NODES[@]}"; do CALLS0[i]=$(calls "$i"); done
}
calls_since() { echo $(($(calls "$1") - CALLS0[$1])); }
# calls_lines_since I: node I's "METHOD PATH" lines since calls_mark.
calls_lines_since() {
	grep 'msg="Calling ' "$CLUSTER_DIR/node$(($1 + 1))/log/dockerd.log" | tail -n +"$((CALLS0[$1] + 1))" |
		sed 's/.*msg="Calling \([A-Z]* [^"]*\)".*/\1/'
}

# scope_services: the number of services of this run's scope (the manager's list).
scope_services() {
	timeout 60 docker service ls -q --filter "label=maf-sandbox.scope=$SCOPE" | wc -l
}
# scope_containers I: containers of this run's scope on node I, running or not.
scope_containers() {
	ndocker "$1" ps -aq --filter "label=maf-sandbox.scope=$SCOPE" | wc -l
}
# node_networks I: node I's networks, by name, sorted (compared before and after).
node_networks() {
	ndocker "$1" network ls --format '{{.Name}}' | sort | tr '\n' ' '
}
# nothing_left WHAT [NODE...]: no service of the scope at the manager, and on
# each node (default: all) no container of it and no network it did not have
# when the test began (NETS0, from nets_mark; an earlier test's may have gone
# since).
nets_mark() {
	local i
	NETS0=()
	for i in "${!CLUSTER_NODES[@]}"; do NETS0[i]=$(node_networks "$i"); done
}
new_networks() {
	local net
	for net in $(node_networks "$1"); do
		case " ${NETS0[$1]} " in *" $net "*) ;; *) printf '%s ' "$net" ;; esac
	done
}
nothing_left() {
	local what=$1 i n
	shift
	local nodes=("$@")
	[ ${#nodes[@]} -gt 0 ] || nodes=("${!CLUSTER_NODES[@]}")
	expect_eq "$(scope_services)" 0 "$what: services of the scope at the manager"
	for i in "${nodes[@]}"; do
		expect_eq "$(scope_containers "$i")" 0 "$what: containers of the scope on ${CLUSTER_NODES[$i]}"
		# a removed network is gone from a node once its last endpoint there is
		for n in $(seq 1 50); do
			[ -z "$(new_networks "$i")" ] && break
			sleep 0.2
		done
		expect_eq "$(new_networks "$i")" "" "$what: networks on ${CLUSTER_NODES[$i]} the test began without"
	done
}
