#!/bin/bash
# swarm.sh: one mount over a Docker Swarm (mafsbxfs(1) CLUSTER), against a
# real single-node swarm this test starts: a dockerd of the host's package in
# a network and mount namespace of its own (unshare; it never touches the
# host's network), its own data root and unix socket, initialised as a swarm
# manager, run with --no-new-privileges, its node labelled with its engine
# (mafsbx.engine=unix://SOCKET), the test image loaded into it. The swarm is
# driven and inspected with the docker CLI (DOCKER_HOST=its socket); the
# mount with -o cluster=swarm -H that socket. What it proves:
#  - an acquire makes one service named as upstream names the container,
#    with upstream's labels on the service and on its task's container, one
#    replica, restart none, init, cap-drop ALL, the pids limit, an internal
#    network of its own; the task's NoNewPrivs is 1;
#  - ls, by-scope/, status (with the node's hostname and ID), files and
#    execs through the node's engine;
#  - an acquire thaws a sandbox left paused with no live freeze;
#  - the node is this host (its engine's unix socket, its task containers'
#    processes in this host's PID namespace): a detached exec's cancel kills
#    what the command started (a background job, a setsid one) and keeps the
#    sandbox and its files, as on one local engine; a blocking exec's timeout
#    the same (ETIMEDOUT, timed_out, the sandbox kept), though the mount asks
#    the manager over tcp://; a detached exec's timeout too; the node's
#    engine labelled as a tcp:// relay is a remote node: a cancel and a
#    timeout dispose, as upstream;
#  - a detached exec runs in the task's container (its monitor routes it to
#    the node's engine); its stdout, status and wait through the mount; a
#    kill -9 of the daemon loses no job: the next mount of the swarm adopts
#    the ended one and the running one;
#  - `mafsbx --cluster swarm thaw` names a node it cannot reach (exit 1) and
#    says "none" for a reachable one; `fingerprint` measures a sandbox on a
#    node that is this host, and refuses (exit 4) one on a remote node;
#  - two mounts acquiring one key at once make one service;
#  - a node whose label is missing or names another engine is refused
#    (ENOTCONN naming the node), never guessed;
#  - with the manager out of reach, files and execs of a placed sandbox
#    keep working, acquires and listings fail with ENOTCONN;
#  - a drained node's sandbox is lost: status says so, its files answer
#    ENOTCONN, an exec fails clearly; a re-acquire once the node is back
#    removes the old service and makes a new one;
#  - rmdir and dispose leave no service, container or network behind.
. "$(dirname "$0")/lib.sh"
require_env
for c in unshare dockerd docker ip; do
	command -v "$c" >/dev/null 2>&1 || skip_or_fail "$c is missing"
done
[ "$(id -u)" = 0 ] || skip_or_fail "a swarm node of its own needs root"

SW=$(mktemp -d /var/lib/mafsbx-swarm-test.XXXXXX)
SW_SOCK=$SW/docker.sock
SW_PID=
export DOCKER_HOST=unix://$SW_SOCK

swarm_stop() {
	[ -n "$SW_PID" ] || return 0
	docker service ls -q 2>/dev/null | xargs -r docker service rm >/dev/null 2>&1
	kill -TERM "$SW_PID" 2>/dev/null
	local i
	for i in $(seq 1 300); do
		kill -0 "$SW_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$SW_PID" 2>/dev/null
	SW_PID=
	rm -rf "$SW"
}
trap 'rc=$?; swarm_stop; (exit $rc); cleanup' EXIT

# A mount of the host's engine made before the node's namespace, as a test
# running beside this one has: the namespace must not keep a copy of it.
PRE=$T/pre
DOCKER_HOST=unix:///var/run/docker.sock mount_fs "$PRE"
PRE_PID=$DAEMON_PID

