#!/bin/bash
# faults.sh: engine faults in the middle of file calls and execs, injected
# by the fault relay between the mount and the (shared, untouched) dockerd.
#
# Scenarios: the engine connection cut in the middle of an archive GET (a
# read), of an archive PUT (a write), of an exec's stream, and of a pause
# and an unpause (the engine acted and the answer is lost; or the request
# never arrived); answers stalled past the
# stream stall cut-off (GET) and past an exec's timeout; an engine restart
# (every connection cut and the socket gone for 4 s, then back) in the
# middle of a read; new connections refused; the end of a background mount
# (SIGTERM) while a file call waits on a stalled answer and an exec streams.
# dockerd itself is never restarted: it is shared, so the relay plays the
# restarted engine.
#
# After each one: the faulted call either failed with an errno of the
# table (EIO, ENOTCONN, ETIMEDOUT, EBUSY) or succeeded with exactly the
# right bytes; no container of this run is left paused (asked on the real
# socket, within a few seconds); no partial file in the guest (a file is
# its old or its new content, whole); the mount answers; the next read,
# write and exec work.
#
# FAULT_ONLY="GROUP..." runs some groups: get put pause exec restart
# teardown (the default). FAULT_SLOW=1 adds the answers delayed past the 60 s request
# timeout (a pause and an unpause answer; group pause) and a PUT body
# stalled for 25 s (group put), over a minute each.
. "$(dirname "$0")/lib.sh"
require_relay_env

PROBLEMS=()
problem() {
	log "PROBLEM: $*"
	PROBLEMS+=("$*")
}

start_relay
M=$T/mnt
mount_relayed "$M"
PID=$DAEMON_PID

acquire "$M" t a k ', "outputs": ["big.bin", "small.txt"]'
N=$SBX
head -c 1048576 /dev/urandom >"$T/big.bin"
head -c 1048576 /dev/urandom >"$T/new.bin"
BIG_SHA=$(sha_of "$T/big.bin")
NEW_SHA=$(sha_of "$T/new.bin")
cp "$T/big.bin" "$M/$N/work/big.bin" || fail "setup: cannot write big.bin"
echo small >"$M/$N/work/small.txt" || fail "setup: cannot write small.txt"
expect_eq "$(guest_sum "$M" "$N" big.bin)" "1048576 $BIG_SHA" "setup: big.bin in the guest"

# read_outcome PATH: "OK <sha256>" when one whole read (one open) through the
# mount worked, else the errno name of its failure
read_outcome() {
	if timeout 120 cat "$1" >"$T/read.out" 2>"$T/read.err"; then
		echo "OK $(sha_of "$T/read.out")"
		return
	fi
	case "$(cat "$T/read.err")" in
	*"Input/output error"*) echo EIO ;;
	*"Transport endpoint is not connected"*) echo ENOTCONN ;;
	*"timed out"*) echo ETIMEDOUT ;;
	*"Device or resource busy"*) echo EBUSY ;;
	*"No such file"*) echo ENOENT ;;
	*) echo "FAILED($(tr '\n' ' ' <"$T/read.err"))" ;;
	esac
}

