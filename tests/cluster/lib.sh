# tests/cluster/lib.sh: the test cluster, a real Docker Swarm on this
# machine (doc/scale-out.md "The test cluster"), sourced after
# tests/platform/lib.sh by tests/cluster/cluster.sh and tests/bench/bench_cluster.
#
# Three nodes, each a container of the Debian 13 platform setup image (its
# docker.io 26.1, API 1.45) running a dockerd of its own: its own data root
# (a folder of the host's filesystem), `--no-new-privileges` (the cluster
# endpoint refuses nodes without it), listening on its unix socket and on
# tcp://0.0.0.0:2375 inside a private user-defined bridge network of the
# host's engine, which the host reaches directly. Three managers (the swarm
# made on node 2, so that the leader is not the manager the mount talks to and
# stopping it is a real failover), each node labelled
# `mafsbx.engine=tcp://<its bridge IP>:2375` and `sandbox=true`, the test
# image loaded on each. Every dockerd runs with --debug and logs to
# DIR/nodeN/log/dockerd.log on the host, so a test can count the API calls a
# node's engine served (`Calling METHOD PATH` lines).
#
# cluster_up DIR brings it up (nodes and engines in parallel) and sets
# CLUSTER_NODES (the node containers), CLUSTER_IPS, CLUSTER_URLS and
# CLUSTER_MANAGER (node 1's engine URL); cluster_check proves it; cluster_down
# removes everything this run made (services, task containers and their
# cgroups, the nodes, their network and data), also after a failure or a
# killed node. cluster_env writes the state for the tests (cluster_env_file;
# tests/cluster/testlib.sh reads it and sources this file for ndocker,
# cluster_kill and the rest).
# shellcheck shell=bash

CLUSTER_SIZE=${CLUSTER_SIZE:-3}
# 0: the nodes' dockerd without --no-new-privileges (tests/cluster/capabilities.sh
# measures what a service gets without it).
CLUSTER_NNP=${CLUSTER_NNP:-1}
CLUSTER_PORT=2375
# Bounds of the bring-up: a dockerd answering, a swarm join. Generous: the
# machine runs at load 10+ (a node's dockerd takes 2-4 s quiet).
CLUSTER_ENGINE_WAIT_S=${CLUSTER_ENGINE_WAIT_S:-120}
CLUSTER_DIR=
CLUSTER_NET=
CLUSTER_NODES=()
CLUSTER_IPS=()
CLUSTER_URLS=()
CLUSTER_MANAGER=

