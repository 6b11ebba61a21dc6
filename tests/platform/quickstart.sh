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
#
# The packages are installed anew on every run: that is what is tested.
# --images-only makes (or finds) the base image and stops. The last line is
# "quickstart: N passed, N failed, N skipped".
set -euo pipefail
PROG=quickstart
# shellcheck source=tests/platform/lib.sh
. "$(dirname "$0")/lib.sh"
platform_start "${1:---}" docker debootstrap flock
[ -c /dev/fuse ] || die "/dev/fuse is missing"
docker version >/dev/null 2>&1 || die "the host's engine does not answer"

t0=$SECONDS
base=mafsbx-platform/debian12:base
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
) 9>"$cache/.lock-debian12"
log "image ready after $((SECONDS - t0)) s ($base)"
[ "$images_only" = 0 ] || exit 0

data=$(mktemp -d /var/tmp/mafsbx-quickstart-docker.XXXXXX)
nested_engine_run "$ctr" "$base" "$data"
rc=0
docker exec "$ctr" bash /mnt/src/tests/platform/quickstart-inside.sh || rc=$?
log "the quick-start stage finished with status $rc after $((SECONDS - t0)) s"
exit "$rc"
