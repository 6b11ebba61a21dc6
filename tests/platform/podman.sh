#!/usr/bin/env bash
# podman.sh BUILD_DIR [-- COMMAND...]: the mount over Podman (Debian 12's
# podman 4.3, rootful), on a service of its own: its own socket, storage
# and runtime root under a temporary directory, and a containers.conf of
# its own (CONTAINERS_CONF) with `default_ulimits = []` (Podman's default
# nofile/nproc exceed these VMs' hard limits: "error setting rlimit type 7").
# Nothing under /etc is changed and the shared dockerd is not touched.
#
# It builds the test images on that service (`mafsbx mkimage`), runs the
# `mafsbx` verbs against it (acquire, exec, ls, fingerprint, dispose, reap,
# thaw), then COMMAND (contrib/test.sh passes the mount suites) with
# DOCKER_HOST naming the service, and stops the service. The exit status is
# COMMAND's, or 1 when the service or a verb failed.
set -uo pipefail
BUILD=${1:?usage: podman.sh BUILD_DIR [-- COMMAND...]}
shift
[ "${1:-}" = -- ] && shift
BUILD=$(cd "$BUILD" && pwd)
CLI=$BUILD/tools/mafsbx
log() { printf 'podman.sh: %s\n' "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }
[ "$(id -u)" = 0 ] || die "must run as root (a rootful Podman)"
command -v podman >/dev/null || die "podman is not installed (contrib/setup.sh installs it)"
[ -x "$CLI" ] || die "$CLI is not built"

T=$(mktemp -d /tmp/mafsbx-podman.XXXXXX)
SOCK=$T/podman.sock
cat >"$T/containers.conf" <<'CONF'
[containers]
default_ulimits = []
CONF
export CONTAINERS_CONF=$T/containers.conf
P=(podman --root "$T/storage" --runroot "$T/run" --tmpdir "$T/tmp")
SVC=

cleanup() {
	if [ -n "$SVC" ]; then
		"${P[@]}" rm -af -t 0 >/dev/null 2>&1
		"${P[@]}" network prune -f >/dev/null 2>&1
		kill "$SVC" 2>/dev/null
		wait "$SVC" 2>/dev/null
		"${P[@]}" system reset -f >/dev/null 2>&1
	fi
	# Podman leaves each exec's monitor (conmon, --exit-delay 300) running 5 minutes after it
	local p
	for p in $(pgrep -f -- "conmon .*--root --exit-command-arg $T/storage "); do
		kill "$p" 2>/dev/null
	done
	# whatever overlay of Podman's storage is still mounted under T
	awk -v t="$T/" 'index($5, t) == 1 { print $5 }' /proc/self/mountinfo | sort -r | while read -r m; do
		umount -l "$m" 2>/dev/null
	done
	rm -rf "$T"
}
trap cleanup EXIT

mkdir -p "$T/tmp"
setsid "${P[@]}" system service --time=0 "unix://$SOCK" >"$T/service.log" 2>&1 &
SVC=$!
for _ in $(seq 1 100); do
	curl -sf --unix-socket "$SOCK" http://podman/_ping >/dev/null 2>&1 && break
	kill -0 "$SVC" 2>/dev/null || { cat "$T/service.log" >&2; die "the Podman service ended"; }
	sleep 0.1
done
curl -sf --unix-socket "$SOCK" http://podman/_ping >/dev/null || die "the Podman service does not answer on $SOCK"
export DOCKER_HOST=unix://$SOCK
PVER=$(curl -sf --unix-socket "$SOCK" http://podman/version |
	python3 -c 'import json, sys; v = json.load(sys.stdin); print(v["Version"], v.get("Os"), v.get("KernelVersion"))')
. /etc/os-release
log "platform: $PRETTY_NAME, Podman $PVER, rootful, cgroup $([ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ] && echo v2 || echo v1)"

"$CLI" mkimage >/dev/null || die "mafsbx mkimage on Podman"
"$CLI" mkimage --egress-proxy >/dev/null || die "mafsbx mkimage --egress-proxy on Podman"

# ---- the verbs -------------------------------------------------------------------
# In a runtime directory of their own: `mafsbx thaw` with the default ones would
# collect, as gone from this engine, the lock files that dockerd's containers
# have in them.
export MAFSBX_RUNDIR=$T/rundir
S=podmanverbs-$$
N=$("$CLI" acquire --scope "$S" --thread t --agent a --kind k --image mafsbx/busybox:latest) || die "mafsbx acquire"
[ "$("$CLI" acquire --scope "$S" --thread t --agent a --kind k --image mafsbx/busybox:latest)" = "$N" ] ||
	die "a second acquire of the key gave another name"
out=$("$CLI" exec "$N" -- sh -c 'echo hello; id -u; test -d /maf-sandbox/work && echo wd') || die "mafsbx exec: $out"
[ "$out" = "hello
0
wd" ] || die "mafsbx exec output: $out"
out=$(printf 'from stdin\n' | "$CLI" exec -i "$N" -- cat) || die "mafsbx exec -i"
[ "$out" = "from stdin" ] || die "mafsbx exec -i output: $out"
"$CLI" exec "$N" -- sh -c 'exit 7'
[ $? = 7 ] || die "mafsbx exec did not give the command's exit status"
"$CLI" ls --scope "$S" | grep -q "$N" || die "mafsbx ls does not show $N"
"$CLI" fingerprint "$N" --json -o "$T/fp.json" || die "mafsbx fingerprint"
"$CLI" fingerprint --diff "$T/fp.json" "$N" >"$T/diff.out" 2>&1 || die "mafsbx fingerprint --diff"
"$CLI" thaw --rundir "$MAFSBX_RUNDIR" >/dev/null || die "mafsbx thaw"
"$CLI" dispose --scope "$S" --thread t >/dev/null || die "mafsbx dispose"
"$CLI" ls --scope "$S" | grep -q "$N" && die "mafsbx dispose left $N"
# a failed acquire leaves no container behind: a work dir under a file
if "$CLI" acquire --scope "$S" --thread t --agent a --kind bad --image mafsbx/busybox:latest \
	--work-dir /etc/passwd/w >/dev/null 2>"$T/bad.err"; then
	die "an acquire with its work dir under a file succeeded"
fi
grep -q "was removed" "$T/bad.err" || die "the failed acquire's error does not say its container was removed: $(cat "$T/bad.err")"
containers() {
	curl -sf --unix-socket "$SOCK" 'http://podman/containers/json?all=1' |
		python3 -c 'import json, sys; print(" ".join(c["Names"][0] for c in json.load(sys.stdin)))'
}
[ -z "$(containers)" ] || die "a container was left behind on Podman: $(containers)"
# and one whose capability probe fails after the container started: an image without rm
cid=$(docker run -d --network none mafsbx/busybox:latest /bin/busybox rm /bin/rm) || die "docker run (an image without rm)"
docker wait "$cid" >/dev/null
curl -sf --unix-socket "$SOCK" -X POST -H 'Content-Type: application/json' -d '{}' \
	"http://podman/commit?container=$cid&repo=mafsbx/norm&tag=podman&changes=CMD%20%5B%22%2Fbin%2Fsleep%22%2C%20%22infinity%22%5D" \
	>/dev/null || die "commit of the image without rm"
docker rm "$cid" >/dev/null
if "$CLI" acquire --scope "$S" --thread t --agent a --kind norm --image mafsbx/norm:podman --cap files_delete \
	>/dev/null 2>"$T/norm.err"; then
	die "an acquire needing files_delete in an image without rm succeeded"
fi
grep -q "files_delete" "$T/norm.err" && grep -q "was removed" "$T/norm.err" ||
	die "the failed probe's error does not name files_delete and its removed container: $(cat "$T/norm.err")"
[ -z "$(containers)" ] || die "a container was left behind on Podman by a failed probe: $(containers)"
log "verbs: acquire, exec (-i, exit status), ls, fingerprint, thaw, dispose, two failed acquires (a work dir under a file, a failed capability probe): ok, no container left"
unset MAFSBX_RUNDIR

[ $# -gt 0 ] || exit 0
"$@"
