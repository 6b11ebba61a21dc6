#!/usr/bin/env bash
# tests/platform/vm-inside.sh: run by tests/platform/cgroupv2.sh's VM init in
# the built tree (/root/mafsbxfs): check that the system is cgroup v2 only,
# contrib/setup.sh (dockerd, the offline image; build/ is already built), then
# the meson tests named in /mnt/out/tests with MAFSBX_REQUIRE_ENGINE=1.
# Writes its status to /mnt/out/rc.
set -uo pipefail
PROG=vm-inside
log() { printf '%s: %s\n' "$PROG" "$*" >&2; }
finish() { echo "$1" >/mnt/out/rc; exit "$1"; }

log "platform: $(. /etc/os-release && echo "$PRETTY_NAME"), kernel $(uname -r), $(nproc) CPUs, /sys/fs/cgroup is $(stat -fc %T /sys/fs/cgroup)"
[ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ] || { log "/sys/fs/cgroup is not cgroup2"; finish 1; }
grep -q '^cgroup ' /proc/mounts && { log "a cgroup v1 hierarchy is mounted"; finish 1; }
log "PID 1's /proc/self/cgroup: $(tr '\n' ' ' </proc/1/cgroup)"

s=$SECONDS
MAFSBX_DOCKERD_DEADLINE=300 contrib/setup.sh || { log "contrib/setup.sh failed"; finish 1; }
log "setup (dockerd, offline image) took $((SECONDS - s)) s"
log "engine: $(docker version --format 'docker {{.Server.Version}}, API {{.Server.APIVersion}}'), $(docker info --format 'cgroup v{{.CgroupVersion}}, driver {{.CgroupDriver}}, storage {{.Driver}}'), runc $(runc --version | sed -n 's/^runc version //p')"
[ "$(docker info --format '{{.CgroupVersion}}')" = 2 ] || { log "the engine is not on cgroup v2"; finish 1; }

export MAFSBX_REQUIRE_ENGINE=1
rm -f build/meson-logs/cgv2*.json
rc=0
s=$SECONDS
# shellcheck disable=SC2046
meson test -C build --no-rebuild --print-errorlogs --logbase cgv2 $(cat /mnt/out/tests) || rc=$?
log "the tests took $((SECONDS - s)) s"
cp build/meson-logs/cgv2.txt /mnt/out/ 2>/dev/null
python3 - build/meson-logs/cgv2.json <<'PY' || rc=1
import json, sys
c = {"pass": 0, "fail": 0, "skip": 0}
for line in open(sys.argv[1]):
    if not line.strip():
        continue
    t = json.loads(line)
    r = t.get("result")
    k = "pass" if r in ("OK", "EXPECTEDFAIL") else "skip" if r == "SKIP" else "fail"
    c[k] += 1
    print("cgroupv2: %-14s %s (%.0f s)" % (t.get("name"), r, t.get("duration", 0)))
print("cgroupv2: %d passed, %d failed, %d skipped" % (c["pass"], c["fail"], c["skip"]))
sys.exit(1 if c["fail"] or c["skip"] or not c["pass"] else 0)
PY
docker ps -aq | xargs -r docker rm -f >/dev/null
finish "$rc"
