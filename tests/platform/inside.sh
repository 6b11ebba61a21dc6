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
tar -C /mnt/src --exclude='./build*' --exclude=./.git -cf - . | tar -C "$work" -xf -
cd "$work"

log "platform: $(. /etc/os-release && echo "$PRETTY_NAME"), kernel $(uname -r)"
contrib/setup.sh
log "engine: $(docker version --format 'docker {{.Server.Version}}, API {{.Server.APIVersion}}'), $(docker info --format 'cgroup v{{.CgroupVersion}}, driver {{.CgroupDriver}}, storage {{.Driver}}'), runc $(runc --version | sed -n 's/^runc version //p'), containerd $(containerd --version | awk '{print $3}')"
log "fuse: libfuse $(pkg-config --modversion fuse3), passthrough $(meson introspect build --buildoptions | python3 -c 'import json,sys; print([o["value"] for o in json.load(sys.stdin) if o["name"]=="passthrough"][0])')"

export MAFSBX_REQUIRE_ENGINE=1
case "${MAFSBX_PLATFORM_TESTS:-ci}" in
full) sel=(--suite unit --suite integration --suite mount) ;;
ci)
	sel=(--suite unit
		engine files dispose reap egress freeze_proof
		story files access files-engine badinput passthrough)
	;;
*) log "unknown MAFSBX_PLATFORM_TESTS '${MAFSBX_PLATFORM_TESTS}'"; exit 2 ;;
esac
rc=0
meson test -C build --print-errorlogs --logbase platform "${sel[@]}" || rc=$?
python3 - build/meson-logs/platform.json <<'PY'
import json, sys
c = {"pass": 0, "fail": 0, "skip": 0}
for line in open(sys.argv[1]):
    if not line.strip():
        continue
    r = json.loads(line).get("result")
    c["pass" if r in ("OK", "EXPECTEDFAIL") else "skip" if r == "SKIP" else "fail"] += 1
print("debian13: %d passed, %d failed, %d skipped" % (c["pass"], c["fail"] + c["skip"], c["skip"]))
sys.exit(1 if c["fail"] or c["skip"] or not c["pass"] else 0)
PY
exit $rc
