#!/usr/bin/env bash
# contrib/test.sh: the whole test run, as root. README's second command;
# .ci/run runs exactly this.
#
#   1. contrib/setup.sh (--set test, its default): every package the run
#      calls, dockerd, build/ (gcc), the offline image
#   2. build with gcc (build/) and with clang (build-clang/), warnings as errors
#   3. meson test, ALL suites, in build/ with MAFSBX_REQUIRE_ENGINE=1: a test
#      that cannot reach the engine fails instead of skipping
#   4. the unit suite under ASan+UBSan (build-asan/, meson test --setup sanitize),
#      then most of the integration and mount suites (list below) with every
#      sanitizer report also written under build-asan/sanitizer-logs/, which
#      must stay empty
#   5. ThreadSanitizer (build-tsan/, meson test --setup tsanlogs): the mount
#      suites of both planes and the parallel and detached-exec ones; any
#      report fails the run
#   6. the libFuzzer harnesses (build-fuzz/, clang), 20 s each (contrib/fuzz.sh)
#   6a. rootless Docker (tests/platform/rootless.sh): dockerd-rootless.sh for
#      a test user on this cgroup v1 host (cgroup driver 'none'), and the
#      mount as that user: the story on the local plane and the rootless
#      checks (no freeze, the engine plane's refusals, subordinate ids)
#   6b. Debian 13 (tests/platform/debian13.sh): a container of a fresh Debian
#      13 image (made once with debootstrap, cached under /var/cache/mafsbx)
#      with its own dockerd 26 and libfuse 3.17: the unit suite, the
#      integration and mount tests that prove that platform, and FUSE
#      passthrough; first, on that minimal system with only the test set
#      (tests/platform/toolchain.sh): the clang, ASan, TSan and fuzz builds
#      compile (setup.sh built the gcc one), dpkg-buildpackage gets past
#      dpkg-checkbuilddeps, every program the test scripts call is found
#   6c. cgroup v2 (tests/platform/cgroupv2.sh): a qemu VM booted from that
#      Debian 13 image with its own kernel and only cgroup2 mounted: the mount
#      tests cgroups, cgroups-engine, story and story-engine
#   6d. the quick start on a fresh Debian 12 (tests/platform/quickstart.sh):
#      a minbase container runs contrib/quickstart.sh as a new user would;
#      it must print the sandbox's file, install only the run set's packages
#      and leave no service but the engine running; then a container of that
#      Debian 12 with only the test set (tests/platform/toolchain.sh): the
#      gcc, clang and fuzz builds compile, dpkg-buildpackage gets past
#      dpkg-checkbuilddeps, every program the test scripts call is found
#   6e. systemd (tests/platform/systemd.sh): the unit mafsbxfs@.service, as
#      built, under a real systemd booted in a Debian 12 container: its
#      hardening in force, the mount seen by other processes, the daemon's
#      errors under `journalctl -p err`, systemctl restart and stop; its
#      hooks (tests/platform/systemd.d): a detached job survives the restart
#      byte-exact with its exit code, and is lost under KillMode=control-group
#   6f. the scale check: tests/bench/bench_scale at 1000 sandboxes on a
#      private dockerd, CHECK=1 (a listing's ratio to the engine's own list,
#      or the daemon's memory, over its bound fails the run)
#   6g. the engine plane's listing check: tests/bench/bench_planes --ratio,
#      CHECK=1 (an `ls -l` of 20 over 4.5x one fresh stat, or over 1.25x the
#      engine floor's own ratio when that is higher, or more than one pause
#      of the guest per `ls -l`, fails the run); under a minute
#   6h. the cluster (tests/cluster/cluster.sh): a real three-node Docker Swarm
#      (dockerd 26.1 nodes in containers of the Debian 13 setup image made
#      for 6b) and one mount on the host over its manager (-o cluster=swarm):
#      sandboxes spread over the nodes, files and execs on each, one list for
#      the whole cluster, one service per key from two mounts, the spool
#      budget held across the nodes, a manager
#      stopped and a node killed, nothing left after dispose and reap
#   (the valgrind suite, run in step 3, has the daemon of one mount story
#   under memcheck)
#   7. the summary, with the fault soak's numbers (tests/fault/soak.c), and a
#      check that no mafsbxfs daemon of this run outlived it (zombies not yet
#      reaped by init aside)
#
# Any failure, and any skipped test, makes the run fail. Failed tests' logs
# are printed, then a summary and one closing line "N passed, N failed, N skipped".
set -euo pipefail
PROG=test
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
. "$here/lib.sh"
require_root
cd "$root"

