#!/usr/bin/env bash
# tests/platform/inside.sh: run by tests/platform/debian13.sh inside its
# Debian 13 container (the source tree read-only at /mnt/src): copy the tree,
# contrib/setup.sh, then the tests with MAFSBX_REQUIRE_ENGINE=1.
# MAFSBX_PLATFORM_TESTS: ci (default) or full (every unit, integration and
# mount test).
set -euo pipefail
PROG=inside
log() { printf '%s: %s\n' "$PROG" "$*" >&2; }

# Copied over any earlier copy (a kept container's build/ is reused).
work=/root/mafsbxfs
mkdir -p "$work"
# Only files whose content changed are written (with a new mtime), so that
# ninja rebuilds what changed even when the copy is older than a build.
stage=$(mktemp -d)
tar -C /mnt/src --exclude='./build*' --exclude=./.git -cf - . | tar -C "$stage" -xf -
(cd "$stage" && find . -type f) | while read -r f; do
	if ! cmp -s "$stage/$f" "$work/$f"; then
		mkdir -p "$(dirname "$work/$f")"
		cp "$stage/$f" "$work/$f.new" && chmod --reference="$stage/$f" "$work/$f.new" && mv "$work/$f.new" "$work/$f"
	fi
done
rm -rf "$stage"
cd "$work"

log "platform: $(. /etc/os-release && echo "$PRETTY_NAME"), kernel $(uname -r)"
contrib/setup.sh
log "engine: $(docker version --format 'docker {{.Server.Version}}, API {{.Server.APIVersion}}'), $(docker info --format 'cgroup v{{.CgroupVersion}}, driver {{.CgroupDriver}}, storage {{.Driver}}'), runc $(runc --version | sed -n 's/^runc version //p'), containerd $(containerd --version | awk '{print $3}')"
log "fuse: libfuse $(pkg-config --modversion fuse3), built with passthrough: $(grep -o -m1 'MFS_HAVE_PASSTHROUGH=[01]' build/build.ninja | cut -d= -f2)"

export MAFSBX_REQUIRE_ENGINE=1
rm -f build/meson-logs/platform*.json
rc=0
# The test set on this minimal Debian 13 (contrib/setup.sh above built
# build/ with gcc): the other builds of contrib/test.sh configured and
# compiled, dpkg-buildpackage past dpkg-checkbuilddeps, every program the
# test scripts call found (tests/platform/toolchain.sh), counted with the
# tests below.
MAFSBX_TOOLCHAIN_LOG=build/meson-logs/platform-toolchain.json \
	bash tests/platform/toolchain.sh debian13 ${MAFSBX_D13_BUILDS-clang asan tsan fuzz} || rc=$?
case "${MAFSBX_PLATFORM_TESTS:-ci}" in
full)
	meson test -C build --print-errorlogs --logbase platform-1 --suite unit --suite integration --suite mount || rc=$?
	;;
ci)
	meson test -C build --print-errorlogs --logbase platform-1 --suite unit || rc=$?
	# the integration tests that failed on Docker 26 and the freeze proof; the
	# mount suites (files: the integration test and the mount test of that name)
	meson test -C build --print-errorlogs --logbase platform-2 \
		engine files dispose reap egress freeze_proof \
		story access files-engine badinput passthrough || rc=$?
	;;
*) log "unknown MAFSBX_PLATFORM_TESTS '${MAFSBX_PLATFORM_TESTS}'"; exit 2 ;;
esac
python3 - build/meson-logs/platform-*.json <<'PY' || rc=1
import json, sys
c = {"pass": 0, "fail": 0, "skip": 0}
for name in sys.argv[1:]:
    for line in open(name):
        if not line.strip():
            continue
        r = json.loads(line).get("result")
        c["pass" if r in ("OK", "EXPECTEDFAIL") else "skip" if r == "SKIP" else "fail"] += 1
print("debian13: %d passed, %d failed, %d skipped" % (c["pass"], c["fail"], c["skip"]))
sys.exit(1 if c["fail"] or c["skip"] or not c["pass"] else 0)
PY
exit $rc
