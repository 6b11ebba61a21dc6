#!/bin/bash
# parallel.sh: many agents at once (doc/protocol.md "The transactions": transactions run
# in parallel). Ratios against the mafsbx verbs doing the same work in the
# same run, never a clock, so a loaded machine slows both sides alike:
#   1. 16 concurrent cold acquires through .ctl/acquire (each caller its own
#      open) within 1.5x of 16 concurrent `mafsbx acquire`;
#   2. 16 concurrent `sleep 2` execs through .ctl/exec within 1.5x of the same
#      16 through `mafsbx exec`;
#   3. while 8 ten-second execs run, a stat and a 1 KiB read in another
#      sandbox cost at most twice what they cost idle (local plane);
#   4. with -o max_requests=4 and 6 long execs asked for (4 run, 2 wait their
#      turn), a storm of 64 concurrent lookups is served at once, and the 2
#      waiting execs run when a turn comes (none refused);
#   5. failures reach the shell read-back idiom and Python's os calls.
. "$(dirname "$0")/lib.sh"
require_env
: "${MAFSBX_CLI:?MAFSBX_CLI must name the mafsbx binary}"

M=$T/mnt
mount_fs "$M" -o "image=$IMAGE,scope=$SCOPE"

now_ms() { echo $(($(date +%s%N) / 1000000)); }
# within RATIO A B: A <= 1.5 * B, with 300 ms of slack for process start-up noise
within() { [ $(($1 * 2)) -le $(($2 * 3 + 600)) ]; }

# --- 1. cold acquires ------------------------------------------------------------
t0=$(now_ms)
pids=()
for i in $(seq 1 16); do
	"$MFS_TOOL" ctl "$M/.ctl/acquire" \
		"{\"scope\": \"$SCOPE\", \"thread\": \"m$i\", \"agent\": \"a\", \"kind\": \"k\", \"image\": \"$IMAGE\"}" \
		>"$T/acq.$i" &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "an acquire through the mount failed"; done
t_mount=$(($(now_ms) - t0))
NAMES=()
for i in $(seq 1 16); do
	st=$(head -n 1 "$T/acq.$i")
	[ "$st" = OK ] || fail "acquire $i: $(cat "$T/acq.$i")"
	NAMES+=("$(jget "$(tail -n +2 "$T/acq.$i")" name)")
done
t0=$(now_ms)
pids=()
for i in $(seq 1 16); do
	"$MAFSBX_CLI" acquire --scope "$SCOPE" --thread "c$i" --agent a --kind k --image "$IMAGE" >"$T/cacq.$i" &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "mafsbx acquire failed"; done
t_cli=$(($(now_ms) - t0))
log "16 cold acquires: mount $t_mount ms, mafsbx acquire $t_cli ms"
within "$t_mount" "$t_cli" || fail "16 acquires through the mount took $t_mount ms, over 1.5x the CLI's $t_cli ms"

# --- 2. concurrent execs ------------------------------------------------------------
t0=$(now_ms)
pids=()
for i in $(seq 0 15); do
	"$MFS_TOOL" ctl "$M/.ctl/exec" "{\"sandbox\": \"${NAMES[$i]}\", \"argv\": [\"sleep\", \"2\"]}" >"$T/ex.$i" &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "an exec through the mount failed"; done
t_mount=$(($(now_ms) - t0))
for i in $(seq 0 15); do
	[ "$(head -n 1 "$T/ex.$i")" = OK ] || fail "exec $i: $(cat "$T/ex.$i")"
done
t0=$(now_ms)
pids=()
for i in $(seq 0 15); do
	"$MAFSBX_CLI" exec "${NAMES[$i]}" -- sleep 2 </dev/null &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "mafsbx exec failed"; done
t_cli=$(($(now_ms) - t0))
log "16 concurrent 2 s execs: mount $t_mount ms, mafsbx exec $t_cli ms"
within "$t_mount" "$t_cli" || fail "16 execs through the mount took $t_mount ms, over 1.5x the CLI's $t_cli ms"