# The node: /run/docker and /run/containerd are its own (a tmpfs over each
# in its mount namespace), so its containerd is not the host's. The new
# namespace starts with a copy of every mount of the host's, the FUSE mounts
# of the tests running beside this one included: a copy held here keeps its
# daemon from seeing the unmount its own test makes (it then missed its exit
# bound, "did not exit within 30 s of the unmount"), so they are detached
# here first.
unshare --net --mount --propagation private sh -c '
	awk '"'"'$3 ~ /^fuse/ { print $2 }'"'"' /proc/self/mounts | while read -r m; do
		umount -l "$(printf "%b" "$m")" 2>/dev/null
	done
	ip link set lo up
	mount -t tmpfs tmpfs /run/containerd
	mount -t tmpfs tmpfs /run/docker
	exec dockerd --data-root "$1/data" --exec-root "$1/exec" --pidfile "$1/docker.pid" \
		-H "unix://$1/docker.sock" --bridge none --no-new-privileges >"$1/dockerd.log" 2>&1
' sh "$SW" &
SW_PID=$!
for i in $(seq 1 300); do
	docker version >/dev/null 2>&1 && break
	kill -0 "$SW_PID" 2>/dev/null || { cat "$SW/dockerd.log" >&2; fail "the node's dockerd exited"; }
	sleep 0.1
done
docker swarm init --advertise-addr 127.0.0.1 >/dev/null || fail "swarm init"
NODE=$(docker info --format '{{.Swarm.NodeID}}')
HOSTNAME_NODE=$(docker info --format '{{.Name}}')
DOCKER_HOST=unix:///var/run/docker.sock docker save "$IMAGE" | docker load >/dev/null ||
	fail "loading $IMAGE into the node"
docker node update --label-add "mafsbx.engine=unix://$SW_SOCK" "$NODE" >/dev/null || fail "node label"
log "single-node swarm up: node $NODE ($HOSTNAME_NODE)"
copies=$(awk '$3 ~ /^fuse/' "/proc/$SW_PID/mounts" | wc -l)
expect_eq "$copies" 0 "FUSE mounts copied into the node's mount namespace"
umount_fs "$PRE" "$PRE_PID"   # its daemon exits: nothing holds a copy

M=$T/m
mount_fs "$M" -o cluster=swarm -H "unix://$SW_SOCK"
MPID=$DAEMON_PID

# ---- acquire: one service, hardened as asked ------------------------------
acquire "$M" t1 a1 k
N=$SBX
SID=$(jget "$CTL_REPLY" id)
expect_eq "$(jget "$CTL_REPLY" state)" created "first acquire"
expect_eq "$(docker service inspect --format '{{.Spec.Name}}' "$SID")" "$N" "the service's name"
expect_eq "$(docker service inspect --format '{{index .Spec.Labels "maf-sandbox.scope"}}' "$N")" "$SCOPE" \
	"the service's scope label"
expect_eq "$(docker service inspect --format \
	'{{.Spec.Mode.Replicated.Replicas}} {{.Spec.TaskTemplate.RestartPolicy.Condition}} {{.Spec.TaskTemplate.ContainerSpec.Init}}' \
	"$N")" "1 none true" "replicas, restart policy, init"
C=$(docker ps -q --filter "label=com.docker.swarm.service.name=$N")
[ -n "$C" ] || fail "no task container for $N"
expect_eq "$(docker inspect --format '{{index .Config.Labels "maf-sandbox.scope"}} {{.HostConfig.PidsLimit}}' "$C")" \
	"$SCOPE 512" "the task container's labels and pids limit"
expect_eq "$(docker network inspect --format '{{.Internal}} {{.Driver}}' "$N")" "true overlay" \
	"the sandbox's own network"
run_exec "$M" "$N" "grep NoNewPrivs /proc/self/status; ip route | grep -c ^default"
expect_eq "$CTL_STATUS" OK "exec"
expect_contains "$(jget "$CTL_REPLY" stdout)" "NoNewPrivs:	1" "no new privileges in the sandbox"
expect_contains "$(jget "$CTL_REPLY" stdout)" $'\n0' "an internal network: no default route"

