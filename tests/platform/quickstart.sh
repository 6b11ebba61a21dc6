#!/usr/bin/env bash
# tests/platform/quickstart.sh: README's first command on a fresh Debian 12,
# as a new user runs it. Run as root on the host; needs the host's engine,
# debootstrap and /dev/fuse.
#
#   1. base image mafsbx-platform/debian12:base: `debootstrap
#      --variant=minbase bookworm` (cached under $MAFSBX_PLATFORM_CACHE,
#      /var/cache/mafsbx), imported once; nothing else installed in it
#   2. a container of it that can run an engine of its own
#      (nested_engine_run, lib.sh)
#   3. inside, tests/platform/quickstart-inside.sh: a copy of the tree,
#      `contrib/quickstart.sh` (its packages from the mirror, dockerd, the
#      build, the image, a sandbox through the mount), then its checks:
#      it printed the file the sandbox wrote, it installed no package outside
#      `contrib/setup.sh --print-packages --set run`, and no service but the
#      engine's runs afterwards
#   4. the test set on the same minimal Debian 12: a container of
#      mafsbx-platform/debian12:setup-KEY (the base image with the packages
#      of `contrib/setup.sh --set test --packages-only`, made once:
#      make_setup_image, lib.sh) runs tests/platform/toolchain.sh on a copy
#      of the tree: the builds of contrib/test.sh configured and compiled
#      ($MAFSBX_D12_BUILDS), `dpkg-buildpackage` past dpkg-checkbuilddeps,
#      every program the test scripts call found
#
# The run set's packages are installed anew on every run: that is what is
# tested. --images-only makes (or finds) both images and stops. The last
# line is "quickstart: N passed, N failed, N skipped", both parts' sums.
set -euo pipefail
PROG=quickstart
# shellcheck source=tests/platform/lib.sh
. "$(dirname "$0")/lib.sh"
platform_start "${1:---}" docker debootstrap flock
[ -c /dev/fuse ] || die "/dev/fuse is missing"
docker version >/dev/null 2>&1 || die "the host's engine does not answer"

t0=$SECONDS
base=mafsbx-platform/debian12:base
setup_image=$(setup_image_name bookworm)
ctr=mafsbx-quickstart-$$
data=
cleanup() {
	timeout 120 docker exec "$ctr" sh -c 'docker ps -aq | xargs -r docker rm -f' >/dev/null 2>&1 || true
	docker rm -f "$ctr" >/dev/null 2>&1 || true
	[ -n "$data" ] && rm -rf "$data"
	return 0
}
trap cleanup EXIT

(
	flock 9
	minbase_image bookworm debian12 "$base"
	make_setup_image "$base" "$setup_image"
) 9>"$cache/.lock-debian12" || exit 1
log "images ready after $((SECONDS - t0)) s ($base, $setup_image)"
[ "$images_only" = 0 ] || exit 0

data=$(mktemp -d /var/tmp/mafsbx-quickstart-docker.XXXXXX)
nested_engine_run "$ctr" "$base" "$data"
rc=0
out=$(mktemp)
docker exec "$ctr" bash /mnt/src/tests/platform/quickstart-inside.sh | tee "$out" || rc=$?
log "the quick start finished with status $rc after $((SECONDS - t0)) s"

t1=$SECONDS
docker run --rm --name "$ctr-toolchain" -v "$src:/mnt/src:ro" "$setup_image" bash -c '
	mkdir /root/tree && tar -C /mnt/src --exclude="./build*" --exclude=./.git -cf - . | tar -C /root/tree -xf - &&
	cd /root/tree && exec bash tests/platform/toolchain.sh debian12 "$@"' sh ${MAFSBX_D12_BUILDS-gcc clang fuzz} |
	tee -a "$out" || rc=1
log "the test set on Debian 12 took $((SECONDS - t1)) s"
# both parts' lines "NAME: N passed, N failed, N skipped", summed
sum=$(grep -E '^(quickstart|debian12): [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$out" |
	awk '{ p += $2; f += $4; s += $6; n++ } END { if (n == 2) print p, f, s }')
rm -f "$out"
if [ -z "$sum" ]; then
	log "a part printed no result line"
	echo "quickstart: 0 passed, 1 failed, 0 skipped"
	exit 1
fi
read -r p f s <<<"$sum"
echo "quickstart: $p passed, $f failed, $s skipped"
log "the quick-start stage finished with status $rc after $((SECONDS - t0)) s"
exit "$rc"
