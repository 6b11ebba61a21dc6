#!/usr/bin/env bash
# tests/platform/toolchain.sh NAME BUILD...: in a minimal Debian (debootstrap
# --variant=minbase) that has exactly the test set-up's packages
# (contrib/setup.sh --set test --packages-only, --no-install-recommends),
# run from a scratch copy of the tree (the current directory), as root:
#
#   - each BUILD configured and compiled, nothing run: BUILD is one of
#       gcc    CC=gcc,   -Dtests=true                (build/ of contrib/test.sh)
#       clang  CC=clang, -Dtests=true                (build-clang/)
#       asan   CC=gcc,   -Db_sanitize=address,undefined (build-asan/)
#       tsan   CC=gcc,   -Db_sanitize=thread         (build-tsan/)
#       fuzz   CC=clang, -Dfuzz=true -Dtests=false   (build-fuzz/, contrib/fuzz.sh)
#     all with -Dwerror=true, in build-tc-BUILD/, every target (a subset
#     that still links the daemon, the CLI and a test of each kind costs
#     about as much: src/'s libraries are most of the work)
#   - `dpkg-buildpackage -us -uc -b -T clean`: dpkg-checkbuilddeps passes
#     (debian/control's Build-Depends and build-essential are installed) and
#     debian/rules runs
#   - tests/packaging/check_programs.py --present: every program the test
#     scripts call is found
#
# Each check's wall and CPU time (its processes' user + system: what it costs
# on an idle machine, whatever the load) go to stderr. Prints "NAME: N passed, N failed, 0
# skipped" last; with MAFSBX_TOOLCHAIN_LOG=FILE each check is also appended
# to FILE as a line of meson's JSON test log ({"name", "result",
# "duration"}), so a stage that counts meson's results counts these too.
set -uo pipefail
name=${1:?usage: toolchain.sh NAME BUILD...}
shift
PROG=$name-toolchain
log() { printf '%s: %s\n' "$PROG" "$*" >&2; }
passed=0 failed=0

# cpu_now: CPU to the CPU seconds (user + system) of this shell's waited-for
# children so far, from the second line of bash's `times` ("XmY.YYYs
# XmY.YYYs"), which runs here, not in a subshell (a fork starts at zero).
cpu_now() {
	local t
	t=$(mktemp)
	times >"$t"
	CPU=$(awk 'NR == 2 { n = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); n += a[1] * 60 + a[2] }
		printf "%.1f", n }' "$t")
	rm -f "$t"
}

# record CHECK SECONDS CPU STATUS OUTPUT_FILE
record() {
	local result=OK
	if [ "$4" = 0 ]; then
		passed=$((passed + 1))
		log "ok: $1 ($2 s, $3 s CPU)"
	else
		failed=$((failed + 1)) result=FAIL
		log "FAIL: $1 ($2 s, exit $4); its last lines:"
		tail -n 25 "$5" | sed 's/^/    /' >&2
	fi
	if [ -n "${MAFSBX_TOOLCHAIN_LOG:-}" ]; then
		printf '{"name": "%s:toolchain / %s", "result": "%s", "duration": %s}\n' "$name" "$1" "$result" "$2" \
			>>"$MAFSBX_TOOLCHAIN_LOG"
	fi
}

# run CHECK CMD...: one check, its output in a scratch file
run() {
	local what=$1 s=$SECONDS c rc=0 out
	shift
	out=$(mktemp)
	cpu_now
	c=$CPU
	"$@" >"$out" 2>&1 || rc=$?
	cpu_now
	record "$what" $((SECONDS - s)) "$(awk -v a="$c" -v b="$CPU" 'BEGIN { printf "%.1f", b - a }')" "$rc" "$out"
	rm -f "$out"
}

# build BUILD
build() {
	local b=$1 dir opts cc
	# shellcheck disable=SC2054 # the comma is meson's (address,undefined)
	case "$b" in
	gcc) cc=gcc opts=(-Dtests=true) ;;
	clang) cc=clang opts=(-Dtests=true) ;;
	asan) cc=gcc opts=(-Dtests=true -Db_sanitize=address,undefined) ;;
	tsan) cc=gcc opts=(-Dtests=true -Db_sanitize=thread) ;;
	fuzz) cc=clang opts=(-Dtests=false -Dfuzz=true) ;;
	*) log "unknown build '$b' (gcc, clang, asan, tsan, fuzz)"; failed=$((failed + 1)); return ;;
	esac
	dir=build-tc-$b
	rm -rf "$dir"
	run "$b: meson setup (CC=$cc ${opts[*]})" env CC="$cc" meson setup "$dir" -Dwerror=true "${opts[@]}"
	[ -f "$dir/build.ninja" ] || return 0
	run "$b: meson compile" meson compile -C "$dir"
}

log "on $(. /etc/os-release && echo "$PRETTY_NAME"): ${*:-no build}"
for b in "$@"; do
	build "$b"
done
run "dpkg-buildpackage -T clean (past dpkg-checkbuilddeps)" dpkg-buildpackage -us -uc -b -T clean
run "every program the test scripts call is found" python3 tests/packaging/check_programs.py --present
echo "$name: $passed passed, $failed failed, 0 skipped"
[ "$failed" = 0 ]