# ---- what the Service API cannot set is refused, never served weaker ------
expect_ctl_error "$M" acquire "{\"scope\": \"$SCOPE\", \"thread\": \"tx\", \"agent\": \"a\", \"kind\": \"k\", \"image\": \"$IMAGE\", \"egress\": \"allowlist\", \"egress_allow\": [\"example.com\"]}" \
	EOPNOTSUPP "not served over a swarm"
M5=$T/m5
mount_fs "$M5" -o cluster=swarm,memory=64M,cap_drop_all -H "unix://$SW_SOCK"
expect_ctl_error "$M5" acquire "{\"scope\": \"$SCOPE\", \"thread\": \"tx\", \"agent\": \"a\", \"kind\": \"k\", \"image\": \"$IMAGE\"}" \
	EOPNOTSUPP "MemorySwap"
umount_fs "$M5" "$DAEMON_PID"
expect_eq "$(docker service ls -q --filter "label=maf-sandbox.thread=tx" | wc -l)" 0 "services of refused acquires"

# ---- the tree from the manager's list; status names the node --------------
ls "$M" | grep -qx "$N" || fail "ls does not show $N"
[ -d "$M/by-scope/$SCOPE" ] || fail "by-scope/ does not show $SCOPE"
ST=$(cat "$M/$N/status")
expect_contains "$ST" "\"state\": \"running\"" "status state"
expect_contains "$ST" "\"id\": \"$NODE\"" "status names the node's ID"
expect_contains "$ST" "\"hostname\": \"$HOSTNAME_NODE\"" "status names the node's hostname"
expect_contains "$(cat "$M/.ctl/engine")" "\"usable\": true" ".ctl/engine shows the node usable"

# ---- files and execs through the node's engine ----------------------------
printf 'hello swarm\n' >"$M/$N/work/in.txt" || fail "write a file"
run_exec "$M" "$N" "cat in.txt; echo out >out.txt"
expect_eq "$(jget "$CTL_REPLY" stdout)" "hello swarm" "the exec reads the file"
expect_eq "$(cat "$M/$N/work/out.txt")" out "the file the exec wrote"
mkdir "$M/$N/work/d" && rm "$M/$N/work/out.txt" || fail "mkdir, rm"
[ -e "$M/$N/work/out.txt" ] && fail "out.txt still there"
ctl "$M" dispose "{\"name\": \"$N\", \"reclaim\": \"d\"}"
expect_eq "$CTL_STATUS" OK "a reclaim through the node"
[ -e "$M/$N/work/d" ] && fail "the reclaimed directory is still there"

# ---- a sandbox left paused (a mount that died in a freeze) is thawed --------
docker pause "$C" >/dev/null || fail "docker pause"
acquire "$M" t1 a1 k
expect_eq "$(jget "$CTL_REPLY" state)" started "the acquire of a sandbox left paused"
expect_eq "$(docker inspect --format '{{.State.Paused}}' "$C")" false "the sandbox after that acquire"

