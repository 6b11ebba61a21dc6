#!/usr/bin/env bash
# contrib/fuzz.sh: build the libFuzzer harnesses (tests/fuzz/, clang) in
# build-fuzz/ and run each for a bounded time; contrib/test.sh runs it.
#
#   contrib/fuzz.sh [SECONDS_EACH [HARNESS...]]     (default 20 s, all)
#
# Each run starts from the committed seeds (tests/fuzz/corpus/NAME) in a
# scratch copy, two harnesses at a time (the machine has two cores). Any
# crash, sanitizer report, leak, timeout (10 s per input) or broken
# invariant fails the script; the reproducer is kept under
# build-fuzz/fuzz-findings/ and its path printed. Ends with one line per
# harness: executions, coverage, corpus size.
set -uo pipefail
PROG=fuzz
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
. "$here/lib.sh"
cd "$root"

secs=${1:-20}
shift || true
all=(tar archlist pathstat spec endpoint demux engine guestpath ctl)
names=("$@")
[ ${#names[@]} -eq 0 ] && names=("${all[@]}")

command -v clang >/dev/null || die "clang is missing (contrib/setup.sh installs it)"
if [ ! -f build-fuzz/build.ninja ]; then
	CC=clang meson setup build-fuzz -Dfuzz=true -Dtests=false -Dwerror=true >/dev/null || die "meson setup build-fuzz failed"
fi
meson compile -C build-fuzz >/dev/null || die "building the fuzz harnesses failed"

work=$(mktemp -d /tmp/mafsbx-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT
findings=$root/build-fuzz/fuzz-findings
mkdir -p "$findings"

# run NAME: one bounded libFuzzer run; its exit status
run() {
	local n=$1
	mkdir -p "$work/$n"
	cp tests/fuzz/corpus/"$n"/* "$work/$n/"
	build-fuzz/tests/fuzz/fuzz_"$n" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-max_len=65536 -print_final_stats=1 -artifact_prefix="$findings/$n-" "$work/$n" \
		>"$work/$n.log" 2>&1
}

failed=()
pids=()
for ((i = 0; i < ${#names[@]}; i += 2)); do
	pids=()
	for n in "${names[@]:i:2}"; do
		[ -x build-fuzz/tests/fuzz/fuzz_"$n" ] || die "no harness fuzz_$n"
		run "$n" &
		pids+=("$!:$n")
	done
	for p in "${pids[@]}"; do
		if ! wait "${p%%:*}"; then
			n=${p#*:}
			failed+=("$n")
			log "fuzz_$n FAILED; the end of its log:"
			tail -n 40 "$work/$n.log" >&2
		fi
	done
done

for n in "${names[@]}"; do
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$n.log")
	line=$(grep -E '^#[0-9]+.*(DONE|cov:)' "$work/$n.log" | tail -n 1)
	printf '  fuzz_%-10s %10s execs in %s s  %s\n' "$n" "${execs:-?}" "$secs" \
		"$(echo "$line" | grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[0-9a-zA-Z]+')"
done
if ((${#failed[@]})); then
	log "failed: ${failed[*]} (reproducers in $findings)"
	exit 1
fi