# after SCENARIO: the checks that follow every fault
after() {
	local what=$1
	rctl clear >/dev/null
	kill -0 "$PID" 2>/dev/null || fail "$what: the daemon died"
	is_mounted "$M" || fail "$what: the mount went away"
	if ! wait_unpaused 15; then
		problem "$what: a container of this run is still paused 15 s after the call returned"
		"$MFS_TOOL" paused "$SCOPE" >/dev/null
	elif [ "$UNPAUSED_AFTER_MS" -gt 500 ]; then
		log "$what: the container was unpaused only ${UNPAUSED_AFTER_MS} ms after the call returned"
	fi
	timeout 60 ls "$M" | grep -qx "$N" || problem "$what: the root does not list $N afterwards"
	local st
	st=$(timeout 60 cat "$M/$N/status") || problem "$what: status unreadable afterwards"
	local got
	got=$(read_outcome "$M/$N/work/small.txt")
	[ "${got%% *}" = OK ] || problem "$what: the next read failed: $got"
	got=$(timeout 60 "$MFS_TOOL" try write "$M/$N/work/next.txt" "next-$what")
	[ "$got" = OK ] || problem "$what: the next write failed: $got"
	run_exec "$M" "$N" "cat next.txt"
	[ "$CTL_STATUS" = OK ] && [ "$(jget "$CTL_REPLY" stdout)" = "next-$what" ] ||
		problem "$what: the next exec failed: $CTL_STATUS $CTL_REPLY"
	# a write's staged copy (.mafsbx-put-*) is removed once the engine answers
	run_exec "$M" "$N" "ls -a"
	case "$(jget "$CTL_REPLY" stdout)" in
	*.mafsbx-put-*) problem "$what: a staged copy is left in the guest: $(jget "$CTL_REPLY" stdout | tr '\n' ' ')" ;;
	esac
	log "$what: done"
}

# expect_read_fault WHAT OUTCOME [ALLOWED-ERRNOS]: a faulted read either failed
# with an allowed errno or gave exactly big.bin
expect_read_fault() {
	local what=$1 got=$2 allowed=${3:-EIO ENOTCONN ETIMEDOUT EBUSY}
	case "$got" in
	"OK $BIG_SHA") log "$what: the read succeeded with the right bytes" ;;
	OK*) problem "$what: the read succeeded with WRONG bytes ($got)" ;;
	*)
		if [[ " $allowed " == *" $got "* ]]; then
			log "$what: the read failed with $got"
		else
			problem "$what: the read failed with $got, want one of: $allowed"
		fi
		;;
	esac
}

ARCH='*/archive[?]path=*'

# --- reads: cut and stalled archive GETs ----------------------------------
scenarios_get() {

	rule cut GET "$ARCH" resp=300000
	expect_read_fault "cut mid-GET" "$(read_outcome "$M/$N/work/big.bin")"
	[ "$(fired "$RULE")" = 1 ] || problem "cut mid-GET: the fault never fired"
	after "cut mid-GET"

	rule cut GET "$ARCH" resp=100
	expect_read_fault "cut in the GET's answer header" "$(read_outcome "$M/$N/work/big.bin")"
	after "cut in the GET's answer header"

	rule cut GET "$ARCH" req=10
	expect_read_fault "cut in the GET request" "$(read_outcome "$M/$N/work/big.bin")"
	after "cut in the GET request"

	# The stream stall cut-off is 10 s: a GET answer stalled for 12 s mid-body.
	t0=$(date +%s)
	rule stall GET "$ARCH" resp=200000 ms=12000
	expect_read_fault "GET stalled past the stall cut-off" "$(read_outcome "$M/$N/work/big.bin")" "EIO ETIMEDOUT"
	el=$(($(date +%s) - t0))
	[ "$el" -le 40 ] || problem "GET stalled past the stall cut-off: the read took $el s"
	after "GET stalled past the stall cut-off"
}

# --- writes: cut and stalled archive PUTs -------------------------------------
# write_fault WHAT: write new.bin over big.bin with a fault armed; the guest
# file must then be the old or the new content, whole.
write_fault() {
	local what=$1 st=0
	timeout 120 cp "$T/new.bin" "$M/$N/work/big.bin" 2>"$T/cp.err" || st=$?
	local sum
	sum=$(guest_sum "$M" "$N" big.bin)
	case "$sum" in
	"1048576 $BIG_SHA") log "$what: the write failed ($(cat "$T/cp.err")); the guest file is the old content" ;;
	"1048576 $NEW_SHA")
		[ "$st" = 0 ] && log "$what: the write succeeded" ||
			log "$what: the write reported failure ($(cat "$T/cp.err")) but the new content is whole in the guest"
		;;
	*) problem "$what: PARTIAL file in the guest after the write ($([ "$st" = 0 ] && echo reported ok || cat "$T/cp.err")): size+sha $sum" ;;
	esac
	# put the old content back for the next scenario
	rctl clear >/dev/null
	cp "$T/big.bin" "$M/$N/work/big.bin" || fail "$what: cannot restore big.bin"
}