# ---- a cancel and a timeout on a node that is this host: killed, the sandbox kept --
# The node's engine is this host's dockerd on its unix socket: its task
# containers' processes are this host's, so the kill's proofs (pidfd, start
# time, cgroup, PID namespace, root) hold as on one local engine. The mount
# asks the manager through a tcp:// relay: whether a command can be killed
# here is its node's to say, not the manager's endpoint's.
tcp_relay "$SW_SOCK"
M1=$M
M=$T/m6
mount_fs "$M" -o cluster=swarm -H "tcp://127.0.0.1:$PORT"
M6PID=$DAEMON_PID
acquire "$M" t4 a k
N4=$SBX
SID4=$(jget "$CTL_REPLY" id)
printf 'kept\n' >"$M/$N4/work/kept.txt" || fail "write a file before the cancel"
N1=$N
N=$N4
detach_exec '"command": "sleep 100 & setsid sleep 101 & echo started; wait"'
for i in $(seq 1 100); do grep -q started "$M/$N4/execs/$XID/stdout" && break; sleep 0.1; done
expect_eq "$(cat "$M/$N4/execs/$XID/stdout")" started "a detached exec's output before its cancel"
expect_eq "$(guest_procs 'sleep 10[01]')" 2 "the detached exec's processes before its cancel"
rmdir "$M/$N4/execs/$XID" || fail "rmdir (cancel) of a detached exec"
sleep 1
expect_eq "$(docker service inspect --format '{{.ID}}' "$N4")" "$SID4" \
	"the sandbox of a cancelled exec on a node that is this host (kept)"
expect_eq "$(guest_procs 'sleep 10[01]')" 0 "the cancelled command's processes 1 s after the cancel"
expect_eq "$(cat "$M/$N4/work/kept.txt")" kept "the sandbox's file after the cancel"
expect_ctl_error "$M" exec "{\"sandbox\": \"$N4\", \"command\": \"sleep 30\", \"timeout\": 2}" ETIMEDOUT \
	"the sandbox kept"
expect_eq "$(jget "$CTL_REPLY" timed_out)" true "timed_out of a blocking exec on a node that is this host"
expect_eq "$(guest_procs 'sleep 30')" 0 "the timed-out command's processes"
expect_eq "$(docker service inspect --format '{{.ID}}' "$N4")" "$SID4" \
	"the sandbox of a timed-out exec on a node that is this host (kept)"
expect_eq "$(cat "$M/$N4/work/kept.txt")" kept "the sandbox's file after the timeout"
detach_exec '"command": "sleep 30", "timeout": 2'
W=$(timeout 60 cat "$M/$N4/execs/$XID/wait") || fail "wait of a detached exec that times out"
expect_eq "$(jget "$W" timed_out) $(jget "$W" sandbox_disposed)" "true false" \
	"a detached exec's timeout on a node that is this host"
expect_eq "$(docker service inspect --format '{{.ID}}' "$N4")" "$SID4" \
	"the sandbox of a timed-out detached exec on a node that is this host (kept)"
# mafsbx fingerprint over the swarm measures the task's container on its node (this host)
C4=$(docker ps -q --no-trunc --filter "label=com.docker.swarm.service.name=$N4")
FP=$("$MAFSBX_CLI" --cluster swarm -H "tcp://127.0.0.1:$PORT" fingerprint "$N4") ||
	fail "mafsbx --cluster swarm fingerprint"
expect_contains "$FP" "${C4:0:12}: " "the fingerprint names the task's container"

# ---- the node's engine reached over tcp:// (a relay): a remote node, so a cancel and a timeout dispose --
docker node update --label-add "mafsbx.engine=tcp://127.0.0.1:$PORT" "$NODE" >/dev/null || fail "node label"
sleep 2.5   # the node map's TTL (src/cluster/cluster.h)
N=$N4
detach_exec '"command": "echo started; sleep 300"'
for i in $(seq 1 100); do grep -q started "$M/$N4/execs/$XID/stdout" && break; sleep 0.1; done
rmdir "$M/$N4/execs/$XID" || fail "rmdir (cancel) of a detached exec on a remote node"
expect_eq "$(docker service ls -q --filter "label=maf-sandbox.thread=t4" | wc -l)" 0 \
	"the sandbox of a cancelled exec on a remote node (disposed, as upstream)"
acquire "$M" t4 a k
N=$SBX
expect_ctl_error "$M" exec "{\"sandbox\": \"$N\", \"command\": \"sleep 30\", \"timeout\": 2}" ETIMEDOUT \
	"disposed"
