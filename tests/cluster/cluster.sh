#!/usr/bin/env bash
# tests/cluster/cluster.sh [--images-only | --check-only] [TEST...]: the
# cluster stage. One mount on the host over a real three-node Docker Swarm
# (tests/cluster/lib.sh: three dockerd 26.1 nodes in containers of the Debian
# 13 setup image, three managers, each node's engine labelled on its node),
# then the cluster tests (tests/cluster/*.sh but the libraries, or the TESTs
# named), each on the same swarm, in the order given: the fault test kills a
# node, so it runs last. Run as root on the host from the built tree (BUILD,
# default build/: its mafsbxfs, mafsbxfs-test, mafsbx and mfs_tool).
#
# --images-only makes (or finds) the Debian 13 setup image the nodes run
# (tests/platform/debian13.sh --images-only, cached) and stops.
# --check-only brings the swarm up, checks it (three ready managers, each
# labelled with an engine the host reaches that names that node, runs with
# no-new-privileges and holds the test image) and takes it down: the harness
# alone, with no mafsbxfs.
# The self-check runs first in every run and counts as a test.
# MAFSBX_CLUSTER_KEEP=1 leaves the swarm up (its state in DIR/cluster.env).
# Prints the bring-up's time and ends with "cluster: N passed, N failed,
# N skipped" (contrib/test.sh's platform_stage reads that line).
set -euo pipefail
PROG=cluster
# shellcheck source=tests/platform/lib.sh
. "$(dirname "$0")/../platform/lib.sh"
# shellcheck source=tests/cluster/lib.sh
. "$here/../cluster/lib.sh"
mode=run
case "${1:-}" in
--images-only) mode=images; shift ;;
--check-only) mode=check; shift ;;
esac
platform_start -- docker sha256sum flock
t0=$SECONDS
image=$(setup_image_name)
if ! docker image inspect "$image" >/dev/null 2>&1; then
	"$here/debian13.sh" --images-only || die "cannot make $image"
fi
[ "$mode" != images ] || exit 0

if [ "$mode" = run ]; then
	BUILD=$(cd "${BUILD:-$src/build}" && pwd) || die "no build folder"
	for b in fs/mafsbxfs fs/mafsbxfs-test tools/mafsbx tests/mount/mfs_tool; do
		[ -x "$BUILD/$b" ] || die "$BUILD/$b is not built"
	done
fi
tests=("$@")
# Each test's bound: a hung one fails (its exit trap still cleans up) and the
# stage goes on. Generous: the machine runs at load 10+.
test_timeout=${MAFSBX_CLUSTER_TEST_TIMEOUT:-600}
[ ${#tests[@]} -gt 0 ] || tests=(spread onekey spool freezes faults)

dir=$(mktemp -d /var/tmp/mafsbx-cluster.XXXXXX)
finish() {
	if [ "${MAFSBX_CLUSTER_KEEP:-0}" = 1 ]; then
		log "kept: the swarm ($(cluster_env_file)); tests/cluster/cluster.sh's cluster_down removes it"
		return 0
	fi
	local s=$SECONDS
	cluster_down
	log "cluster down in $((SECONDS - s)) s"
}
trap finish EXIT
trap 'exit 130' INT TERM

s=$SECONDS
cluster_up "$dir" "$image"
cluster_check
cluster_env
log "bring-up and self-check: $((SECONDS - s)) s"
pass=1 failed=0 names=()
if [ "$mode" = run ]; then
	for t in "${tests[@]}"; do
		s=$SECONDS rc=0
		MAFSBX_CLUSTER_ENV=$(cluster_env_file) MAFSBX_REQUIRE_ENGINE=1 \
			MAFSBXFS=$BUILD/fs/mafsbxfs MAFSBXFS_TEST=$BUILD/fs/mafsbxfs-test MAFSBX_CLI=$BUILD/tools/mafsbx MFS_TOOL=$BUILD/tests/mount/mfs_tool \
			timeout -k 30 "$test_timeout" bash "$here/../cluster/$t.sh" || rc=$?
		if [ "$rc" = 0 ]; then
			pass=$((pass + 1))
			log "$t: passed in $((SECONDS - s)) s"
		else
			failed=$((failed + 1)) names+=("$t")
			log "$t: FAILED (exit $rc) after $((SECONDS - s)) s"
		fi
	done
fi
log "stage took $((SECONDS - t0)) s${names:+; failed: ${names[*]}}"
echo "cluster: $pass passed, $failed failed, 0 skipped"
[ "$failed" = 0 ]