# The answer to a PUT lost: the engine wrote the file, the call must not
# claim otherwise with a partial file left.
scenarios_put() {
	rule cut PUT "$ARCH" resp=0
	write_fault "PUT answer lost"
	[ "$(fired "$RULE")" = 1 ] || problem "PUT answer lost: the fault never fired"
	after "PUT answer lost"

	# The connection cut in the middle of the PUT body. The engine extracts a
	# tar as it arrives: without staging, the target was left truncated.
	rule cut PUT "$ARCH" req=400000
	write_fault "cut mid-PUT"
	[ "$(fired "$RULE")" = 1 ] || problem "cut mid-PUT: the fault never fired"
	after "cut mid-PUT"

	# libcurl re-sends a PUT once when its reused connection died: cut both.
	rule cut PUT "$ARCH" req=400000 count=2
	write_fault "cut mid-PUT, twice"
	[ "$(fired "$RULE")" -ge 1 ] || problem "cut mid-PUT, twice: the fault never fired"
	after "cut mid-PUT, twice"

	# The engine stops reading the body for 25 s: the stall cut-off (10 s)
	# ends the call; the engine, reading on, has only a partial staged copy.
	if [ "${FAULT_SLOW:-0}" = 1 ]; then
		t0=$(date +%s)
		rule stall PUT "$ARCH" req=300000 ms=25000
		write_fault "PUT body stalled past the stall cut-off"
		el=$(($(date +%s) - t0))
		[ "$el" -le 60 ] || problem "PUT body stalled past the stall cut-off: the write took $el s"
		after "PUT body stalled past the stall cut-off"
	fi
}

# --- pause and unpause ----------------------------------------------------------
scenarios_pause() {
	rule cut POST '*/pause' resp=0
	expect_read_fault "pause answer lost" "$(read_outcome "$M/$N/work/big.bin")"
	[ "$(fired "$RULE")" = 1 ] || problem "pause answer lost: the fault never fired"
	after "pause answer lost"

	rule cut POST '*/pause' req=0
	expect_read_fault "pause request lost" "$(read_outcome "$M/$N/work/big.bin")"
	after "pause request lost"

	rule cut POST '*/unpause' resp=0
	expect_read_fault "unpause answer lost" "$(read_outcome "$M/$N/work/big.bin")"
	[ "$(fired "$RULE")" = 1 ] || problem "unpause answer lost: the fault never fired"
	after "unpause answer lost"

	rule cut POST '*/unpause' req=0
	expect_read_fault "unpause request lost" "$(read_outcome "$M/$N/work/big.bin")"
	after "unpause request lost"

	# Three unpause requests lost in a row: the janitor retries with backoff
	# until the engine answers; no later file call is needed to thaw.
	rule cut POST '*/unpause' req=0 count=3
	expect_read_fault "three unpause requests lost" "$(read_outcome "$M/$N/work/big.bin")"
	after "three unpause requests lost"

	if [ "${FAULT_SLOW:-0}" = 1 ]; then
		rule stall POST '*/pause' resp=0 ms=70000
		expect_read_fault "pause answer delayed past the request timeout" "$(read_outcome "$M/$N/work/big.bin")"
		after "pause answer delayed past the request timeout"
		rule stall POST '*/unpause' resp=0 ms=70000
		expect_read_fault "unpause answer delayed past the request timeout" "$(read_outcome "$M/$N/work/big.bin")"
		after "unpause answer delayed past the request timeout"
	fi
}