expect_eq "$(jget "$CTL_REPLY" sandbox_disposed)" true "sandbox_disposed after a timeout on a remote node"
expect_eq "$(docker service ls -q --filter "label=maf-sandbox.thread=t4" | wc -l)" 0 \
	"the sandbox of a timed-out exec on a remote node"
rc=0
"$MAFSBX_CLI" --cluster swarm -H "unix://$SW_SOCK" fingerprint "$N1" 2>"$T/fp.err" || rc=$?
expect_eq "$rc" 4 "mafsbx --cluster swarm fingerprint of a sandbox on a remote node"
expect_contains "$(cat "$T/fp.err")" "not on this host" "the fingerprint's refusal"
# (the relay runs on to the end: a mount that still holds the tcp:// label is served by the same engine)
docker node update --label-add "mafsbx.engine=unix://$SW_SOCK" "$NODE" >/dev/null || fail "node label"
umount_fs "$M" "$M6PID"
M=$M1
N=$N1

# ---- a detached exec runs in the task's container; its job outlives the daemon --
# Its monitor runs it on the node's engine (the manager's backend routes it);
# the daemon killed (an unmount in the background mode), the next mount of the
# swarm adopts the jobs: the ended one with its output and exit code, the
# running one to its end.
acquire "$M" t7 a k
N7=$SBX
C7=$(docker ps -q --no-trunc --filter "label=com.docker.swarm.service.name=$N7")
N=$N7
detach_exec '"command": "cat /etc/hostname; echo end; exit 5"'
XA=$XID
detach_exec '"command": "echo before; sleep 3; echo after; exit 3"'
XB=$XID
N=$N1
W=$(timeout 60 cat "$M/$N7/execs/$XA/wait") || fail "wait of a detached exec on the swarm"
expect_eq "$(jget "$W" exit_code)" 5 "a detached exec's exit code on the swarm"
expect_eq "$(jget "$W" stdout)" "$(docker inspect --format '{{.Config.Hostname}}' "$C7")"$'\n'end \
	"a detached exec's stdout: run in the task's container"
expect_eq "$(jget "$(cat "$M/$N7/execs/$XA/status")" exit_code)" 5 "a detached exec's status on the swarm"
if [ "$MOUNT_MODE" = background ]; then
	umount_fs "$M" "$MPID"
else
	kill -9 "$MPID"
	wait_exit "$MPID" 10 || fail "the daemon survived kill -9"
	fusermount3 -u -z "$M" || fail "cannot detach the dead mount"
fi
mount_fs "$M" -o cluster=swarm -H "unix://$SW_SOCK"
MPID=$DAEMON_PID
[ -d "$M/$N7/execs/$XA" ] || fail "the ended job was not adopted by the swarm's next mount"
expect_eq "$(jget "$(cat "$M/$N7/execs/$XA/status")" exit_code)" 5 "an adopted ended job's exit code"
expect_eq "$(tail -n1 "$M/$N7/execs/$XA/stdout")" end "an adopted ended job's output"
W=$(timeout 60 cat "$M/$N7/execs/$XB/wait") || fail "wait of an adopted running job on the swarm"
expect_eq "$(jget "$W" exit_code)" 3 "an adopted running job's exit code"
expect_eq "$(jget "$W" stdout)" $'before\nafter' "an adopted running job's output"
rmdir "$M/$N7" || fail "rmdir $N7"

# ---- two mounts acquiring one key at once: one service ---------------------
M2=$T/m2
mount_fs "$M2" -o cluster=swarm -H "unix://$SW_SOCK"
M2PID=$DAEMON_PID
( acquire "$M" t2 both k; echo "$(jget "$CTL_REPLY" id)" >"$T/id1" ) &
P1=$!
( acquire "$M2" t2 both k; echo "$(jget "$CTL_REPLY" id)" >"$T/id2" ) &
P2=$!
wait "$P1" || fail "the first of two concurrent acquires"
wait "$P2" || fail "the second of two concurrent acquires"
expect_eq "$(cat "$T/id1")" "$(cat "$T/id2")" "two mounts, one key: one service"
expect_eq "$(docker service ls -q --filter "label=maf-sandbox.thread=t2" | wc -l)" 1 "services of key t2"