"$here/setup.sh" --set test

# The Debian 13 stage's images (debootstrap, then its packages: minutes of
# waiting on the mirror on a fresh machine) are made in the background while
# the host's suites run; the stage itself waits for them.
d13_images= cgv2_images= qs_image= sd_image= # set by bg_start
bg_start d13_images "$root/tests/platform/debian13.sh" --images-only
# The cgroup v2 VM's disk (made from that setup image) likewise.
bg_start cgv2_images "$root/tests/platform/cgroupv2.sh" --images-only
# The quick-start stage's minimal Debian 12 likewise.
bg_start qs_image "$root/tests/platform/quickstart.sh" --images-only
# The systemd stage's image (that Debian 12 with systemd) likewise.
bg_start sd_image "$root/tests/platform/systemd.sh" --images-only

export MAFSBX_REQUIRE_ENGINE=1
failures=()
pass_total=0 fail_total=0 skip_total=0
summary=()

# build DIR CC [meson options...]
build() {
	local dir=$1 cc=$2
	shift 2
	if [ ! -f "$dir/build.ninja" ]; then
		CC=$cc meson setup "$dir" -Dwerror=true -Dtests=true "$@" || return 1
	else
		# -Dtests=true: the quick start configures build/ without them
		meson configure "$dir" -Dwerror=true -Dtests=true "$@" || return 1
	fi
	meson compile -C "$dir"
}

# Count one run's results from meson's JSON test log: prints "pass fail skip
# NAMES" (NAMES: the tests that did not pass, comma-separated, or "-").
# On stderr: every test that did not pass, with the tail of its output.
count_results() {
	python3 - "$1" <<'PY'
import json, sys
counts = {"pass": 0, "fail": 0, "skip": 0}
bad = []
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    line = line.strip()
    if not line:
        continue
    t = json.loads(line)
    r = t.get("result", "ERROR")
    if r in ("OK", "EXPECTEDFAIL"):
        counts["pass"] += 1
        continue
    if r == "SKIP":
        counts["skip"] += 1
        what = "SKIPPED (a skip counts as a failure)"
    else:
        counts["fail"] += 1
        what = r
    bad.append(t.get("name") or "?")
    print("---- %s: %s (exit %s, %.1f s); last lines of its output:"
          % (what, t.get("name"), t.get("returncode"), t.get("duration") or 0), file=sys.stderr)
    out = (t.get("stdout") or "") + (t.get("stderr") or "")
    for l in out.splitlines()[-40:]:
        print("    " + l, file=sys.stderr)
print(counts["pass"], counts["fail"], counts["skip"], ",".join(bad).replace(" ", "") or "-")
PY
}

# run_tests LABEL DIR [meson test options...]
# RUN_UNDER (an array, may be empty): a command meson test runs under (the Podman stage's service)
RUN_UNDER=()
run_tests() {
	local label=$1 dir=$2 rc=0 logbase start=$SECONDS
	shift 2
	logbase="mafsbx-${label}"
	# No stale results from an earlier run can be counted.
	rm -f "$dir/meson-logs/$logbase".* "$dir/meson-logs/$logbase"-*
	log "meson test ($label) in $dir"
	"${RUN_UNDER[@]}" meson test -C "$dir" --print-errorlogs --logbase "$logbase" "$@" || rc=$?
	# With --setup NAME meson names the logs LOGBASE-NAME.{json,txt}.
	local json
	json=$(ls "$dir/meson-logs/$logbase".json "$dir/meson-logs/$logbase"-*.json 2>/dev/null | head -n 1 || true)
	if [ -z "$json" ] || [ ! -s "$json" ]; then
		log "$label: meson test wrote no results (exit $rc)"
		failures+=("$label: no test results")
		return
	fi
	local counts p f s names
	counts=$(count_results "$json")
	read -r p f s names <<<"$counts"
	pass_total=$((pass_total + p)) fail_total=$((fail_total + f)) skip_total=$((skip_total + s))
	summary+=("$(printf '%-22s %4d passed, %d failed, %d skipped (%d s)' "$label:" "$p" "$f" "$s" $((SECONDS - start)))")
	if [ "$rc" -ne 0 ] || [ "$f" -ne 0 ]; then
		failures+=("$label: $f failed: $names (meson exit $rc; full log ${json%.json}.txt)")
	fi
	if [ "$s" -ne 0 ]; then
		failures+=("$label: $s skipped: $names (a skip is a failure here)")
	fi
	if [ "$p" -eq 0 ]; then
		failures+=("$label: no test passed")
	fi
}

