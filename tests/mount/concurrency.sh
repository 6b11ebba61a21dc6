#!/bin/bash
# concurrency.sh: 16 readers across 4 sandboxes for 30 seconds (override
# with MFS_CONCURRENCY_SECS), plus execs running meanwhile in every sandbox:
# no failed read, no wrong byte, no hung call (each bounded at 60 s), and no
# container left paused at the end. Reads of one sandbox share its freeze;
# execs wait for the freeze to lift; neither starves the other.
. "$(dirname "$0")/lib.sh"
require_env

SECS=${MFS_CONCURRENCY_SECS:-30}
M=$T/mnt
mount_fs "$M"
PID=$DAEMON_PID

NAMES=()
for k in 0 1 2 3; do
	acquire "$M" t a "kind$k" ', "outputs": ["data.bin", "small.txt"]'
	NAMES+=("$SBX")
	run_exec "$M" "$SBX" "head -c 262144 /dev/urandom > data.bin && echo small-$k > small.txt && sha256sum data.bin"
	expect_eq "$CTL_STATUS" OK "exec setup in $SBX ($CTL_REPLY)"
	jget "$CTL_REPLY" stdout | cut -d' ' -f1 >"$T/sum.$k"
done

END=$(($(date +%s) + SECS))
reader() {  # reader INDEX
	local k=$(($1 % 4)) n=0 got want
	local f=$M/${NAMES[$k]}/work/data.bin
	want=$(cat "$T/sum.$k")
	while [ "$(date +%s)" -lt "$END" ]; do
		got=$(timeout 60 cat "$f" | sha256sum | cut -d' ' -f1)
		if [ "${PIPESTATUS[0]}" != 0 ] || [ "$got" != "$want" ]; then
			echo "reader $1: read of $f failed or differed (got $got)" >>"$T/failures"
			return 1
		fi
		got=$(timeout 60 cat "$M/${NAMES[$k]}/work/small.txt") || {
			echo "reader $1: small.txt failed" >>"$T/failures"
			return 1
		}
		[ "$got" = "small-$k" ] || {
			echo "reader $1: small.txt gave '$got'" >>"$T/failures"
			return 1
		}
		if [ $((n % 10)) = 0 ]; then
			timeout 60 ls "$M/${NAMES[$k]}/work" >/dev/null || {
				echo "reader $1: ls work failed" >>"$T/failures"
				return 1
			}
		fi
		n=$((n + 1))
	done
	echo "$n" >"$T/reads.$1"
}
execer() {  # execer INDEX
	local k=$1 n=0 out st
	while [ "$(date +%s)" -lt "$END" ]; do
		out=$(timeout 60 "$MFS_TOOL" ctl "$M/.ctl/exec" \
			"{\"sandbox\": \"${NAMES[$k]}\", \"command\": \"wc -c < data.bin; echo run-$n >> log.txt\"}")
		st=$?
		if [ "$st" != 0 ] || [ "${out%%$'\n'*}" != OK ]; then
			echo "exec $k: status $st: $out" >>"$T/failures"
			return 1
		fi
		case "$out" in
		*'"stdout": "262144\n"'*'"exit_code": 0'* | *'"exit_code": 0'*'"stdout": "262144\n"'*) ;;
		*)
			echo "exec $k: unexpected reply $out" >>"$T/failures"
			return 1
			;;
		esac
		n=$((n + 1))
	done
	echo "$n" >"$T/execs.$k"
}

JOBS=()
for i in $(seq 0 15); do
	reader "$i" &
	JOBS+=($!)
done
for k in 0 1 2 3; do
	execer "$k" &
	JOBS+=($!)
done
for j in "${JOBS[@]}"; do
	wait "$j"
done

if [ -s "$T/failures" ]; then
	cat "$T/failures" >&2
	fail "$(wc -l <"$T/failures") failures"
fi
TOTAL_READS=0
for i in $(seq 0 15); do
	[ -s "$T/reads.$i" ] || fail "reader $i did not finish"
	[ "$(cat "$T/reads.$i")" -gt 0 ] || fail "reader $i read nothing"
	TOTAL_READS=$((TOTAL_READS + $(cat "$T/reads.$i")))
done
TOTAL_EXECS=0
for k in 0 1 2 3; do
	[ -s "$T/execs.$k" ] || fail "exec loop $k did not finish"
	[ "$(cat "$T/execs.$k")" -gt 0 ] || fail "exec loop $k ran nothing"
	TOTAL_EXECS=$((TOTAL_EXECS + $(cat "$T/execs.$k")))
done
log "$TOTAL_READS reads and $TOTAL_EXECS execs in ${SECS}s, all correct"

kill -0 "$PID" 2>/dev/null || fail "the daemon died"
no_paused
for n in "${NAMES[@]}"; do
	expect_eq "$("$MFS_TOOL" state "$n")" running "state of $n after the run"
done
umount_fs "$M" "$PID"
log "PASS"
