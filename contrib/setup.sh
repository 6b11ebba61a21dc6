#!/usr/bin/env bash
# contrib/setup.sh: make a Debian 12 (bookworm) or Debian 13 (trixie) machine
# ready to build, test and run mafsbxfs. Run as root; idempotent, and quick on
# a machine that is ready.
#
#   contrib/setup.sh [--set run|test] [--print-packages | --packages-only]
#
#   --set run     what building and running the mount need, and nothing else
#                 (contrib/quickstart.sh): the compiler, meson, the libraries,
#                 fuse3, the engine, busybox-static for the offline image;
#                 no service but dockerd is started
#   --set test    (the default) that and everything the test run calls
#                 (contrib/test.sh, the platform stages): clang and its
#                 fuzzer runtime, cmocka, valgrind, an sshd for the ssh://
#                 tests (Debian starts it on install), a registry, podman,
#                 rootless Docker, qemu, the packaging tools ...
#   --print-packages   print the set's package list for this release, one a
#                      line, and stop (needs no root)
#   --packages-only    step 1 only
#
#   1. install the Debian packages of the set that are missing (none
#      missing: no apt at all), with --no-install-recommends, so a minimal
#      system (debootstrap --variant=minbase) gets exactly what is listed;
#      the list depends on the release (/etc/os-release): Debian 13
#      ships the docker client as its own package, docker-cli, no longer
#      inside docker.io
#   2. start dockerd when no engine answers (contrib/start-dockerd.sh)
#   3. build into build/ with gcc (meson setup + compile, warnings as errors;
#      with --set run, without the tests: -Dtests=false, so no cmocka)
#   4. import the offline test image (mafsbx/busybox:latest, or $MAFSBX_IMAGE)
#      with `build/tools/mafsbx mkimage` when the engine lacks it
set -euo pipefail
PROG=setup
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
. "$here/lib.sh"

usage="usage: $0 [--set run|test] [--print-packages | --packages-only]"
mode=all set=test
while (($#)); do
	case "$1" in
	--print-packages) mode=print ;;
	--packages-only) mode=packages ;;
	--set)
		[ $# -ge 2 ] || die "--set needs 'run' or 'test' ($usage)"
		case "$2" in run | test) set=$2 ;; *) die "--set '$2': not 'run' or 'test' ($usage)" ;; esac
		shift
		;;
	*) die "unknown argument '$1' ($usage)" ;;
	esac
	shift
done

# The release's codename, from /etc/os-release (MAFSBX_SETUP_RELEASE overrides
# it, for --print-packages about another release).
release=${MAFSBX_SETUP_RELEASE:-}
if [ -z "$release" ] && [ -r /etc/os-release ]; then
	release=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
fi
case "$release" in
bookworm | trixie) ;;
"") die "cannot tell the Debian release (no VERSION_CODENAME in /etc/os-release); set MAFSBX_SETUP_RELEASE=bookworm or trixie" ;;
*) die "release '$release' is not one this script knows (bookworm, trixie); set MAFSBX_SETUP_RELEASE to the nearest" ;;
esac

# --set run: what building and running the mount need. libc6-dev is only a
# Recommends of gcc; curl is what start-dockerd.sh asks the engine with.
packages=(
	meson ninja-build pkg-config gcc libc6-dev
	libfuse3-dev libarchive-dev libjansson-dev libcurl4-openssl-dev libssl-dev
	fuse3 docker.io busybox-static curl
)
# Debian 13 split the docker client out of docker.io; without docker-cli the
# mount tests that drive the docker CLI fail with "the docker CLI is missing".
[ "$release" = trixie ] && packages+=(docker-cli)

# --set test: the rest, everything a test script calls, so that a minimal
# system passes too (this machine's image happening to have a package is no
# reason to leave it out).
test_packages=(
	# build: clang's libFuzzer and sanitizer runtimes are only a Recommends
	# of clang; dpkg-checkbuilddeps wants build-essential
	clang build-essential libcmocka-dev
	# run and test
	iptables iproute2 docker-registry openssl socat python3 procps time
	# remote-engine tests (tests/remote): a private sshd for ssh:// endpoints
	openssh-server
	# man pages (tests/packaging renders them)
	man-db groff-base
	# a mount story under memcheck (suite valgrind)
	valgrind
	# the Python client's type check (tests/python: python-typecheck)
	mypy
	# its offline venv install (tests/python: python-install): ensurepip's
	# wheels, and the build backend pip uses with --no-build-isolation
	python3-venv python3-setuptools python3-wheel
	# upstream's live suite through mafsbx.maf (tests/python: python-maf-upstream-e2e)
	python3-pytest
	# the Debian package (suite packaging: dpkg-buildpackage, lintian, and a
	# Debian 12 root filesystem made with debootstrap to install it on)
	dpkg-dev debhelper dh-python lintian debootstrap
	# the Podman stage (tests/platform/podman.sh: a rootful service on its own socket)
	podman
	# the rootless Docker stage (tests/platform/rootless.sh: dockerd-rootless.sh,
	# which docker.io ships, needs these)
	rootlesskit slirp4netns uidmap
)
case "$release" in
# The cgroup v2 stage's VM (tests/platform/cgroupv2.sh) runs on the CI host
# (Debian 12), not in the Debian 13 image it boots; the fuzzers (contrib/fuzz.sh) too.
bookworm) test_packages+=(qemu-system-x86 libclang-rt-14-dev) ;;
trixie) test_packages+=(libclang-rt-19-dev) ;;
esac
[ "$set" = test ] && packages+=("${test_packages[@]}")

if [ "$mode" = print ]; then
	printf '%s\n' "${packages[@]}"
	exit 0
fi
require_root

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
	log "all ${#packages[@]} packages present ($release)"
fi
[ "$mode" = packages ] && exit 0

"$here/start-dockerd.sh"

cd "$root"
if [ ! -f build/build.ninja ]; then
	tests=true
	[ "$set" = run ] && tests=false
	log "configuring build/ (gcc, warnings as errors, tests $tests)"
	CC=gcc meson setup build -Dwerror=true -Dtests=$tests
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