# --- 3. file calls beside long execs (local plane) -----------------------------------
Q=${NAMES[15]}
run_exec "$M" "$Q" "head -c 1024 /dev/zero > one.bin"
expect_eq "$CTL_STATUS" OK "write one.bin"
# cost: median microseconds of 40 stat+read pairs (mfs_tool times them itself)
idle=$("$MFS_TOOL" timecalls "$M/$Q/work/one.bin" 40) || fail "timecalls (idle)"
pids=()
for i in $(seq 0 7); do
	"$MFS_TOOL" ctl "$M/.ctl/exec" "{\"sandbox\": \"${NAMES[$i]}\", \"argv\": [\"sleep\", \"10\"]}" >/dev/null &
	pids+=($!)
done
sleep 1
busy=$("$MFS_TOOL" timecalls "$M/$Q/work/one.bin" 40) || fail "timecalls (busy)"
for p in "${pids[@]}"; do wait "$p"; done
log "stat+read of 1 KiB: idle ${idle} us, beside 8 running execs ${busy} us (median of 40)"
# twice, with 200 us of slack for a 2-core machine's scheduling noise
[ "$busy" -le $((idle * 2 + 200)) ] || fail "a stat and a read cost $busy us beside 8 execs, $idle us idle"

# --- 4. the cap: transactions wait their turn, lookups are never starved --------------
fusermount3 -u "$M" || fail "unmount"
wait_exit "$DAEMON_PID" 10 || fail "the daemon did not exit"
# attr_timeout=0: every stat of the storm is a round trip to the daemon
mount_fs "$M" -o "image=$IMAGE,scope=$SCOPE,max_requests=4,attr_timeout=0"
t0=$(now_ms)
pids=()
for i in $(seq 0 5); do
	"$MFS_TOOL" ctl "$M/.ctl/exec" "{\"sandbox\": \"${NAMES[$i]}\", \"argv\": [\"sleep\", \"3\"]}" >"$T/cap.$i" &
	pids+=($!)
done
sleep 0.5
ts=$(now_ms)
"$MFS_TOOL" storm "$M/${NAMES[15]}/work/one.bin" 64 20 || fail "the lookup storm failed"
storm=$(($(now_ms) - ts))
for p in "${pids[@]}"; do wait "$p"; done
all=$(($(now_ms) - t0))
for i in $(seq 0 5); do
	[ "$(head -n 1 "$T/cap.$i")" = OK ] || fail "exec $i past the cap was not run: $(cat "$T/cap.$i")"
done
log "max_requests=4: 6 execs of 3 s took $all ms; 64 x 20 lookups beside them $storm ms"
[ "$all" -ge 5500 ] || fail "6 execs of 3 s under max_requests=4 took $all ms: the cap did not hold"
[ "$storm" -lt 2500 ] || fail "64 x 20 lookups took $storm ms beside the transactions: starved"

# --- 5. failures reach the caller -----------------------------------------------------
idiom() {   # idiom FILE REQUEST: the shell read-back idiom's exit status
	(exec 3<>"$1" && printf '%s' "$2" >&3 2>/dev/null && cat <&3 >/dev/null)
}
idiom "$M/.ctl/exec" '{"sandbox": ' && fail "a malformed request succeeded through the idiom"
idiom "$M/.ctl/exec" '{"sandbox": "maf-sandbox-docker-000000000000", "argv": ["true"]}' &&
	fail "an unknown sandbox succeeded through the idiom"
idiom "$M/.ctl/exec" "{\"sandbox\": \"${NAMES[14]}\", \"argv\": [\"sleep\", \"5\"], \"timeout\": 1}" &&
	fail "an exec timeout succeeded through the idiom"
python3 - "$M" <<'PY' || fail "Python's os calls did not see the errno"
import errno, os, sys
m = sys.argv[1]
fd = os.open(m + "/.ctl/exec", os.O_RDWR)
try:
    os.write(fd, b'{"sandbox": "maf-sandbox-docker-000000000000", "argv": ["true"]}')
    sys.exit("os.write of an unknown sandbox succeeded")
except OSError as e:
    assert e.errno == errno.ENOENT, e
reply = os.read(fd, 65536)
assert b'"ENOENT"' in reply, reply
os.close(fd)
fd = os.open(m + "/.ctl/exec", os.O_RDWR)
try:
    os.write(fd, b'{"argv": ')
    os.close(fd)
    sys.exit("close of an unfinished request succeeded")
except OSError as e:
    assert e.errno == errno.EINVAL, e
PY
log "PASS"