# ---- a node whose label is wrong or missing is refused, never guessed -----
docker node update --label-add "mafsbx.engine=unix:///var/run/docker.sock" "$NODE" >/dev/null
sleep 2.5   # the node map's TTL (src/cluster/cluster.h)
M3=$T/m3
mount_fs "$M3" -o cluster=swarm -H "unix://$SW_SOCK"
expect_errno "a node whose label names another engine" ENOTCONN read "$M3/$N/work/in.txt"
expect_contains "$(cat "$M3/.ctl/engine")" "says it is node" ".ctl/engine says why"
# mafsbx thaw over the swarm names the node it cannot reach, and says so in its exit status
rc=0
"$MAFSBX_CLI" --cluster swarm -H "unix://$SW_SOCK" thaw >"$T/thaw.out" 2>"$T/thaw.err" || rc=$?
expect_eq "$rc" 1 "mafsbx --cluster swarm thaw with a node not reached"
expect_contains "$(cat "$T/thaw.err")" "node $HOSTNAME_NODE (${NODE:0:12}): not reached" "thaw names the node"
expect_contains "$(cat "$T/thaw.err")" "says it is node" "thaw says why"
docker node update --label-rm mafsbx.engine "$NODE" >/dev/null
sleep 2.5
ctl "$M3" acquire "{\"scope\": \"$SCOPE\", \"thread\": \"t3\", \"agent\": \"a\", \"kind\": \"k\", \"image\": \"$IMAGE\"}"
expect_eq "$CTL_STATUS" ENOTCONN "acquire onto a node without the engine label"
expect_contains "$CTL_REPLY" "mafsbx.engine" "the refusal names the missing label"
docker node update --label-add "mafsbx.engine=unix://$SW_SOCK" "$NODE" >/dev/null
sleep 2.5
umount_fs "$M3" "$DAEMON_PID"
THAW=$("$MAFSBX_CLI" --cluster swarm -H "unix://$SW_SOCK" thaw) || fail "mafsbx --cluster swarm thaw: $THAW"
expect_contains "$THAW" "node $HOSTNAME_NODE (${NODE:0:12}): none" "thaw's line for the node"
expect_contains "$THAW" "on 1 of 1 nodes" "thaw's summary"
THAW=$("$MAFSBX_CLI" --cluster swarm -H "unix://$SW_SOCK" thaw --json) || fail "mafsbx --cluster swarm thaw --json"
expect_eq "$(jget "$THAW" nodes.0.id) $(jget "$THAW" nodes.0.result) $(jget "$THAW" thawed)" "$NODE none 0" \
	"thaw's JSON"

# ---- the manager out of reach: acquires and listings ENOTCONN, files served --
# A mount whose -H is a relay (socat) to the manager's socket, while the node
# label names the socket itself: killing the relay (its whole process group,
# so no kept-alive connection survives) takes the manager away, not the node.
setsid socat "UNIX-LISTEN:$T/mgr.sock,fork" "UNIX-CONNECT:$SW_SOCK" </dev/null >/dev/null 2>&1 &
RELAY=$!
BGPIDS+=("$RELAY")
for i in $(seq 1 100); do [ -S "$T/mgr.sock" ] && break; sleep 0.05; done
M4=$T/m4
mount_fs "$M4" -o cluster=swarm -H "unix://$T/mgr.sock"
M4PID=$DAEMON_PID
acquire "$M4" t5 a k
N5=$SBX
printf 'kept\n' >"$M4/$N5/work/k.txt" || fail "write through the relayed mount"
kill -TERM -- "-$RELAY" 2>/dev/null
sleep 2.5   # past the TTLs of the node list and of where a task runs
expect_eq "$(cat "$M4/$N5/work/k.txt")" kept "a file read while the manager is out of reach"
run_exec "$M4" "$N5" "cat k.txt"
expect_eq "$(jget "$CTL_REPLY" stdout)" kept "an exec while the manager is out of reach"
ctl "$M4" acquire "{\"scope\": \"$SCOPE\", \"thread\": \"t6\", \"agent\": \"a\", \"kind\": \"k\", \"image\": \"$IMAGE\"}"
expect_eq "$CTL_STATUS" ENOTCONN "an acquire while the manager is out of reach"
expect_errno "a listing while the manager is out of reach" ENOTCONN readdir "$M4"
fusermount3 -u "$M4" || fail "unmount $M4"
rmdir "$M/$N5" || fail "rmdir $N5"

