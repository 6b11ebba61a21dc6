#!/usr/bin/env bash
# tests/platform/quickstart-inside.sh: run by tests/platform/quickstart.sh in
# its fresh Debian 12 (minbase) container, the tree read-only at /mnt/src.
# Copies the tree, runs contrib/quickstart.sh as a new user would, then
# checks what it left: the file the sandbox wrote was printed, no package
# outside the run set was installed (apt-mark showmanual, before and after),
# and no process but the engine's runs (minbase has no ps: /proc is read).
set -uo pipefail
PROG=quickstart-inside
log() { printf '%s: %s\n' "$PROG" "$*" >&2; }
pass=0 fail=0
check() { # check NAME OK(0/1) WHY
	if [ "$2" = 0 ]; then
		pass=$((pass + 1))
		log "ok: $1"
	else
		fail=$((fail + 1))
		log "FAIL: $1: $3"
	fi
}

work=/root/mafsbxfs
mkdir -p "$work"
tar -C /mnt/src --exclude='./build*' --exclude=./.git -cf - . | tar -C "$work" -xf - || exit 1
cd "$work" || exit 1
log "platform: $(. /etc/os-release && echo "$PRETTY_NAME")"

before=$(apt-mark showmanual | sort)
out=$(mktemp)
rc=0
contrib/quickstart.sh >"$out" 2>&1 || rc=$?
cat "$out"
ok=1
[ "$rc" = 0 ] && grep -qx 'hello from the sandbox' "$out" && ok=0
check "contrib/quickstart.sh ran and printed the sandbox's file" "$ok" "exit $rc (log above)"

allowed=$(contrib/setup.sh --print-packages --set run | sort)
added=$(comm -13 <(printf '%s\n' "$before") <(apt-mark showmanual | sort))
extra=$(comm -23 <(printf '%s\n' "$added") <(printf '%s\n' "$allowed") | tr '\n' ' ')
log "installed: $(printf '%s\n' "$added" | tr '\n' ' ')"
ok=1
[ -z "${extra// /}" ] && [ -n "$added" ] && ok=0
check "only the run set's packages were installed" "$ok" "also: ${extra:-(nothing was installed)}"

# Every live process's name: the engine (dockerd, containerd and, for a
# container still going away, its shim), this script's shells and the
# container's `sleep infinity`; anything else is a service the quick start
# should not have started (an sshd, a registry ...).
others=""
for p in /proc/[0-9]*; do
	read -r comm <"$p/comm" 2>/dev/null || continue
	state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "$p/status" 2>/dev/null)
	[ "$state" = Z ] && continue
	case "$comm" in
	dockerd | containerd | containerd-shim* | bash | sleep | sed) ;;
	*) others+="$comm(${p#/proc/}) " ;;
	esac
done
ok=1
[ -z "$others" ] && ok=0
check "no service but the engine runs afterwards" "$ok" "also running: $others"

echo "quickstart: $pass passed, $fail failed, 0 skipped"
[ "$fail" = 0 ]
