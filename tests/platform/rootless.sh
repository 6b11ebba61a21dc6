#!/usr/bin/env bash
# tests/platform/rootless.sh BUILD_DIR: the mount as the user of a rootless
# Docker (Debian 12's dockerd-rootless.sh, rootlesskit, slirp4netns, uidmap:
# contrib/setup.sh installs them), on this cgroup v1 host, where its cgroup
# driver is 'none' (no pause, no pids limit). Run as root; the shared
# dockerd, its socket and docker0 are not touched (the rootless engine has
# its own network namespace, socket, data root and exec root).
#
#   1. a test user (MAFSBX_ROOTLESS_USER, mafsbx-rootless) with /etc/subuid
#      and /etc/subgid ranges, made if missing and removed (with its home,
#      which holds the engine's data root) at the end if this run made it
#   2. /dev/net/tun and /dev/fuse mode 0666 for the stage only (as
#      distributions ship them; 0600 on these VMs), their modes restored at
#      the end
#   3. dockerd-rootless.sh as that user, XDG_RUNTIME_DIR a private directory;
#      the offline test image made in it with `mafsbx mkimage`
#   4. as that user, with MAFSBX_REQUIRE_ENGINE=1: tests/mount/story.sh on
#      the local plane, then tests/platform/rootless-checks.sh
#   5. everything stopped: the mounts (the tests unmount theirs), the engine
#      and its children (rootlesskit, slirp4netns, containerd, shims), any
#      other process of the user; a process left is a failure
#
# Prints "rootless: N passed, N failed, N skipped" last; exits 1 on any
# failure.
set -uo pipefail
PROG=rootless
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
BUILD=${1:?usage: rootless.sh BUILD_DIR}
BUILD=$(cd "$BUILD" && pwd)
log() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { log "FAIL: $*"; echo "rootless: 0 passed, 1 failed, 0 skipped"; exit 1; }
[ "$(id -u)" = 0 ] || die "must run as root (it makes a user and sets device modes)"
ROOTLESS_SH=$(command -v dockerd-rootless.sh || echo /usr/share/docker.io/contrib/dockerd-rootless.sh)
[ -x "$ROOTLESS_SH" ] || die "dockerd-rootless.sh is missing (docker.io ships it in /usr/share/docker.io/contrib)"
for t in rootlesskit slirp4netns newuidmap newgidmap fusermount3 setpriv; do
	command -v "$t" >/dev/null || die "$t is missing (contrib/setup.sh installs rootlesskit, slirp4netns, uidmap, fuse3)"
done
for b in fs/mafsbxfs tests/mount/mfs_tool tools/mafsbx; do
	[ -x "$BUILD/$b" ] || die "$BUILD/$b is not built"
done
t0=$SECONDS
U=${MAFSBX_ROOTLESS_USER:-mafsbx-rootless}
made_user=0
T=
ENGINE_PID=
declare -A modes=()
passed=0 failed=0

# The user's processes still running, as itself or as one of its subordinate
# uids (a container's non-root processes), zombies aside.
user_procs() {
	local uid p st o s=0 n=0
	uid=$(id -u "$U" 2>/dev/null) || return 0
	read -r s n < <(awk -F: -v u="$U" '$1 == u { print $2, $3; exit }' /etc/subuid) || true
	for p in /proc/[0-9]*; do
		o=$(stat -c %u "$p" 2>/dev/null) || continue
		[ "$o" = "$uid" ] || (( o >= ${s:-0} && o < ${s:-0} + ${n:-0} )) || continue
		st=$(awk '{ print $3 }' "$p/stat" 2>/dev/null) || continue
		[ "$st" = Z ] || echo "${p#/proc/}"
	done
}

cleanup() {
	local left pid i
	if [ -n "$ENGINE_PID" ]; then
		# rootlesskit (the session leader) passes SIGTERM to dockerd, which
		# stops containerd and the shims; slirp4netns ends with the namespace
		kill -TERM "$ENGINE_PID" 2>/dev/null
		for i in $(seq 1 200); do
			kill -0 "$ENGINE_PID" 2>/dev/null || break
			sleep 0.1
		done
		wait "$ENGINE_PID" 2>/dev/null
		for i in $(seq 1 50); do
			[ -z "$(user_procs)" ] && break
			sleep 0.1
		done
	fi
	# a mount of the user's that a failed test left (in a directory of the user's)
	awk '{ for (i = 6; i <= NF; i++) if ($i == "-") { if ($(i + 1) == "fuse.mafsbxfs") print $5; break } }' \
		/proc/self/mountinfo | while read -r m; do
		[ "$(stat -c %U "$(dirname "$m")" 2>/dev/null)" = "$U" ] && fusermount3 -u -z "$m"
	done
	# Whatever of the user's is still running was started by this stage.
	left=$(user_procs)
	if [ -n "$left" ]; then
		log "processes of $U left running, killed: $(echo $left)"
		for pid in $left; do
			ps -o pid=,args= -p "$pid" >&2
			kill -KILL "$pid" 2>/dev/null
		done
		LEFT_BEHIND=1
	fi
	for d in "${!modes[@]}"; do
		chmod "${modes[$d]}" "$d"
	done
	[ -n "$T" ] && rm -rf "$T"
	if [ "$made_user" = 1 ]; then
		sleep 0.5
		userdel -r "$U" >/dev/null 2>&1 || log "userdel -r $U failed"
	fi
}
LEFT_BEHIND=0
trap cleanup EXIT
trap 'exit 1' INT TERM

