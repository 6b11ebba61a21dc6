#!/usr/bin/env bash
# tests/platform/debian13.sh: the tests on a fresh Debian 13 (trixie) system:
# docker.io 26, containerd 1.7, runc 1.1, libfuse 3.17 (FUSE passthrough).
# Run as root on the host; needs the host's engine, debootstrap and
# /dev/fuse.
#
#   1. base image mafsbx-platform/debian13:base: `debootstrap --variant=minbase
#      trixie` into a tarball under $MAFSBX_PLATFORM_CACHE (/var/cache/mafsbx),
#      imported into the host's engine; made once, reused
#   2. setup image mafsbx-platform/debian13:setup-KEY: the base with the
#      packages of `contrib/setup.sh --packages-only` installed (KEY: a hash
#      of that package list), committed once, reused
#   3. a container of it on the host's engine with /dev/fuse and its own
#      dockerd. These VMs refuse --privileged, so it gets what a nested engine
#      needs one by one: every capability, no seccomp or AppArmor profile,
#      unmasked /proc and /sys (runc mounts a fresh procfs, which the kernel
#      refuses while parts of the outer one are masked), the host's cgroup
#      hierarchies writable, and /var/lib/docker on the host's filesystem
#      (overlay2 cannot stack on the container's own overlay)
#   4. inside, tests/platform/inside.sh: contrib/setup.sh (packages present,
#      dockerd 26 started, build/, the offline image), then the tests with
#      MAFSBX_REQUIRE_ENGINE=1
#
# MAFSBX_PLATFORM_KEEP=1 leaves the container (and its engine) running, for
# another run with docker exec. MAFSBX_PLATFORM_TESTS=full runs every unit, integration and mount test;
# the default (ci) runs what proves the platform within CI's budget: the unit
# suite, the integration tests that failed on Docker 26 and the freeze proof,
# and the mount suites story, files, access, files-engine, badinput and
# passthrough. Exits with the inside run's status; prints its closing line.
# --images-only makes (or finds) the two images and stops: contrib/test.sh
# runs that in the background while the host's own suites run, since most
# of it waits on the Debian mirror.
set -euo pipefail
PROG=debian13
# shellcheck source=tests/platform/lib.sh
. "$(dirname "$0")/lib.sh"
platform_start "${1:---}" docker debootstrap sha256sum flock
[ -c /dev/fuse ] || die "/dev/fuse is missing"
docker version >/dev/null 2>&1 || die "the host's engine does not answer"

tests=${MAFSBX_PLATFORM_TESTS:-ci}
t0=$SECONDS

base=mafsbx-platform/debian13:base
setup_image=$(setup_image_name)
ctr=mafsbx-debian13-$$
data=
cleanup() {
	if [ "${MAFSBX_PLATFORM_KEEP:-0}" = 1 ] && docker inspect "$ctr" >/dev/null 2>&1; then
		log "kept: container $ctr, its engine's data in $data (docker exec $ctr bash /mnt/src/tests/platform/inside.sh)"
		return 0
	fi
	# the nested engine's containers first: it removes their cgroups, which
	# live in the host's hierarchies
	timeout 120 docker exec "$ctr" sh -c 'docker ps -aq | xargs -r docker rm -f' >/dev/null 2>&1 || true
	docker rm -f "$ctr" >/dev/null 2>&1 || true
	# the nested engine's layers are root-owned files of the host's filesystem
	[ -n "$data" ] && rm -rf "$data"
	return 0
}
trap cleanup EXIT

(
	flock 9
	minbase_image trixie debian13 "$base"
	make_setup_image "$base" "$setup_image"
) 9>"$cache/.lock-debian13"
log "images ready after $((SECONDS - t0)) s ($setup_image)"
[ "$images_only" = 0 ] || exit 0

# The nested engine's data root on the host's filesystem, new for each run.
data=$(mktemp -d /var/tmp/mafsbx-debian13-docker.XXXXXX)
nested_engine_run "$ctr" "$setup_image" "$data"

rc=0
docker exec -e MAFSBX_PLATFORM_TESTS="$tests" "$ctr" bash /mnt/src/tests/platform/inside.sh || rc=$?
log "Debian 13 stage ($tests) finished with status $rc after $((SECONDS - t0)) s"
exit "$rc"
