#!/usr/bin/env bash
# tests/cluster/capabilities.sh: what a Swarm service can ask of its task
# container, measured on two engines in one run (doc/scale-out.md "What a
# service can ask, per Docker version"). Not a CI test: a measurement that
# prints a table.
#   20.10  the host's own dockerd binary (Debian 12's docker.io, API 1.41)
#          as a one-node swarm in a network namespace of its own (never the
#          host's: a second dockerd there removes docker0 when it stops), its
#          own data root, socket and containerd namespace
#   26.1   a one-node swarm of the Debian 13 setup image (API 1.45), as the
#          test cluster's nodes run (tests/cluster/lib.sh)
# Neither dockerd runs with --no-new-privileges (NNP=1: both do), so the
# table says what the service itself gets. Each engine gets one service with everything a
# sandbox asks (the Engine API's own JSON, the same body to both: a field an
# engine does not know it drops without a word, which is what the table
# must show), then its task container is inspected and probed, and the
# refusals are asked for (network none, a second service of one name).
# Needs root, the host's engine, the test image and the setup image.
set -euo pipefail
PROG=capabilities
# shellcheck source=tests/platform/lib.sh
. "$(dirname "$0")/../platform/lib.sh"
# shellcheck source=tests/cluster/lib.sh
. "$here/../cluster/lib.sh"
platform_start -- docker curl unshare
IMAGE=${MAFSBX_TEST_IMAGE:-mafsbx/busybox:latest}
NNP=${NNP:-0}
nnp=
[ "$NNP" = 0 ] || nnp=--no-new-privileges
D=$(mktemp -d /var/tmp/mafsbx-capabilities.XXXXXX)
NS=mafsbx-cap-$(basename "$D" | tr -dc 'a-zA-Z0-9')
DPID=
finish() {
	local pid
	pid=$(cat "$D/old/pid" 2>/dev/null || true)
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		DOCKER_HOST=unix://$D/old.sock docker ps -aq 2>/dev/null | xargs -r env DOCKER_HOST="unix://$D/old.sock" docker rm -f >/dev/null 2>&1
		# the dockerd itself (DPID is unshare, which waits for it)
		kill -TERM "$pid"
		for _ in $(seq 1 300); do kill -0 "$DPID" 2>/dev/null || break; sleep 0.1; done
	fi
	if [ -n "$DPID" ] && kill -0 "$DPID" 2>/dev/null; then kill -KILL "$DPID"; fi
	local m
	for m in $(awk -v d="$D" 'index($2, d) == 1 { print $2 }' /proc/self/mounts | sort -r); do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
	done
	cluster_down
	rm -rf "$D"
}
trap finish EXIT

# ---- the two engines ------------------------------------------------------------
# 20.10: a veth pair gives the swarm an address to advertise in the namespace.
mkdir -p "$D/old"
unshare --net --fork sh -c "ip link set lo up && ip link add d0 type veth peer name d1 && ip addr add 10.77.0.1/24 dev d0 && ip link set d1 up &&
	ip link set d0 up && exec dockerd $nnp --data-root $D/old/data --exec-root $D/old/exec --pidfile $D/old/pid \
	-H unix://$D/old.sock --containerd-namespace $NS --containerd-plugins-namespace $NS-p" >"$D/old.log" 2>&1 &
DPID=$!
OLD=unix://$D/old.sock
for _ in $(seq 1 300); do
	[ -S "$D/old.sock" ] && DOCKER_HOST=$OLD docker version >/dev/null 2>&1 && break
	kill -0 "$DPID" 2>/dev/null || { cat "$D/old.log" >&2; die "the 20.10 dockerd exited"; }
	sleep 0.2
done
DOCKER_HOST=$OLD docker swarm init --advertise-addr 10.77.0.1 >/dev/null || die "swarm init (20.10)"
docker save "$IMAGE" | DOCKER_HOST=$OLD docker load -q >/dev/null || die "image load (20.10)"
CLUSTER_SIZE=1 CLUSTER_NNP=$NNP cluster_up "$D/new"
NEW=${CLUSTER_URLS[0]}

