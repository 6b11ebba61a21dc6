# tests/bench/agents_lib.sh: the agents' workload of tests/bench/bench_agents,
# sourced by it and by tests/bench/bench_cluster (one workload, two
# benchmarks). An agent: cold acquire, write a 1 KiB input, exec
# `sh -c 'sleep 1; cat in > out'`, read the output, dispose. The caller sets
# T (a scratch folder holding the input, $T/in), SCOPE, and M (the mount) for
# agent_mount, and defines agent_WAY for each other way it runs.
# shellcheck shell=bash

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# Each agent function writes its wall time (ms) to $T/ms.WAY.N.I, or "fail";
# a failed agent says on stderr (run keeps it in $T/why.WAY.N.I) which step
# failed and with what error, so a bench's failure can be looked into; a
# mount agent that succeeded writes its acquire, work (write, exec, read) and
# dispose times (ms) to $T/phases.SCOPE.I.
agent_fail() {
	echo "agent $1: $2 failed: $(tr '\n' ' ' <"$T/err.$1" 2>/dev/null | cut -c1-300)" >&2
	echo fail
}
agent_mount() {
	local i=$1 t0 t1 t2 t3 reply name e=$T/err.$1
	t0=$(now_ms)
	reply=$({ exec 3<>"$M/.ctl/acquire" && printf '{"scope": "%s", "thread": "m%s", "agent": "a", "kind": "k"}' "$SCOPE" "$i" >&3 && cat <&3; } 2>"$e") || { printf " %s" "$reply" >>"$e"; agent_fail "$i" acquire; return; }
	t1=$(now_ms)
	name=$(printf '%s' "$reply" | sed -n 's/.*"name": "\([^"]*\)".*/\1/p')
	cp "$T/in" "$M/$name/work/in" 2>"$e" || { agent_fail "$i" "write (of $name)"; return; }
	{ exec 3<>"$M/.ctl/exec" && printf '{"sandbox": "%s", "command": "sleep 1; cat in > out"}' "$name" >&3 && cat <&3 >/dev/null; } 2>"$e" || { agent_fail "$i" "exec (in $name)"; return; }
	cmp "$T/in" "$M/$name/work/out" >"$e" 2>&1 || { agent_fail "$i" "read (of $name)"; return; }
	t2=$(now_ms)
	rmdir "$M/$name" 2>"$e" || { agent_fail "$i" "dispose (of $name)"; return; }
	rm -f "$e"
	t3=$(now_ms)
	# the phases that differ by engine, for a caller that looks (bench_cluster)
	echo "$((t1 - t0)) $((t2 - t1)) $((t3 - t2))" >"$T/phases.$SCOPE.$i"
	echo $((t3 - t0))
}

# run WAY N: N agents at once; prints "wall p50 p99 failures"
run() {
	local way=$1 n=$2 i t0 wall
	t0=$(now_ms)
	for i in $(seq 1 "$n"); do
		"agent_$way" "$n-$i" >"$T/ms.$way.$n.$i" 2>"$T/why.$way.$n.$i" &
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