# The host's engine, which runs the nodes: the DOCKER_HOST of whoever sourced
# this file (a test then points DOCKER_HOST at the manager); hdocker CMD...:
# the docker CLI against it.
CLUSTER_HOST_ENGINE=${CLUSTER_HOST_ENGINE:-${DOCKER_HOST:-unix:///var/run/docker.sock}}
hdocker() { DOCKER_HOST=$CLUSTER_HOST_ENGINE docker "$@"; }

# ndocker I CMD...: the docker CLI against node I's engine (0-based), from the host.
ndocker() {
	local i=$1
	shift
	DOCKER_HOST=${CLUSTER_URLS[$i]} timeout 120 docker "$@"
}

# cluster_node_start I IMAGE: node I's container and its dockerd (run in the
# background by cluster_up, one per node).
cluster_node_start() {
	local i=$1 image=$2 name=${CLUSTER_NODES[$1]} d=$CLUSTER_DIR/node$(($1 + 1))
	mkdir -p "$d/docker" "$d/log"
	DOCKER_HOST=$CLUSTER_HOST_ENGINE nested_engine_run "$name" "$image" "$d/docker" --network "$CLUSTER_NET" --hostname "$name" \
		-v "$d/log:/mafsbx-log" --label "mafsbx-cluster=$CLUSTER_NET" 2>/dev/null
	# --tls=false said out loud: dockerd 26 otherwise sleeps 15 s to warn
	# about a plain-TCP listener. The port is on the private network only.
	local nnp=--no-new-privileges
	[ "$CLUSTER_NNP" = 1 ] || nnp=
	hdocker exec -d "$name" sh -c "exec dockerd $nnp --debug --tls=false \
		-H unix:///var/run/docker.sock -H tcp://0.0.0.0:$CLUSTER_PORT >/mafsbx-log/dockerd.log 2>&1" ||
		die "cannot start dockerd in $name"
}

# cluster_wait_engine I: node I's engine answers from the host.
cluster_wait_engine() {
	local i=$1 t
	for t in $(seq 1 $((CLUSTER_ENGINE_WAIT_S * 5))); do
		DOCKER_HOST=${CLUSTER_URLS[$i]} timeout 10 docker version >/dev/null 2>&1 && return 0
		hdocker exec "${CLUSTER_NODES[$i]}" pgrep -x dockerd >/dev/null 2>&1 || {
			tail -n 20 "$CLUSTER_DIR/node$((i + 1))/log/dockerd.log" >&2
			die "the dockerd of ${CLUSTER_NODES[$i]} exited"
		}
		sleep 0.2
	done
	die "the dockerd of ${CLUSTER_NODES[$i]} did not answer at ${CLUSTER_URLS[$i]} in $CLUSTER_ENGINE_WAIT_S s"
}

# cluster_up DIR [IMAGE]: the three nodes, the swarm, the labels, the test
# image. DIR: an empty folder of the host's filesystem (not tmpfs: overlay2).
cluster_up() {
	CLUSTER_DIR=$1
	local image=${2:-$(setup_image_name)} t0=$SECONDS i pids=() id
	local testimage=${MAFSBX_TEST_IMAGE:-mafsbx/busybox:latest}
	hdocker image inspect "$image" >/dev/null 2>&1 || die "no image $image (tests/platform/debian13.sh --images-only makes it)"
	id=$(printf '%s' "$CLUSTER_DIR" | sha256sum | cut -c1-8)
	CLUSTER_NET=mafsbx-cluster-$id
	hdocker network create --label "mafsbx-cluster=$CLUSTER_NET" "$CLUSTER_NET" >/dev/null ||
		die "cannot make the network $CLUSTER_NET"
	for i in $(seq 0 $((CLUSTER_SIZE - 1))); do
		CLUSTER_NODES[i]=$CLUSTER_NET-n$((i + 1))
	done
	for i in "${!CLUSTER_NODES[@]}"; do
		cluster_node_start "$i" "$image" &
		pids+=($!)
	done
	for i in "${pids[@]}"; do
		wait "$i" || die "a node did not start"
	done
	for i in "${!CLUSTER_NODES[@]}"; do
		CLUSTER_IPS[i]=$(hdocker inspect -f "{{(index .NetworkSettings.Networks \"$CLUSTER_NET\").IPAddress}}" \
			"${CLUSTER_NODES[$i]}") || die "no address for ${CLUSTER_NODES[$i]}"
		CLUSTER_URLS[i]=tcp://${CLUSTER_IPS[$i]}:$CLUSTER_PORT
	done
	CLUSTER_MANAGER=${CLUSTER_URLS[0]}
	hdocker save "$testimage" >"$CLUSTER_DIR/image.tar" || die "cannot save $testimage"
	pids=()
	for i in "${!CLUSTER_NODES[@]}"; do
		(cluster_wait_engine "$i" && ndocker "$i" load -q -i "$CLUSTER_DIR/image.tar" >/dev/null) &
		pids+=($!)
	done
	for i in "${pids[@]}"; do
		wait "$i" || die "a node's engine did not come up or did not load $testimage"
	done
	log "engines up after $((SECONDS - t0)) s"
	cluster_swarm
	log "cluster up after $((SECONDS - t0)) s: ${CLUSTER_URLS[*]} (manager ${CLUSTER_MANAGER})"
}

# cluster_swarm: the swarm made on node 2 (its first leader; node 1 alone in
# a one-node swarm), the others joined as managers, every node labelled. A 2 s
# dispatcher heartbeat: a dead node is marked down in seconds, not the
# default's 15 or so.
cluster_swarm() {
	local tok i nid first=$((CLUSTER_SIZE > 1 ? 1 : 0))
	ndocker "$first" swarm init --advertise-addr "${CLUSTER_IPS[$first]}" --dispatcher-heartbeat 2s >/dev/null ||
		die "swarm init on ${CLUSTER_NODES[$first]}"
	tok=$(ndocker "$first" swarm join-token -q manager) || die "no join token"
	# One join at a time: a Raft membership change must commit before the next.
	for i in "${!CLUSTER_NODES[@]}"; do
		[ "$i" != "$first" ] || continue
		ndocker "$i" swarm join --token "$tok" --advertise-addr "${CLUSTER_IPS[$i]}" \
			"${CLUSTER_IPS[$first]}:2377" >/dev/null || die "${CLUSTER_NODES[$i]} cannot join"
	done
	for i in "${!CLUSTER_NODES[@]}"; do
		nid=$(ndocker "$i" info -f '{{.Swarm.NodeID}}') || die "no node ID from ${CLUSTER_NODES[$i]}"
		ndocker "$first" node update --label-add "mafsbx.engine=${CLUSTER_URLS[$i]}" --label-add sandbox=true "$nid" \
			>/dev/null || die "cannot label ${CLUSTER_NODES[$i]}"
	done
}

# cluster_check: the swarm has three ready, active managers, each labelled
# with an engine the host reaches whose /info names that node and runs with
# no-new-privileges, and the test image on each. Prints one line per node.
cluster_check() {
	local i nid want got lines n
	lines=$(ndocker 0 node ls --format '{{.Hostname}} {{.Status}} {{.Availability}} {{.ManagerStatus}}') ||
		die "node ls on the manager failed"
	n=$(printf '%s\n' "$lines" | grep -c ' Ready Active \(Leader\|Reachable\)$' || true)
	[ "$n" = "$CLUSTER_SIZE" ] || die "want $CLUSTER_SIZE ready managers, the manager lists: $lines"
	for i in "${!CLUSTER_NODES[@]}"; do
		nid=$(ndocker "$i" info -f '{{.Swarm.NodeID}} {{.Swarm.LocalNodeState}}') || die "no /info from ${CLUSTER_URLS[$i]}"
		[ "${nid#* }" = active ] || die "${CLUSTER_NODES[$i]} is not in the swarm: $nid"
		nid=${nid%% *}
		want="${CLUSTER_URLS[$i]} true"
		got=$(ndocker 0 node inspect -f '{{index .Spec.Labels "mafsbx.engine"}} {{index .Spec.Labels "sandbox"}}' "$nid") ||
			die "node inspect $nid"
		[ "$got" = "$want" ] || die "node $nid (${CLUSTER_NODES[$i]}) has labels '$got', want '$want'"
		ndocker "$i" info -f '{{.SecurityOptions}}' | grep -q 'name=no-new-privileges' ||
			die "${CLUSTER_NODES[$i]}'s dockerd does not run with --no-new-privileges"
		ndocker "$i" image inspect "${MAFSBX_TEST_IMAGE:-mafsbx/busybox:latest}" >/dev/null 2>&1 ||
			die "${CLUSTER_NODES[$i]} lacks the test image"
		log "node $((i + 1)): ${CLUSTER_NODES[$i]} $nid at ${CLUSTER_URLS[$i]}: ready manager, labelled, no-new-privileges, image loaded"
	done
}

# cluster_env_file: the state the tests read (sourced by tests/cluster/testlib.sh).
cluster_env_file() { echo "$CLUSTER_DIR/cluster.env"; }
cluster_env() {
	{
		printf 'CLUSTER_DIR=%q\nCLUSTER_NET=%q\nCLUSTER_MANAGER=%q\n' "$CLUSTER_DIR" "$CLUSTER_NET" "$CLUSTER_MANAGER"
		printf 'CLUSTER_NODES=(%s)\n' "${CLUSTER_NODES[*]}"
		printf 'CLUSTER_IPS=(%s)\n' "${CLUSTER_IPS[*]}"
		printf 'CLUSTER_URLS=(%s)\n' "${CLUSTER_URLS[*]}"
	} >"$(cluster_env_file)"
}

# cluster_down: everything the run made goes, whatever state it is in (no
# step's failure stops the next, also under set -e in an exit trap).
# Services first (on whichever manager answers), then each live node's
# containers (their cgroups are in the host's hierarchies: the node's dockerd
# removes them; a killed node's are removed by hand, cluster_cgroups_rm),
# then the nodes, their network and their data.
cluster_down() {
	local i n f
	[ -n "$CLUSTER_NET" ] || return 0
	for i in "${!CLUSTER_NODES[@]}"; do
		if hdocker inspect -f '{{.State.Paused}}' "${CLUSTER_NODES[$i]}" 2>/dev/null | grep -q true; then
			hdocker unpause "${CLUSTER_NODES[$i]}" >/dev/null 2>&1 || true
		fi
	done
	for i in "${!CLUSTER_NODES[@]}"; do
		[ -n "${CLUSTER_URLS[$i]:-}" ] || continue
		if DOCKER_HOST=${CLUSTER_URLS[$i]} timeout 30 docker service ls -q >"$CLUSTER_DIR/services" 2>/dev/null; then
			xargs -r env DOCKER_HOST="${CLUSTER_URLS[$i]}" timeout 60 docker service rm <"$CLUSTER_DIR/services" \
				>/dev/null 2>&1 || true
			break
		fi
	done
	for i in "${!CLUSTER_NODES[@]}"; do
		n=${CLUSTER_NODES[$i]}
		[ "$(hdocker inspect -f '{{.State.Running}}' "$n" 2>/dev/null)" = true ] || continue
		DOCKER_HOST=$CLUSTER_HOST_ENGINE timeout 120 docker exec "$n" sh -c 'docker ps -aq | xargs -r docker rm -f' >/dev/null 2>&1 || true
	done
	for i in "${!CLUSTER_NODES[@]}"; do
		hdocker rm -fv "${CLUSTER_NODES[$i]}" >/dev/null 2>&1 || true
	done
	for f in "$CLUSTER_DIR"/killed-*; do
		if [ -f "$f" ]; then cluster_cgroups_rm "$f"; fi
	done
	hdocker network rm "$CLUSTER_NET" >/dev/null 2>&1 || true
	# the nodes' layers are root-owned files of the host's filesystem
	if [ -n "$CLUSTER_DIR" ]; then rm -rf "$CLUSTER_DIR"; fi
	CLUSTER_NET=
	return 0
}

# cluster_kill I: node I dies as a machine does: its container is killed, and
# with its PID namespace every process in it (dockerd, containerd, the
# sandboxes). The IDs of its containers are kept first: their cgroups, in the
# host's hierarchies, outlive them and cluster_down removes them.
cluster_kill() {
	local i=$1 f=$CLUSTER_DIR/killed-$(($1 + 1))
	ndocker "$i" ps -aq --no-trunc >"$f" || true
	hdocker kill "${CLUSTER_NODES[$i]}" >/dev/null || die "cannot kill ${CLUSTER_NODES[$i]}"
}

# cluster_cgroups_rm FILE: the (empty) cgroups of the containers FILE names,
# left by a killed node. A cgroup with a process left is kept and said.
cluster_cgroups_rm() {
	local id d
	while read -r id; do
		[ -n "$id" ] || continue
		for d in /sys/fs/cgroup/*/docker/"$id" /sys/fs/cgroup/docker/"$id" /sys/fs/cgroup/system.slice/docker-"$id".scope; do
			[ -d "$d" ] || continue
			rmdir "$d" 2>/dev/null || log "cannot remove the cgroup $d of a killed node's container"
		done
	done <"$1"
}