# --- exec streams -------------------------------------------------------------
# exec_fault WHAT: an exec printing "first", then (after 2 s) "second", with
# a fault armed on its stream. A success must carry the whole output.
exec_fault() {
	local what=$1
	run_exec "$M" "$N" "echo first; sleep ${EXEC_FAULT_SLEEP:-2}; echo second"
	local out
	out=$(jget "$CTL_REPLY" stdout)
	case "$CTL_STATUS" in
	OK)
		[ "$out" = $'first\nsecond' ] || problem "$what: the exec SUCCEEDED with output '$out' (want first, second)"
		;;
	EIO | ENOTCONN | ETIMEDOUT) log "$what: the exec failed with $CTL_STATUS: $(jget "$CTL_REPLY" error.message)" ;;
	*) problem "$what: the exec gave $CTL_STATUS ($CTL_REPLY)" ;;
	esac
	# the guest's command ends on its own; no file call overlaps its exit
	sleep $((${EXEC_FAULT_SLEEP:-2} + 1))
}

scenarios_exec() {
	rule cut POST '*/exec/*/start' resp=0
	exec_fault "exec start answer lost"
	after "exec start answer lost"

	# The output stream cut 0.8 s in, the command running on for 3.2 s (past
	# the 2 s grace): the output is incomplete, so the exec must not be a
	# success. (A command that ends within the grace of a cut is the window
	# that remains: doc/security.md.)
	rule cut POST '*/exec/*/start' resp=1 ms=800
	EXEC_FAULT_SLEEP=4 exec_fault "exec stream cut after the first output"
	[ "$(fired "$RULE")" = 1 ] || problem "exec stream cut: the fault never fired"
	after "exec stream cut after the first output"

	# An exec's answer stalled past its own timeout: ETIMEDOUT; the engine
	# runs on this host (the relay is a unix socket), so the command's
	# processes are killed and the sandbox kept, running, not paused
	# (doc/protocol.md); with "on_timeout": "dispose" it is disposed, as
	# upstream. On its own sandbox.
	acquire "$M" t a timeout-kind
	X=$SBX
	rule stall POST '*/exec/*/start' resp=0 ms=5000
	ctl "$M" exec "{\"sandbox\": \"$X\", \"argv\": [\"true\"], \"timeout\": 2}"
	[ "$CTL_STATUS" = ETIMEDOUT ] || problem "exec stalled past its timeout: got $CTL_STATUS ($CTL_REPLY)"
	expect_eq "$(jget "$CTL_REPLY" timed_out)" true "exec stalled past its timeout: timed_out"
	expect_eq "$(jget "$CTL_REPLY" sandbox_disposed)" false "exec stalled past its timeout: sandbox_disposed"
	rctl clear >/dev/null
	st=$("$MFS_TOOL" state "$X")
	[ "$st" = running ] || problem "exec stalled past its timeout: $X is $st, not kept running"
	rule stall POST '*/exec/*/start' resp=0 ms=5000
	ctl "$M" exec "{\"sandbox\": \"$X\", \"argv\": [\"true\"], \"timeout\": 2, \"on_timeout\": \"dispose\"}"
	[ "$CTL_STATUS" = ETIMEDOUT ] || problem "exec stalled past its timeout, dispose: got $CTL_STATUS ($CTL_REPLY)"
	rctl clear >/dev/null
	[ "$("$MFS_TOOL" state "$X")" = absent ] || problem "exec stalled past its timeout: $X was not disposed (on_timeout dispose)"
	after "exec stalled past its timeout"
}

