# tests/platform/lib.sh: what tests/platform/debian13.sh and cgroupv2.sh
# share, sourced by both once PROG is set: the tree's root, log and die, their
# one argument, the tools they need, the cache and the name of the Debian 13
# setup image. cgroupv2.sh makes the VM's disk from the image debian13.sh
# makes, so the two must name it the same way: setup_image_name is that name.
# shellcheck shell=bash
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)
log() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { log "error: $*"; exit 1; }

cache=${MAFSBX_PLATFORM_CACHE:-/var/cache/mafsbx}
mirror=${MAFSBX_DEBIAN_MIRROR:-http://deb.debian.org/debian}

# platform_start [--images-only] TOOL...: the script's argument (images_only
# is 1 with --images-only), root, and every TOOL on PATH; dies naming what is
# wrong. Makes the cache folder.
platform_start() {
	images_only=0
	case "${1:-}" in
	--images-only) images_only=1 ;;
	--) ;;
	*) die "unknown argument '$1' (only --images-only)" ;;
	esac
	shift
	[ "$(id -u)" = 0 ] || die "must run as root"
	local t
	for t in "$@"; do
		command -v "$t" >/dev/null || die "$t is not installed (contrib/setup.sh installs it)"
	done
	mkdir -p "$cache"
}

# setup_image_name: mafsbx-platform/debian13:setup-KEY, KEY a hash of the
# mirror and of the packages contrib/setup.sh installs on trixie.
setup_image_name() {
	local key
	key=$( { echo "$mirror"; MAFSBX_SETUP_RELEASE=trixie "$src/contrib/setup.sh" --print-packages; } |
		sha256sum | cut -c1-16)
	echo "mafsbx-platform/debian13:setup-$key"
}
