#!/usr/bin/env bash
# contrib/setup.sh: make a Debian 12 machine ready to build, test and run
# mafsbxfs. Run as root; idempotent, and quick on a machine that is ready.
#
#   1. install the Debian packages that are missing (none missing: no apt at all)
#   2. start dockerd when no engine answers (contrib/start-dockerd.sh)
#   3. build into build/ with gcc (meson setup + compile, warnings as errors)
#   4. import the offline test image (mafsbx/busybox:latest, or $MAFSBX_IMAGE)
#      with `build/tools/mafsbx mkimage` when the engine lacks it
set -euo pipefail
PROG=setup
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
. "$here/lib.sh"
require_root

packages=(
	# build
	meson ninja-build pkg-config gcc clang
	libfuse3-dev libarchive-dev libjansson-dev libcurl4-openssl-dev libcmocka-dev libssl-dev
	# run and test
	fuse3 docker.io busybox-static iptables iproute2 docker-registry curl openssl socat
	# remote-engine tests (tests/remote): a private sshd for ssh:// endpoints
	openssh-server
	# man pages (tests/packaging renders them)
	man-db groff-base
	# a mount story under memcheck (suite valgrind)
	valgrind
	# the Python client's type check (tests/python: python-typecheck)
	mypy
	# the Debian package (suite packaging: dpkg-buildpackage, lintian, and a
	# Debian 12 root filesystem made with debootstrap to install it on)
	dpkg-dev debhelper dh-python python3 lintian debootstrap
)

missing=()
for p in "${packages[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -qx 'install ok installed'; then
		missing+=("$p")
	fi
done
if ((${#missing[@]})); then
	log "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	apt-get install -y -q --no-install-recommends "${missing[@]}"
else
	log "all ${#packages[@]} packages present"
fi

"$here/start-dockerd.sh"

cd "$root"
if [ ! -f build/build.ninja ]; then
	log "configuring build/ (gcc, warnings as errors)"
	CC=gcc meson setup build -Dwerror=true
fi
log "building build/"
meson compile -C build

if image_present "$MAFSBX_IMAGE"; then
	log "image $MAFSBX_IMAGE present"
else
	rc=$?
	[ "$rc" -eq 1 ] || die "cannot tell whether $MAFSBX_IMAGE exists (engine at $(engine_url))"
	log "importing the offline test image $MAFSBX_IMAGE"
	id=$(build/tools/mafsbx mkimage --tag "$MAFSBX_IMAGE" -H "$(engine_url)") || die "mafsbx mkimage failed"
	log "image $MAFSBX_IMAGE is $id"
fi
