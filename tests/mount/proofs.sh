#!/bin/bash
# proofs.sh: the proofs that a host process is a container's (src/host/pin.c
# for the local plane's pin of its init, src/host/execkill.c for the
# processes a detached exec's cancel kills) hold against a process that is
# only in the container's cgroup, on the real engine. Root on the host, or a
# user with a delegated cgroup subtree (cgroup.h), can put a process in a
# cgroup that names the container; the PID namespace and root proofs still
# tell it from the container's own:
#   1. the real init passes every proof, and so does a real exec's process;
#   2. a host process moved into the container's cgroup passes the cgroup
#      proof alone (all the code had before) but is refused by the PID
#      namespace proof, as an init and as a member;
#   3. a process in the container's cgroup and PID namespace, with the
#      host's root, is refused by the root filesystem proof, as an init
#      (against the engine's GraphDriver MergedDir) and as a member (against
#      the init's root).
. "$(dirname "$0")/lib.sh"
require_env

N=$(MFS_HANDMADE_PLAIN=1 "$MFS_TOOL" handmade "$SCOPE" t a proofs) || fail "cannot start a container"
INIT=$("$MFS_TOOL" initpid "$N")
[ "${INIT:-0}" -gt 1 ] || fail "no init PID for $N"
ID=$(docker inspect -f '{{.Id}}' "$N") || fail "inspect $N"
STRAYS=()

# prove PID: the three proof lines; proof_of OUT NAME: one of them.
prove() { "$MFS_TOOL" prove "$N" "$1" || fail "mfs_tool prove $N $1"; }
proof_of() { printf '%s\n' "$1" | sed -n "s/^$2: //p"; }

# move_to_cgroup PID: into the container's cgroup in every hierarchy the init lists.
move_to_cgroup() {
	local line rest ctrl path dir
	while IFS= read -r line; do
		rest=${line#*:}
		ctrl=${rest%%:*}
		path=${rest#*:}
		case "$ctrl" in
		'') dir=/sys/fs/cgroup; [ -d /sys/fs/cgroup/unified ] && dir=/sys/fs/cgroup/unified ;;
		name=*) dir=/sys/fs/cgroup/${ctrl#name=} ;;
		*) dir=/sys/fs/cgroup/$ctrl ;;
		esac
		[ -w "$dir$path/cgroup.procs" ] && echo "$1" >"$dir$path/cgroup.procs" 2>/dev/null
	done <"/proc/$INIT/cgroup"
	grep -q "$ID" "/proc/$1/cgroup" || fail "could not move $1 into the cgroup of $N: $(cat "/proc/$1/cgroup")"
}

# The moved processes go before the container is removed (a cgroup with processes cannot be).
kill_strays() {
	local p
	for p in "${STRAYS[@]}"; do
		kill -KILL "$p" 2>/dev/null
	done
	for p in "${STRAYS[@]}"; do
		for _ in $(seq 1 50); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
	done
	STRAYS=()
}
trap 'kill_strays; cleanup' EXIT

# --- 1. the container's own processes pass -----------------------------------
out=$(prove "$INIT")
log "the init: $(echo $out)"
expect_eq "$(proof_of "$out" cgroup)" OK "the init's cgroup proof"
expect_eq "$(proof_of "$out" init)" OK "the init's proofs"
expect_eq "$(proof_of "$out" member)" OK "the init's member proofs"
docker exec -d "$N" sleep 301 || fail "docker exec"
EXEC=
for _ in $(seq 1 100); do
	for p in /proc/[0-9]*; do
		[ "$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)" = "sleep 301 " ] &&
			[ "$(readlink "$p/ns/pid")" = "$(readlink "/proc/$INIT/ns/pid")" ] && EXEC=${p#/proc/}
	done
	[ -n "$EXEC" ] && break
	sleep 0.1
done
[ -n "$EXEC" ] || fail "the exec's process did not appear"
out=$(prove "$EXEC")
log "a real exec's process: $(echo $out)"
expect_eq "$(proof_of "$out" member)" OK "a real exec's process"
log "ok: the container's init and an exec's process pass"

# --- 2. a host process in the container's cgroup -------------------------------
sleep 600 &
HOST=$!
STRAYS+=("$HOST")
move_to_cgroup "$HOST"
out=$(prove "$HOST")
log "a host process in the container's cgroup: $(echo $out)"
expect_eq "$(proof_of "$out" cgroup)" OK "the cgroup proof alone takes it"
expect_contains "$(proof_of "$out" init)" "the PID namespace proof failed" "as the init"
expect_contains "$(proof_of "$out" member)" "the PID namespace proof failed" "as a member"
log "ok: a host process moved into the container's cgroup is refused"

# --- 3. in the container's cgroup and PID namespace, the host's root -----------
nsenter -t "$INIT" -p -- sleep 602 &
NS=$!
STRAYS+=("$NS")
CHILD=
for _ in $(seq 1 100); do
	CHILD=$(cat "/proc/$NS/task/$NS/children" 2>/dev/null | awk '{ print $1 }')
	[ -n "$CHILD" ] && break
	sleep 0.1
done
[ -n "$CHILD" ] || fail "nsenter started no child"
STRAYS+=("$CHILD")
[ "$(readlink "/proc/$CHILD/ns/pid")" = "$(readlink "/proc/$INIT/ns/pid")" ] || fail "the child is not in the container's PID namespace"
move_to_cgroup "$CHILD"
out=$(prove "$CHILD")
log "in the container's cgroup and PID namespace, with the host's root: $(echo $out)"
expect_eq "$(proof_of "$out" cgroup)" OK "the cgroup proof alone takes it"
expect_contains "$(proof_of "$out" init)" "the root filesystem proof failed" "as the init"
expect_contains "$(proof_of "$out" member)" "the root filesystem proof failed" "as a member"
log "ok: a process with another root is refused"
kill_strays
