# tests/platform/lib.sh: what tests/platform/debian13.sh, cgroupv2.sh and
# quickstart.sh share, sourced once PROG is set: the tree's root, log and die,
# their one argument, the tools they need, the cache, a minimal Debian image
# (minbase_image), a container with an engine of its own (nested_engine_run)
# and the names of the setup images (setup_image_name) and how one is made
# (make_setup_image). cgroupv2.sh makes the VM's disk
# from the image debian13.sh makes, so the two must name it the same way:
# setup_image_name is that name.
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

# setup_image_name [RELEASE]: mafsbx-platform/debian13:setup-KEY (trixie,
# the default) or mafsbx-platform/debian12:setup-KEY (bookworm), KEY a hash
# of the mirror and of the packages contrib/setup.sh installs on RELEASE.
setup_image_name() {
	local release=${1:-trixie} key
	key=$( { echo "$mirror"; MAFSBX_SETUP_RELEASE=$release "$src/contrib/setup.sh" --print-packages; } |
		sha256sum | cut -c1-16)
	case "$release" in
	trixie) echo "mafsbx-platform/debian13:setup-$key" ;;
	bookworm) echo "mafsbx-platform/debian12:setup-$key" ;;
	*) die "setup_image_name: no image for release '$release'" ;;
	esac
}

# make_setup_image BASE IMAGE: IMAGE on the host's engine, BASE (a minbase image)
# with the packages of `contrib/setup.sh --packages-only` (the test set,
# --no-install-recommends) installed, committed once. Call it under the
# cache's lock of the stage.
make_setup_image() {
	local base=$1 image=$2 tmp=mafsbx-setup-$$ s=$SECONDS logf=$cache/setup-image-${2##*/}.log
	docker image inspect "$image" >/dev/null 2>&1 && return 0
	log "installing contrib/setup.sh's packages into $image (once)"
	docker rm -f "$tmp" >/dev/null 2>&1 || true
	docker run --name "$tmp" -v "$src/contrib:/mnt/contrib:ro" "$base" \
		bash -c 'apt-get update -q && /mnt/contrib/setup.sh --packages-only && apt-get clean' >"$logf" 2>&1 ||
		{ tail -n 40 "$logf" >&2; docker rm -f "$tmp" >/dev/null 2>&1; die "installing the packages failed"; }
	docker commit "$tmp" "$image" >/dev/null || die "docker commit"
	docker rm -f "$tmp" >/dev/null
	log "the packages took $((SECONDS - s)) s"
}

# minbase_image RELEASE NAME IMAGE: IMAGE on the host's engine, imported from
# `debootstrap --variant=minbase RELEASE` (the tarball cached as
# $cache/NAME-minbase.tar, so only the first run waits on the mirror).
# Call it under the cache's lock of the stage.
minbase_image() {
	local release=$1 image=$3 tarball=$cache/$2-minbase.tar root=$cache/$2-root.partial s
	docker image inspect "$image" >/dev/null 2>&1 && return 0
	if [ ! -s "$tarball" ]; then
		rm -rf "$root"
		log "debootstrap --variant=minbase $release from $mirror (once)"
		s=$SECONDS
		debootstrap --variant=minbase "$release" "$root" "$mirror" >"$cache/debootstrap-$release.log" 2>&1 ||
			{ tail -n 30 "$cache/debootstrap-$release.log" >&2; rm -rf "$root"; die "debootstrap failed"; }
		rm -rf "$root"/var/cache/apt/archives/*.deb
		tar -C "$root" --numeric-owner -cf "$tarball.partial" . && mv "$tarball.partial" "$tarball" ||
			die "cannot write $tarball"
		rm -rf "$root"
		log "debootstrap took $((SECONDS - s)) s"
	fi
	docker import "$tarball" "$image" >/dev/null || die "docker import $tarball"
}

# nested_engine_run NAME IMAGE DATA [OPTION...]: start container NAME of IMAGE (running
# `sleep infinity`) able to run a dockerd of its own in its own network
# namespace, with /dev/fuse, the tree read-only at /mnt/src and DATA (a
# folder of the host's filesystem) as its /var/lib/docker. These VMs refuse
# --privileged, so it gets what a nested engine needs one by one: every
# capability the bounding set holds (these VMs lack CAP_SYS_RESOURCE, and
# runc refuses to start a container asking for one it cannot have), no
# seccomp or AppArmor profile, unmasked /proc and /sys (runc mounts a fresh
# procfs, which the kernel refuses while parts of the outer one are masked),
# the host's cgroup hierarchies writable, and /var/lib/docker on the host's
# filesystem (overlay2 cannot stack on the container's own overlay). Each
# OPTION goes to `docker run` as it is (the cluster's nodes: their network,
# hostname and log folder).
nested_engine_run() {
	local name=$1 image=$2 data=$3 bnd i
	shift 3
	local caps=(--cap-add ALL)
	bnd=$((16#$(awk '/^CapBnd:/ { print $2 }' /proc/self/status)))
	local capnames=(CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP LINUX_IMMUTABLE
		NET_BIND_SERVICE NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK IPC_OWNER SYS_MODULE SYS_RAWIO SYS_CHROOT
		SYS_PTRACE SYS_PACCT SYS_ADMIN SYS_BOOT SYS_NICE SYS_RESOURCE SYS_TIME SYS_TTY_CONFIG MKNOD LEASE
		AUDIT_WRITE AUDIT_CONTROL SETFCAP MAC_OVERRIDE MAC_ADMIN SYSLOG WAKE_ALARM BLOCK_SUSPEND AUDIT_READ
		PERFMON BPF CHECKPOINT_RESTORE)
	for i in "${!capnames[@]}"; do
		(((bnd >> i) & 1)) || caps+=(--cap-drop "${capnames[$i]}")
	done
	log "capabilities: ${caps[*]}"
	docker run -d --name "$name" \
		"${caps[@]}" \
		--security-opt seccomp=unconfined --security-opt apparmor=unconfined \
		--security-opt systempaths=unconfined \
		--device /dev/fuse \
		--cgroupns host -v /sys/fs/cgroup:/sys/fs/cgroup:rw \
		-v "$data:/var/lib/docker" \
		--tmpfs /run:exec \
		-v "$src:/mnt/src:ro" \
		"$@" "$image" sleep infinity >/dev/null || die "cannot start a container of $image"
}
