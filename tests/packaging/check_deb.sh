#!/usr/bin/env bash
# check_deb.sh SOURCE_ROOT MAFSBX: the Debian packages (mafsbxfs and
# python3-mafsbx), built and installed on a fresh Debian 12 container, and a
# mount made with them.
#
#  1. `dpkg-buildpackage -us -uc -b` on a copy of the source tree (the tree
#     itself is left as it is), then lintian over both: no error or warning
#     that is not overridden in debian/ (the findings are printed either way).
#  2. mafsbxfs's contents: both programs, both man pages, the three
#     systemd units, the cron.d and fstab examples, the egress proxy under
#     /usr/libexec/mafsbx, the bash completion, no Python module;
#     python3-mafsbx's: every file of contrib/python/mafsbx, byte for byte,
#     under /usr/lib/python3/dist-packages/mafsbx, and the pyproject's
#     metadata (mafsbx-VERSION.dist-info); both of one version; maintainer
#     scripts that enable or start nothing.
#  3. A fresh container of a minimal Debian 12 (debootstrap --variant=minbase
#     bookworm from the Debian mirror, with the package's dependencies; the
#     root filesystem is cached as a tarball in $MAFSBX_CI_CACHE, default
#     /var/cache/mafsbx-ci, and as an image on the engine, both keyed by what
#     went into them, so only the first run pays for it): `dpkg -i` installs
#     the package with no network and no apt; nothing runs or is enabled
#     afterwards; --version answers; the completion parses; python3 imports
#     mafsbx from /usr/lib/python3/dist-packages and importlib.metadata gives
#     it the daemon's version (mafsbx --version).
# The client's own suite (tests/python/test_client.py) runs against an
# installed package in the test python-install: a venv install made by pip
# from the same pyproject with the same setuptools backend. Here step 2
# requires the deb's modules to be those very files, so that run covers the
# deb's code too; running the suite in this container instead would need a
# docker CLI in it and the engine plane only (it cannot see the engine's
# processes), for the same bytes.
#  4. In the container (/dev/fuse and CAP_SYS_ADMIN, the host's engine socket
#     bind-mounted): the installed mafsbxfs mounts with -o plane=engine (the
#     container cannot see the engine's processes), an acquire through the
#     mount, a file written through it and read back, an exec, a dispose,
#     an unmount after which the daemon is gone.
# Skips (77) when a tool is missing, unless MAFSBX_REQUIRE_ENGINE=1 (CI),
# where that fails. Everything made here is removed at the end, except the
# cached root filesystem and its image.
set -u
src=$(cd "$1" && pwd)
cli=$2
export LC_ALL=C.UTF-8
PROG=check_deb
log() { printf '%s: %s\n' "$PROG" "$*" >&2; }
fail() { log "FAIL: $*"; exit 1; }
skip() {
	[ "${MAFSBX_REQUIRE_ENGINE:-0}" = 1 ] && fail "$* (MAFSBX_REQUIRE_ENGINE=1)"
	log "SKIP: $*"
	exit 77
}

[ "$(id -u)" = 0 ] || skip "needs root (debootstrap, docker, a mount in a container)"
for t in dpkg-buildpackage dh lintian debootstrap docker; do
	command -v "$t" >/dev/null 2>&1 || skip "$t is missing (contrib/setup.sh installs it)"
done
[ -c /dev/fuse ] || skip "no /dev/fuse"
sock=${DOCKER_HOST:-unix:///var/run/docker.sock}
case "$sock" in
unix://*) sock=${sock#unix://} ;;
*) skip "the engine is not a unix socket ($sock): the container cannot reach it" ;;
esac
docker -H "unix://$sock" version >/dev/null 2>&1 || skip "no engine answers at $sock"
dk() { docker -H "unix://$sock" "$@"; }

