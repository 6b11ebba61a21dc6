# tests/bench/agents_lib.sh: the agents' workload of tests/bench/bench_agents,
# sourced by it and by tests/bench/bench_cluster (one workload, two
# benchmarks). An agent: cold acquire, write a 1 KiB input, exec
# `sh -c 'sleep 1; cat in > out'`, read the output, dispose. The caller sets
# T (a scratch folder holding the input, $T/in), SCOPE, and M (the mount) for
# agent_mount, and defines agent_WAY for each other way it runs.
# shellcheck shell=bash

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# Each agent function writes its wall time (ms) to $T/ms.WAY.N.I, or "fail".
agent_mount() {
	local i=$1 t0 reply name
	t0=$(now_ms)
	reply=$({ exec 3<>"$M/.ctl/acquire" && printf '{"scope": "%s", "thread": "m%s", "agent": "a", "kind": "k"}' "$SCOPE" "$i" >&3 && cat <&3; } 2>/dev/null) || { echo fail; return; }
	name=$(printf '%s' "$reply" | sed -n 's/.*"name": "\([^"]*\)".*/\1/p')
	cp "$T/in" "$M/$name/work/in" || { echo fail; return; }
	{ exec 3<>"$M/.ctl/exec" && printf '{"sandbox": "%s", "command": "sleep 1; cat in > out"}' "$name" >&3 && cat <&3 >/dev/null; } 2>/dev/null || { echo fail; return; }
	cmp -s "$T/in" "$M/$name/work/out" || { echo fail; return; }
	rmdir "$M/$name" || { echo fail; return; }
	echo $(($(now_ms) - t0))
}

# run WAY N: N agents at once; prints "wall p50 p99 failures"
run() {
	local way=$1 n=$2 i t0 wall
	t0=$(now_ms)
	for i in $(seq 1 "$n"); do
		"agent_$way" "$n-$i" >"$T/ms.$way.$n.$i" &
	done
	wait
	wall=$(($(now_ms) - t0))
	local fails
	fails=$(cat "$T"/ms."$way"."$n".* | grep -c fail)
	sort -n "$T"/ms."$way"."$n".* | grep -v fail >"$T/sorted"
	local cnt p50 p99
	cnt=$(wc -l <"$T/sorted")
	if [ "$cnt" -gt 0 ]; then
		p50=$(sed -n "$(((cnt + 1) / 2))p" "$T/sorted")
		p99=$(sed -n "$(((cnt * 99 + 99) / 100))p" "$T/sorted")
	else
		p50=- p99=-
	fi
	echo "$wall $p50 $p99 $fails"
}