# --- the engine restarting, and refusing ----------------------------------------
scenarios_restart() {
	# A read in flight (its answer stalled) when the engine goes away for 4 s.
	rule stall GET "$ARCH" resp=100000 ms=3000
	(read_outcome "$M/$N/work/big.bin" >"$T/inflight") &
	RD=$!
	"$FAULT_RELAY" wait "$RELAY_CTL" "$RULE" 30 || problem "engine restart: the read never reached the GET"
	sleep 0.5
	rctl down 4000 >/dev/null
	wait "$RD"
	expect_read_fault "engine restart during a read" "$(cat "$T/inflight")"
	got=$(timeout 60 "$MFS_TOOL" try read "$M/$N/work/small.txt")
	case "$got" in
	ENOTCONN | EIO) ;;
	OK*) log "engine restart: a read while down succeeded (the restart was over already?)" ;;
	*) problem "engine restart: a read while down gave $got, want ENOTCONN or EIO" ;;
	esac
	sleep 4
	expect_read_fault "after the engine restart" "$(read_outcome "$M/$N/work/big.bin")" "none"
	after "engine restart during a read"

	rctl refuse 3000 >/dev/null
	got=$(timeout 60 "$MFS_TOOL" try read "$M/$N/work/small.txt")
	case "$got" in
	ENOTCONN | EIO | OK*) log "new connections refused: read gave $got" ;;
	*) problem "new connections refused: a read gave $got" ;;
	esac
	sleep 3
	after "new connections refused"
}

# --- the end of a mount with a stalled engine -------------------------------------
# A background mount (as users make it) gets SIGTERM while a lookup waits on
# a stalled archive HEAD (a plain request: only the 60 s request timeout
# would end it) in one sandbox and an exec's stream is open in another.
# From the session's end every engine call ends within 10 s (an unpause 5 s
# more), so the daemon exits within 20 s and leaves nothing paused. Before,
# it waited for the stalled answer's timeout, then for the exec: over 30 s.
scenarios_teardown() {
	local M2=$T/mnt2 pid2 x y t0 ms
	MOUNT_MODE=background mount_relayed "$M2"
	pid2=$DAEMON_PID
	acquire "$M2" t a end-read
	x=$SBX
	acquire "$M2" t a end-exec
	y=$SBX
	("$MFS_TOOL" ctl "$M2/.ctl/exec" "{\"sandbox\": \"$y\", \"command\": \"sleep 100\"}" >/dev/null 2>&1) &
	local ex=$!
	sleep 2 # the exec's stream is open
	rule stall HEAD "$ARCH" resp=0 ms=120000
	(timeout 150 stat "$M2/$x/work/absent.txt" >/dev/null 2>&1) &
	local rd=$!
	"$FAULT_RELAY" wait "$RELAY_CTL" "$RULE" 30 || problem "teardown: the lookup never reached the HEAD"
	t0=$(date +%s%N)
	kill -TERM "$pid2"
	if wait_exit "$pid2" 90; then
		ms=$((($(date +%s%N) - t0) / 1000000))
		log "teardown: the daemon exited $ms ms after SIGTERM with a stalled engine (load $(cut -d' ' -f1 /proc/loadavg))"
		[ "$ms" -le 20000 ] || problem "teardown: the daemon took $ms ms to exit after SIGTERM (want at most 20 s)"
	else
		problem "teardown: the daemon had not exited 90 s after SIGTERM"
	fi
	rctl clear >/dev/null
	wait "$rd" "$ex" 2>/dev/null
	is_mounted "$M2" && problem "teardown: $M2 is still mounted after the daemon's exit"
	wait_unpaused 15 || problem "teardown: a container of this run is still paused after the end"
}

for g in ${FAULT_ONLY:-get put pause exec restart teardown}; do
	log "=== scenarios: $g"
	"scenarios_$g"
done

# Nothing faulted: the file is whole, the daemon counted no lost unpause.
expect_read_fault "final read" "$(read_outcome "$M/$N/work/big.bin")" "none"
log "relay: $(rctl stats)"
umount_fs "$M" "$PID"
if ((${#PROBLEMS[@]})); then
	for p in "${PROBLEMS[@]}"; do
		log "FAILED: $p"
	done
	fail "${#PROBLEMS[@]} scenario check(s) failed"
fi
log "PASS"