# api URL METHOD PATH [BODY]: the Engine API, no version prefix (the engine's own)
api() {
	local url=$1 m=$2 p=$3 b=${4:-} c
	c=(curl -sS --max-time 60 -X "$m")
	case "$url" in
	unix://*) c+=(--unix-socket "${url#unix://}" "http://engine$p") ;;
	tcp://*) c+=("http://${url#tcp://}$p") ;;
	esac
	[ -z "$b" ] || c+=(-H 'Content-Type: application/json' -d "$b")
	"${c[@]}"
}
spec() { # NAME NETWORK
	printf '{"Name": "%s", "Labels": {"probe.service": "1"}, "Mode": {"Replicated": {"Replicas": 1}},
	 "TaskTemplate": {"RestartPolicy": {"Condition": "none"}, "Networks": [{"Target": "%s"}],
	  "Resources": {"Limits": {"Pids": 64}},
	  "ContainerSpec": {"Image": "%s", "Command": ["sleep", "3600"], "User": "1000:1000", "ReadOnly": true,
	   "CapabilityDrop": ["ALL"], "Init": true, "Labels": {"probe.container": "1"},
	   "Privileges": {"NoNewPrivileges": true}}}}' "$1" "$2" "$IMAGE"
}
# probe URL: one row of results per capability, "key value"
probe() {
	local url=$1 cid i out
	local -x DOCKER_HOST=$url
	docker network create -d overlay --internal probe-net >/dev/null || die "internal overlay network ($url)"
	echo "internal-overlay-network yes"
	out=$(api "$url" POST /services/create "$(spec probe probe-net)")
	for i in $(seq 1 300); do
		cid=$(docker ps -q --filter label=com.docker.swarm.service.name=probe)
		[ -n "$cid" ] && break
		sleep 0.2
	done
	[ -n "$cid" ] || die "no task of the probe service on $url ($out; $(docker service ps --no-trunc probe 2>&1))"
	echo "user $(docker inspect -f '{{.Config.User}}' "$cid")/$(docker exec "$cid" id -u)"
	echo "read-only $(docker inspect -f '{{.HostConfig.ReadonlyRootfs}}' "$cid")"
	echo "cap-drop $(docker inspect -f '{{.HostConfig.CapDrop}}' "$cid")/$(docker exec "$cid" awk '/^CapEff/ { print $2 }' /proc/1/status)"
	echo "pids-limit $(docker inspect -f '{{.HostConfig.PidsLimit}}' "$cid")"
	echo "init $(docker inspect -f '{{.HostConfig.Init}}' "$cid")"
	echo "no-new-privileges SecurityOpt=$(docker inspect -f '{{.HostConfig.SecurityOpt}}' "$cid")/$(docker exec "$cid" awk '/^NoNewPrivs/ { print $2 }' /proc/1/status)/spec=$(docker service inspect -f '{{.Spec.TaskTemplate.ContainerSpec.Privileges}}' probe)"
	echo "no-route-out $(docker exec "$cid" awk 'NR > 1 && $2 == "00000000" { d = 1 } END { print d ? "default-route" : "none" }' /proc/net/route)"
	echo "labels service=$(docker service inspect -f '{{index .Spec.Labels "probe.service"}}' probe)/container=$(docker inspect -f '{{index .Config.Labels "probe.container"}}' "$cid")"
	docker pause "$cid" >/dev/null && docker unpause "$cid" >/dev/null && echo "pause-unpause yes" || echo "pause-unpause no"
	echo "exec $(docker exec "$cid" echo yes)"
	echo "network-none $(api "$url" POST /services/create "$(spec probe-none none)" | tr -d '\n')"
	echo "name-unique $(api "$url" POST /services/create "$(spec probe probe-net)" | tr -d '\n')"
	echo "node-info-nnp $(docker info -f '{{.SecurityOptions}}')"
	docker service rm probe >/dev/null 2>&1 || true
	docker service rm probe-none >/dev/null 2>&1 || true
}
probe "$OLD" >"$D/old.rows"
probe "$NEW" >"$D/new.rows"
printf '%-26s | %-40s | %s\n' capability "20.10 ($(DOCKER_HOST=$OLD docker version -f '{{.Server.APIVersion}}'))" \
	"26.1 ($(DOCKER_HOST=$NEW docker version -f '{{.Server.APIVersion}}'))"
while read -r k v; do
	printf '%-26s | %-40s | %s\n' "$k" "$v" "$(awk -v k="$k" '$1 == k { $1 = ""; sub(/^ /, ""); print }' "$D/new.rows")"
done <"$D/old.rows"