# --- 1. the user ------------------------------------------------------------------
if ! id "$U" >/dev/null 2>&1; then
	useradd -m -U -s /bin/bash "$U" || die "useradd $U"
	made_user=1
fi
UID_=$(id -u "$U") GID_=$(id -g "$U") HOME_=$(getent passwd "$U" | cut -d: -f6)
# A subordinate range (useradd adds one where /etc/login.defs says so; else
# one past every range listed).
for f in /etc/subuid /etc/subgid; do
	touch "$f"
	grep -q "^$U:" "$f" && continue
	start=$(awk -F: 'BEGIN { m = 100000 } { e = $2 + $3; if (e > m) m = e } END { print m }' "$f")
	echo "$U:$start:65536" >>"$f"
done
log "user $U (uid $UID_), subordinate ids $(grep "^$U:" /etc/subuid | cut -d: -f2-) / $(grep "^$U:" /etc/subgid | cut -d: -f2-)"

# --- 2. the device modes ------------------------------------------------------------
for d in /dev/net/tun /dev/fuse; do
	[ -c "$d" ] || die "$d is missing"
	modes[$d]=$(stat -c %a "$d")
	chmod 0666 "$d"
done

# --- 3. the engine ------------------------------------------------------------------
T=$(mktemp -d /tmp/mafsbx-rootless.XDG.XXXXXX)
chown "$UID_:$GID_" "$T"
chmod 0700 "$T"
mkdir -p "$T/bin"
cp "$BUILD/fs/mafsbxfs" "$BUILD/tests/mount/mfs_tool" "$BUILD/tools/mafsbx" "$src/tests/mount/lib.sh" \
	"$src/tests/mount/story.sh" "$here/rootless-checks.sh" "$T/bin/"
chown -R "$UID_:$GID_" "$T/bin"
SOCK=$T/docker.sock
as_user() { (exec_as_user "$@"); }
exec_as_user() {
	exec setpriv --reuid="$UID_" --regid="$GID_" --init-groups \
		env -i HOME="$HOME_" USER="$U" LOGNAME="$U" XDG_RUNTIME_DIR="$T" DOCKER_HOST="unix://$SOCK" \
		PATH="$(dirname "$ROOTLESS_SH"):/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin" "$@"
}
(cd / && exec_as_user setsid "$ROOTLESS_SH" --data-root "$HOME_/.local/share/docker" --exec-root "$T/docker" \
	-H "unix://$SOCK" --pidfile "$T/docker.pid" >"$T/dockerd.log" 2>&1) &
ENGINE_PID=$!
for _ in $(seq 1 300); do
	curl -sf --unix-socket "$SOCK" http://d/_ping >/dev/null 2>&1 && break
	kill -0 "$ENGINE_PID" 2>/dev/null || { tail -n 30 "$T/dockerd.log" >&2; die "the rootless dockerd ended"; }
	sleep 0.1
done
curl -sf --unix-socket "$SOCK" http://d/_ping >/dev/null || { tail -n 30 "$T/dockerd.log" >&2; die "the rootless dockerd does not answer on $SOCK"; }
. /etc/os-release
info=$(curl -sf --unix-socket "$SOCK" http://d/info | python3 -c 'import json, sys; i = json.load(sys.stdin)
print(i["ServerVersion"], "cgroup v%s, driver %s, rootless %s" % (i.get("CgroupVersion"), i.get("CgroupDriver"),
      "rootless" in " ".join(i.get("SecurityOptions") or [])))')
log "platform: $PRETTY_NAME, Docker $info, as $U, kernel $(uname -r) (engine up after $((SECONDS - t0)) s)"
as_user "$T/bin/mafsbx" mkimage >/dev/null || die "mafsbx mkimage on the rootless engine"

# --- 4. the tests, as the user -------------------------------------------------------
run() {
	local name=$1 s=$SECONDS rc=0
	shift
	(cd "$T" && as_user MAFSBXFS="$T/bin/mafsbxfs" MFS_TOOL="$T/bin/mfs_tool" MAFSBX_REQUIRE_ENGINE=1 \
		MAFSBX_TEST_PLANE=local "$@") || rc=$?
	if [ "$rc" = 0 ]; then
		passed=$((passed + 1))
		log "$name: ok ($((SECONDS - s)) s)"
	else
		failed=$((failed + 1))
		log "$name: FAILED (exit $rc, $((SECONDS - s)) s)"
	fi
}
run story bash "$T/bin/story.sh"
run rootless-checks bash "$T/bin/rootless-checks.sh"

# --- 5. teardown ---------------------------------------------------------------------
trap - EXIT
cleanup
if [ "$LEFT_BEHIND" = 1 ]; then
	failed=$((failed + 1))
	log "teardown: processes of $U were left running"
else
	passed=$((passed + 1))
	log "teardown: no process of $U left"
fi
log "rootless stage finished after $((SECONDS - t0)) s"
echo "rootless: $passed passed, $failed failed, 0 skipped"
[ "$failed" = 0 ]