# ---- a drained node: its sandbox is lost; back, a re-acquire makes it anew --
docker node update --availability drain "$NODE" >/dev/null
for i in $(seq 1 100); do
	[ -z "$(docker ps -q --filter "label=com.docker.swarm.service.name=$N")" ] && break
	sleep 0.2
done
sleep 2.5
expect_contains "$(cat "$M/$N/status")" "\"state\": \"lost\"" "a drained node's sandbox"
expect_errno "a lost sandbox's file" ENOTCONN read "$M/$N/work/in.txt"
run_exec "$M" "$N" "true"
expect_eq "$CTL_STATUS" ENOTCONN "an exec in a lost sandbox"
expect_contains "$CTL_REPLY" "lost" "the exec's refusal says lost"
docker node update --availability active "$NODE" >/dev/null
acquire "$M" t1 a1 k
expect_eq "$(jget "$CTL_REPLY" state)" created "a lost key acquired again"
[ "$(jget "$CTL_REPLY" id)" != "$SID" ] || fail "the lost service was reused"
expect_eq "$(docker service ls -q --filter "label=maf-sandbox.thread=t1" | wc -l)" 1 "services of key t1"
expect_eq "$(cat "$M/$N/work/in.txt" 2>/dev/null)" "" "the new sandbox starts empty"

# ---- mafsbx over the cluster: ls from the manager's list, exec, reap --------
L=$("$MAFSBX_CLI" --cluster swarm -H "unix://$SW_SOCK" ls --scope "$SCOPE" -q) || fail "mafsbx --cluster swarm ls"
expect_eq "$(printf '%s\n' "$L" | wc -l)" 2 "mafsbx ls: the sandboxes of keys t1 and t2"
expect_contains "$L" "$N" "mafsbx ls"
expect_eq "$(MAFSBX_CLUSTER=swarm "$MAFSBX_CLI" exec -H "unix://$SW_SOCK" "$N" -- cat /proc/1/status |
	grep -c NoNewPrivs)" 1 "mafsbx exec (MAFSBX_CLUSTER=swarm)"

# ---- dispose, rmdir and reap leave nothing on the node ------------------------
rmdir "$M/$N" || fail "rmdir $N"
expect_eq "$(docker ps -aq --filter "label=com.docker.swarm.service.name=$N" | wc -l)" 0 \
	"the task container is gone when rmdir returns"
sleep 1.1
"$MAFSBX_CLI" --cluster swarm reap -H "unix://$SW_SOCK" --older-than 1s --scope "$SCOPE" >"$T/reap.out" ||
	fail "mafsbx --cluster swarm reap"
expect_eq "$(cat "$T/reap.out")" "reap: removed 1 sandbox service(s)" "reap's summary"
expect_eq "$(docker service ls -q | wc -l)" 0 "services left"
expect_eq "$(docker ps -aq | wc -l)" 0 "containers left"
expect_eq "$(docker network ls -q --filter "name=maf-sandbox-docker-" | wc -l)" 0 "networks left"
umount_fs "$M2" "$M2PID"
umount_fs "$M" "$MPID"
log "PASS"