# sanitizer_reports DIR LABEL: every report file under DIR/sanitizer-logs is
# printed and fails the run (a daemon's or a helper's report ends there, not
# in a test's output).
sanitizer_reports() {
	local dir=$1 label=$2 f
	compgen -G "$dir/sanitizer-logs/*" >/dev/null || return 0
	for f in "$dir"/sanitizer-logs/*; do
		log "$label report $f:"
		head -n 80 "$f" >&2
	done
	failures+=("$label: reports in $dir/sanitizer-logs/")
}

# platform_stage NAME WHAT CMD...: runs one platform stage's script, whose
# last "NAME: N passed, N failed, N skipped" line is added to the totals (its
# "failed" does not count the skips; any skip fails the run, as here). The
# stage fails on a non-zero exit or without that line. Returns 0: the stage's
# own failure is recorded, not returned.
platform_stage() {
	local name=$1 what=$2 start=$SECONDS rc=0 out line p f s
	shift 2
	out=$(mktemp /tmp/mafsbx-"$name"-log.XXXXXX)
	"$@" >"$out" 2>&1 || rc=$?
	cat "$out"
	line=$(grep -E "^$name: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped\$" "$out" | tail -n 1 || true)
	rm -f "$out"
	if [ -z "$line" ]; then
		failures+=("$name: $what failed (exit $rc) and printed no result line")
		return 0
	fi
	read -r _ p _ f _ s _ <<<"$line"
	pass_total=$((pass_total + p)) fail_total=$((fail_total + f)) skip_total=$((skip_total + s))
	summary+=("$(printf '%-22s %4d passed, %d failed, %d skipped (%d s)' "$name:" "$p" "$f" "$s" \
		$((SECONDS - start)))")
	if [ "$rc" -ne 0 ] || [ "$f" -ne 0 ]; then
		failures+=("$name: $what failed (exit $rc, $f failed)")
	fi
	if [ "$s" -ne 0 ]; then
		failures+=("$name: $s skipped (a skip is a failure here)")
	fi
	return 0
}

if build build gcc; then
	run_tests all build
else
	failures+=("gcc build failed")
fi

build build-clang clang || failures+=("clang build failed")

# gcc's sanitizers; b_lundef stays on (it only has to go for clang).
# Integration and mount under ASan: a representative subset, chosen by wall
# time (each left out runs code the others run too): not acquire (60 s; its
# spec, naming and create paths run in every mount test's acquire), reap and
# mkimage (CLI plumbing), it_files' two race loops (over 2 min of the same
# read and write paths as its other tests), startup (90 s of mount/unmount
# cycles; option parsing is in the unit suite), and the timing-bound
# threads (a read must finish within 10 s behind 9 s of execs) and
# concurrency (a 30 s soak) tests, which ASan's slowdown makes flaky.
asan_integration=(engine files exec freeze_exec dispose sandbox burst fs_lowlevel)
asan_mount=(badinput bigfile engine_down interop story story-engine rename interrupt timeouts snapshot jobs)
if build build-asan gcc -Db_sanitize=address,undefined; then
	run_tests asan-ubsan-unit build-asan --setup sanitize --suite unit
	rm -rf build-asan/sanitizer-logs
	mkdir -p build-asan/sanitizer-logs
	IT_SKIP='test_race_*' run_tests asan-ubsan-integration build-asan --setup sanitizelogs "${asan_integration[@]}"
	run_tests asan-ubsan-mount build-asan --setup sanitizelogs "${asan_mount[@]}"
	sanitizer_reports build-asan "ASan+UBSan"
else
	failures+=("ASan+UBSan build failed")
fi

# ThreadSanitizer over the daemon's threads (FUSE workers, transaction
# threads, detached execs, the burst timer, the watchdog, the janitor): the
# mount suites of both planes, and the ones that stress the new threads.
tsan_mount=(story story-engine badinput badinput-engine files files-engine execs parallel engine_down thaw interrupt interrupt-engine jobs)
# and the daemon's handlers on fake requests, whose .ctl writes run on the transaction threads (~10 s)
tsan_handlers=(fs_ctl fs_lowlevel)
if build build-tsan gcc -Db_sanitize=thread; then
	rm -rf build-tsan/sanitizer-logs
	mkdir -p build-tsan/sanitizer-logs
	run_tests tsan-mount build-tsan --setup tsanlogs "${tsan_mount[@]}"
	run_tests tsan-handlers build-tsan --setup tsanlogs "${tsan_handlers[@]}"
	sanitizer_reports build-tsan ThreadSanitizer
else
	failures+=("ThreadSanitizer build failed")
fi

# libFuzzer, 20 s per harness (two at a time): any crash fails the run.
# Podman (Debian 12's podman 4.3, rootful) on a service of its own: the `mafsbx` verbs, then the
# mount suites through it, the engine plane's files-engine included (tests/platform/podman.sh;
# doc/engines.md says what Podman cannot do)
podman_mount=(story files badinput files-engine)
if [ -x build/fs/mafsbxfs ]; then
	RUN_UNDER=("$root/tests/platform/podman.sh" build --)
	run_tests podman-mount build --suite mount "${podman_mount[@]}"
	RUN_UNDER=()
fi

# Rootless Docker (Debian 12's dockerd-rootless.sh, cgroup driver 'none' on this cgroup v1
# host) for a test user, and the mount as that user: the story on the local plane and the
# rootless checks (tests/platform/rootless.sh; doc/engines.md).
platform_stage rootless "the rootless Docker stage" "$root/tests/platform/rootless.sh" build

fuzz_log=$(mktemp /tmp/mafsbx-fuzz-log.XXXXXX)
if "$here/fuzz.sh" 20 >"$fuzz_log" 2>&1; then
	summary+=("$(printf '%-22s %s' "fuzz:" "8 harnesses x 20 s, no finding")")
	cat "$fuzz_log"
else
	cat "$fuzz_log"
	failures+=("fuzz: a harness failed (reproducers in build-fuzz/fuzz-findings/)")
fi
rm -f "$fuzz_log"

# Debian 13 with Docker 26 and libfuse 3.17, in a container with its own engine.
bg_finish "$d13_images" && platform_stage debian13 "the Debian 13 stage" "$root/tests/platform/debian13.sh" ||
	failures+=("debian13: making the Debian 13 images failed (exit $?; log above)")

# cgroup v2: the mount tests in a qemu VM (TCG) that mounts only cgroup2,
# with Debian 13's dockerd 26 on it (tests/platform/cgroupv2.sh).
bg_finish "$cgv2_images" && platform_stage cgroupv2 "the cgroup v2 VM stage" "$root/tests/platform/cgroupv2.sh" ||
	failures+=("cgroupv2: making the VM's disk failed (exit $?; log above)")

# The quick start on a fresh Debian 12 (minbase), its packages from the mirror.
bg_finish "$qs_image" && platform_stage quickstart "the quick-start stage" "$root/tests/platform/quickstart.sh" ||
	failures+=("quickstart: making the Debian 12 image failed (exit $?; log above)")

# The unit under a real systemd (PID 1 of a Debian 12 container), build/'s daemon.
bg_finish "$sd_image" && platform_stage systemd "the systemd stage" "$root/tests/platform/systemd.sh" build ||
	failures+=("systemd: making the systemd image failed (exit $?; log above)")

# Scale: 1000 sandboxes on a private dockerd (tests/bench/bench_scale):
# the root listing, by-scope, mafsbx ls and reap --dry-run against the
# engine's own list, the daemon's memory, and a real reap of 1000; a ratio
# over its bound fails the run. ~1 min quiet, ~3 min on a loaded machine.
scale_log=$(mktemp /tmp/mafsbx-scale-log.XXXXXX)
if CHECK=1 BUILD=build "$root/tests/bench/bench_scale" 1000 >"$scale_log" 2>&1; then
	cat "$scale_log"
	summary+=("$(printf '%-22s %s' "scale:" "1000 sandboxes, every ratio within its bound")")
else
	cat "$scale_log"
	failures+=("scale: tests/bench/bench_scale 1000 went over a bound or failed (log above)")
fi
scale_figures=$(grep -E '^(bench_scale: N=|engine list|ls MOUNT|ls -l|mafsbx |daemon after|real reap)' "$scale_log" || true)
rm -f "$scale_log"

# The engine plane's ls -l of 20 against one fresh stat (tests/bench/bench_planes
# --ratio): one freeze and one archive GET per listing, the stats after it
# answered from the listing; its figures beside the engine floor's.
planes_log=$(mktemp /tmp/mafsbx-planes-log.XXXXXX)
if CHECK=1 build/tests/bench/bench_planes --mafsbxfs build/fs/mafsbxfs --ratio --runs 15 >"$planes_log" 2>&1; then
	cat "$planes_log"
	summary+=("$(printf '%-22s %s' "engine ls -l:" "within its bounds (tests/bench/bench_planes --ratio)")")
else
	cat "$planes_log"
	failures+=("engine ls -l: tests/bench/bench_planes --ratio went over a bound or failed (log above)")
fi
planes_figures=$(grep -E '^(\| mafsbxfs, engine plane|\| engine floor|- the floor|- ratio)' "$planes_log" || true)
rm -f "$planes_log"

# One mount over a three-node Docker Swarm on this machine (tests/cluster/cluster.sh;
# doc/scale-out.md): its nodes run the Debian 13 setup image made in the background above.
platform_stage cluster "the cluster stage" "$root/tests/cluster/cluster.sh"

# Every mafsbxfs process of this tree's builds still running (not a zombie).
daemons_left() {
	local p exe st
	for p in /proc/[0-9]*; do
		exe=$(readlink "$p/exe" 2>/dev/null) || continue
		case "$exe" in "$root"/build*/fs/mafsbxfs) ;; *) continue ;; esac
		st=$(awk '{ print $3 }' "$p/stat" 2>/dev/null) || continue
		[ "$st" = Z ] || echo "${p#/proc/} $(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)"
	done
}
left=$(daemons_left)
if [ -n "$left" ]; then
	log "mafsbxfs daemons left running by the tests:"
	printf '  %s\n' "$left" >&2
	failures+=("daemons left: $(printf '%s\n' "$left" | wc -l) mafsbxfs process(es) outlived the tests")
else
	summary+=("$(printf '%-22s %s' "daemons:" "none of this run's mafsbxfs daemons is left")")
fi

echo
echo "==== mafsbxfs test summary ===="
for line in "${summary[@]}"; do
	echo "  $line"
done
# The scale check's figures (tests/bench/bench_scale, run above).
if [ -n "$scale_figures" ]; then
	printf '%s\n' "$scale_figures" | sed 's/^/  /'
fi
if [ -n "$planes_figures" ]; then
	printf '%s\n' "$planes_figures" | sed 's/^/  /'
fi
# The fault campaign's soak (tests/fault, run above in the fault suite): its
# numbers, so that CI shows them without opening the log.
if [ -f build/meson-logs/mafsbx-all.txt ]; then
	grep -E '^soak: ([0-9]+ s, |reads |writes |WRONG |longest |daemon VmRSS)' build/meson-logs/mafsbx-all.txt |
		sed 's/^/  /' || true
fi
for f in "${failures[@]}"; do
	echo "  FAILED: $f"
done
echo "tests: $pass_total passed, $((fail_total + skip_total)) failed, $skip_total skipped"
if ((${#failures[@]})); then
	exit 1
fi