work=$(mktemp -d "${TMPDIR:-/tmp}/mafsbx-deb.XXXXXX") || exit 1
ctr=mafsbxtest-deb-$$-$RANDOM
scope=mafsbxtest-deb-$$-$RANDOM
cleanup() {
	dk rm -f "$ctr" >/dev/null 2>&1
	"$cli" dispose --scope "$scope" --thread t >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

# ---- 1. build and lintian ------------------------------------------------
log "building the package"
mkdir "$work/src"
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
	# tracked files and new ones not ignored: what a commit of this tree would hold
	(cd "$src" && git ls-files -z --cached --others --exclude-standard |
		xargs -0 cp --parents -t "$work/src" 2>/dev/null)
else
	tar -C "$src" --exclude='./build*' --exclude=./debian/.debhelper -cf - . | tar -C "$work/src" -xf -
fi
[ -f "$work/src/debian/control" ] || fail "no debian/control in $src"
t0=$(date +%s)
if ! (cd "$work/src" && dpkg-buildpackage -us -uc -b) >"$work/build.log" 2>&1; then
	tail -n 40 "$work/build.log" >&2
	fail "dpkg-buildpackage failed"
fi
deb=$(ls "$work"/mafsbxfs_*_*.deb 2>/dev/null | head -n1)
[ -f "$deb" ] || fail "no mafsbxfs_*.deb was built"
pydeb=$(ls "$work"/python3-mafsbx_*_all.deb 2>/dev/null | head -n1)
[ -f "$pydeb" ] || fail "no python3-mafsbx_*_all.deb was built"
log "built $(basename "$deb") and $(basename "$pydeb") in $(($(date +%s) - t0)) s"
lintian --pedantic --show-overrides "$work"/mafsbxfs_*.changes >"$work/lintian.log" 2>&1
sed 's/^/lintian: /' "$work/lintian.log" | grep -v 'running with root privileges' >&2
grep -E '^[EW]: ' "$work/lintian.log" && fail "lintian reports errors or warnings"

# ---- 2. the package's contents -------------------------------------------
dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\./|/|' >"$work/files"
for f in /usr/bin/mafsbx /usr/bin/mafsbxfs /usr/share/man/man1/mafsbx.1.gz /usr/share/man/man1/mafsbxfs.1.gz \
	/lib/systemd/system/mafsbxfs@.service /lib/systemd/system/mafsbx-reap.service \
	/lib/systemd/system/mafsbx-reap.timer /usr/share/doc/mafsbxfs/examples/cron.d/mafsbx-reap \
	/usr/share/doc/mafsbxfs/examples/fstab.example /usr/libexec/mafsbx/mafsbx-egress-proxy \
	/usr/share/bash-completion/completions/mafsbx /usr/share/bash-completion/completions/mafsbxfs \
	/usr/share/doc/mafsbxfs/copyright; do
	grep -qxF "$f" "$work/files" || fail "the package lacks $f"
done
grep -q '^/usr/lib/python3' "$work/files" && fail "mafsbxfs holds Python files (they are python3-mafsbx's)"
version=$(dpkg-deb -f "$deb" Version)
[ "$(dpkg-deb -f "$pydeb" Version)" = "$version" ] ||
	fail "python3-mafsbx is version $(dpkg-deb -f "$pydeb" Version), mafsbxfs $version"
mkdir "$work/py"
dpkg-deb -x "$pydeb" "$work/py"
site=$work/py/usr/lib/python3/dist-packages
for m in $(cd "$src/contrib/python" && find mafsbx -type f -not -path '*/__pycache__/*'); do
	cmp -s "$src/contrib/python/$m" "$site/$m" || fail "python3-mafsbx's $m is not contrib/python/$m"
done
extra=$(cd "$site" && find mafsbx -type f | while read -r m; do [ -f "$src/contrib/python/$m" ] || echo "$m"; done)
[ -z "$extra" ] || fail "python3-mafsbx holds files contrib/python/mafsbx has not: $extra"
grep -qx "Version: ${version%%-*}" "$site/mafsbx-${version%%-*}.dist-info/METADATA" 2>/dev/null ||
	fail "python3-mafsbx has no mafsbx-${version%%-*}.dist-info/METADATA of that version"
dpkg-deb -e "$deb" "$work/control"
if grep -sqE 'systemctl +(--[a-z]+ +)*(start|restart|enable)|deb-systemd-invoke|invoke-rc.d' \
	"$work"/control/{preinst,postinst,prerm,postrm}; then
	fail "a maintainer script starts or enables something"
fi

# ---- 3. a fresh Debian 12 container --------------------------------------
# both packages' dependencies but the packages built here
deps=$( { dpkg-deb -f "$deb" Depends; echo ,; dpkg-deb -f "$pydeb" Depends; } | tr ',' '\n' |
	sed 's/[(|].*//; s/:any//; s/[[:space:]]//g' | grep . | grep -vx -e mafsbxfs -e python3-mafsbx | sort -u |
	paste -sd, -)
mirror=${MAFSBX_DEBIAN_MIRROR:-http://deb.debian.org/debian}
cache=${MAFSBX_CI_CACHE:-/var/cache/mafsbx-ci}
key=$(printf 'bookworm minbase %s %s\n' "$mirror" "$deps" | sha256sum | cut -c1-16)
image=mafsbx-ci/bookworm-minbase:$key
mkdir -p "$cache" || fail "cannot make $cache"
(
	# one builder at a time; a second run waits and finds the cache
	flock 9
	if ! dk image inspect "$image" >/dev/null 2>&1; then
		tarball=$cache/bookworm-minbase-$key.tar
		if [ ! -s "$tarball" ]; then
			log "debootstrap bookworm (minbase, with $deps) from $mirror into the cache (once)"
			root=$cache/root-$key.partial
			rm -rf "$root"
			if ! debootstrap --variant=minbase --include="$deps" bookworm "$root" "$mirror" \
				>"$work/debootstrap.log" 2>&1; then
				tail -n 30 "$work/debootstrap.log" >&2
				rm -rf "$root"
				fail "debootstrap failed"
			fi
			# apt's lists and archives are not needed in the image: dpkg -i installs
			rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
			tar -C "$root" --numeric-owner -cf "$tarball.partial" . && mv "$tarball.partial" "$tarball" ||
				fail "cannot write $tarball"
			rm -rf "$root"
		fi
		log "importing $image"
		dk import "$tarball" "$image" >/dev/null || fail "docker import $tarball"
	fi
) 9>"$cache/.lock" || exit 1

dk run -d --name "$ctr" --network none --device /dev/fuse --cap-add SYS_ADMIN \
	-v "$sock:/var/run/docker.sock" -v "$deb:/tmp/mafsbxfs.deb:ro" -v "$pydeb:/tmp/python3-mafsbx.deb:ro" \
	"$image" sleep infinity >/dev/null ||
	fail "cannot start a container of $image"
inside() { dk exec "$ctr" "$@"; }
inside dpkg -i /tmp/mafsbxfs.deb /tmp/python3-mafsbx.deb >"$work/dpkg.log" 2>&1 ||
	{ cat "$work/dpkg.log" >&2; fail "dpkg -i failed"; }
for p in mafsbxfs python3-mafsbx; do
	inside dpkg-query -W -f='${Status}\n' "$p" | grep -qx 'install ok installed' || fail "$p is not installed"
done
# minbase has no ps: the names of the container's live processes from /proc
# (its PID 1, sleep, reaps nothing: a daemon that exited stays a zombie)
procs() {
	inside sh -c 'for p in /proc/[0-9]*; do
		read -r _ _ state _ <"$p/stat" 2>/dev/null && [ "$state" != Z ] && cat "$p/comm" 2>/dev/null
	done'
}
if procs | grep -q mafsbx; then fail "something of the package runs after the install: $(procs | paste -sd' ')"; fi
if inside sh -c 'find /etc -lname "*mafsbx*" 2>/dev/null' | grep -q .; then
	fail "the install enabled a unit (a link to it under /etc)"
fi
inside mafsbx --version | grep -qx 'mafsbx [0-9.]*' || fail "mafsbx --version"
inside mafsbxfs --version | grep -q '^mafsbxfs [0-9.]*$' || fail "mafsbxfs --version"
inside bash -n /usr/share/bash-completion/completions/mafsbx || fail "the installed completion does not parse"
inside bash -c '. /usr/share/bash-completion/completions/mafsbx && complete -p mafsbx mafsbxfs' >/dev/null ||
	fail "the installed completion registers nothing"
daemon_version=$(inside mafsbx --version | sed 's/^mafsbx //')
py=$(inside python3 -c 'import importlib.metadata as md, os, mafsbx
print(md.version("mafsbx"), mafsbx.__version__, os.path.dirname(mafsbx.__file__))') ||
	fail "import mafsbx in the container"
[ "$py" = "$daemon_version $daemon_version /usr/lib/python3/dist-packages/mafsbx" ] ||
	fail "the installed client (version, __version__, directory: $py) is not the daemon's $daemon_version"

# ---- 4. a mount in the container against the host's engine ----------------
image_sbx=${MAFSBX_IMAGE:-mafsbx/busybox:latest}
inside mkdir -p /mnt/sbx
inside mafsbxfs -o plane=engine /mnt/sbx 2>"$work/mount.err" || { cat "$work/mount.err" >&2; fail "mafsbxfs did not mount"; }
inside grep -q ' /mnt/sbx .* - fuse.mafsbxfs ' /proc/self/mountinfo || fail "no fuse.mafsbxfs mount on /mnt/sbx"
inside cat /mnt/sbx/.ctl/engine | grep -q '"endpoint"' || fail ".ctl/engine through the mount"
req="{\"scope\": \"$scope\", \"thread\": \"t\", \"agent\": \"a\", \"kind\": \"k\", \"image\": \"$image_sbx\"}"
reply=$(inside sh -c 'exec 3<>/mnt/sbx/.ctl/acquire && printf "%s" "$1" >&3 && cat <&3' sh "$req") ||
	fail "acquire through the mount: $reply"
name=$(printf '%s' "$reply" | sed -n 's/.*"name": *"\(maf-sandbox-docker-[0-9a-f]*\)".*/\1/p')
[ -n "$name" ] || fail "acquire reply without a name: $reply"
inside sh -c "echo packaged > /mnt/sbx/$name/work/deb.txt" || fail "write through the mount"
[ "$(inside cat "/mnt/sbx/$name/work/deb.txt")" = packaged ] || fail "read back through the mount"
out=$(inside mafsbx exec "$name" -- cat /maf-sandbox/work/deb.txt) || fail "mafsbx exec in the container"
[ "$out" = packaged ] || fail "mafsbx exec read '$out'"
inside sh -c "rmdir /mnt/sbx/$name" || fail "dispose (rmdir) through the mount"
inside fusermount3 -u /mnt/sbx || fail "unmount"
for _ in $(seq 1 40); do
	procs | grep -qx mafsbxfs || break
	sleep 0.05
done
procs | grep -qx mafsbxfs && fail "the daemon outlived its unmount"
log "ok: mafsbxfs and python3-mafsbx built, lintian clean, installed on Debian 12 ($image) (the client $daemon_version, the daemon's version), mounted, a sandbox driven and disposed"
