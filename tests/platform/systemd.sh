#!/usr/bin/env bash
# tests/platform/systemd.sh [--images-only | BUILD_DIR]: the mount as its
# systemd unit runs it, under a real systemd. This machine's PID 1 is not
# systemd, so systemd boots as PID 1 of a container (Debian 12's systemd 252,
# which runs on this cgroup v1 host; its own cgroup namespace, the
# hierarchies mounted by systemd itself on an empty /sys/fs/cgroup, so the
# unit's device policy is written for real).
#
#   1. image mafsbx-platform/debian12:systemd-KEY: the stage's minimal Debian
#      12 (minbase_image, lib.sh: the quick start's base) with systemd and the
#      daemon's run-time libraries (KEY: a hash of the mirror and that list),
#      made once, under the Debian 12 images' lock
#   2. a container of it booting /lib/systemd/systemd, with /dev/fuse,
#      CAP_SYS_ADMIN and the host's engine socket; BUILD_DIR's mafsbxfs and
#      mafsbx in /usr/local/bin and the unit BUILD_DIR/contrib/mafsbxfs@.service
#      (contrib/systemd, as meson made it: hardening directives and all) in
#      /etc/systemd/system, MAFSBXFS_OPTIONS (-o plane=engine: the container
#      does not see the engine's processes) in /etc/default/mafsbxfs
#   3. the checks, from `docker exec` shells, which are in none of the unit's
#      namespaces: the unit starts (Type=notify: READY=1 came); its directives
#      are in force on the daemon (no new privileges, the bounding set the
#      unit names, a seccomp filter, a UTS namespace of its own, the device
#      list with /dev/fuse, the mount namespace of PID 1); the mount is seen
#      by another process and a sandbox is acquired and written through it;
#      `journalctl -p err` shows the daemon's error line (provoked: a second
#      instance pointed at an engine socket that does not exist); `systemctl
#      restart` gives a new daemon, the mount is back and still shows the
#      sandbox; `systemctl stop` unmounts
#
# Hooks, for checks of other features that must hold under the unit (jobs
# that survive a restart: systemd.d/jobs.sh): every tests/platform/systemd.d/*.sh, and
# each file MAFSBX_SYSTEMD_HOOKS names (colon-separated), is sourced before
# the checks; it registers functions with `systemd_hook PHASE FUNCTION`,
# PHASE one of started, before-restart, after-restart. A hook runs on the
# host with: $ctr (the container), $mnt (the mount point in it), $unit,
# $scope (the mount's scope: every container of it is removed at the end),
# $sbx (the sandbox acquired through the mount), `inside CMD...` (docker
# exec), `check NAME STATUS WHY` (STATUS 0 passes) and `main_pid`.
#
# Prints "systemd: N passed, N failed, N skipped" last; exits 1 on any
# failure. --images-only makes (or finds) the image and stops.
set -uo pipefail
PROG=systemd
# shellcheck source=tests/platform/lib.sh
. "$(dirname "$0")/lib.sh"
arg=${1:?usage: systemd.sh --images-only | BUILD_DIR}
if [ "$arg" = --images-only ]; then
	platform_start --images-only docker debootstrap sha256sum flock
else
	platform_start -- docker debootstrap sha256sum flock
	BUILD=$(cd "$arg" && pwd) || die "no build directory $arg"
	for b in fs/mafsbxfs tools/mafsbx contrib/mafsbxfs@.service; do
		[ -e "$BUILD/$b" ] || die "$BUILD/$b is not built"
	done
fi
[ -c /dev/fuse ] || die "/dev/fuse is missing"
docker version >/dev/null 2>&1 || die "the host's engine does not answer"
# the engine's socket, bind-mounted into the container for the daemon
sock=${DOCKER_HOST:-unix:///var/run/docker.sock}
case "$sock" in
unix://*) sock=${sock#unix://} ;;
*) die "the engine is not a unix socket ($sock): the container cannot reach it" ;;
esac

t0=$SECONDS
base=mafsbx-platform/debian12:base
# systemd, fusermount3, and the libraries the daemon and the CLI link
packages=(systemd fuse3 libfuse3-3 libcurl4 libjansson4 libarchive13)
key=$(printf '%s\n' "$mirror" "${packages[@]}" | sha256sum | cut -c1-16)
image=mafsbx-platform/debian12:systemd-$key
ctr=mafsbx-systemd-$$
scope=mafsbxtest-systemd-$$
mnt=/srv/sandboxes
unit=mafsbxfs@srv-sandboxes.service
sbx=
cleanup() {
	docker rm -f "$ctr" "$ctr-setup" >/dev/null 2>&1 || true
	docker ps -aq --filter "label=maf-sandbox.scope=$scope" | xargs -r docker rm -f >/dev/null 2>&1 || true
	return 0
}
trap cleanup EXIT

(
	flock 9
	minbase_image bookworm debian12 "$base"
	if ! docker image inspect "$image" >/dev/null 2>&1; then
		log "installing ${packages[*]} into $image (once)"
		docker rm -f "$ctr-setup" >/dev/null 2>&1 || true
		docker run --name "$ctr-setup" "$base" bash -c 'apt-get update -q &&
			DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" && apt-get clean' \
			sh "${packages[@]}" >"$cache/systemd-image.log" 2>&1 ||
			{ tail -n 30 "$cache/systemd-image.log" >&2; die "installing the packages failed"; }
		docker commit "$ctr-setup" "$image" >/dev/null || die "docker commit"
		docker rm -f "$ctr-setup" >/dev/null
	fi
) 9>"$cache/.lock-debian12" || exit 1
log "image ready after $((SECONDS - t0)) s ($image)"
[ "$images_only" = 0 ] || exit 0

passed=0 failed=0
check() { # check NAME STATUS WHY
	if [ "$2" = 0 ]; then
		passed=$((passed + 1))
		log "ok: $1"
	else
		failed=$((failed + 1))
		log "FAIL: $1: $3"
	fi
}
finish() {
	echo "systemd: $passed passed, $failed failed, 0 skipped"
	log "the systemd stage took $((SECONDS - t0)) s"
	[ "$failed" = 0 ]
	exit
}
inside() { docker exec "$ctr" "$@"; }
main_pid() { inside systemctl show -p MainPID --value "$unit"; }

declare -A hooks=([started]="" [before-restart]="" [after-restart]="")
systemd_hook() { # systemd_hook PHASE FUNCTION
	[ -n "${hooks[$1]+set}" ] || die "systemd_hook: unknown phase '$1' (started, before-restart, after-restart)"
	hooks[$1]+=" $2"
}
run_hooks() {
	local f
	for f in ${hooks[$1]}; do
		"$f" || check "hook $f ($1)" 1 "returned non-zero"
	done
}
for f in "$here"/systemd.d/*.sh; do
	[ -e "$f" ] || continue
	# shellcheck source=/dev/null
	. "$f"
done
IFS=: read -r -a extra <<<"${MAFSBX_SYSTEMD_HOOKS:-}"
for f in "${extra[@]}"; do
	# shellcheck source=/dev/null
	[ -n "$f" ] && { . "$f" || die "cannot source the hook file $f"; }
done

# shellcheck source=tests/platform/systemd-checks.sh
. "$here/systemd-checks.sh"
boot_systemd
unit_checks
finish
