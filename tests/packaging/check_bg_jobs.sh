#!/usr/bin/env bash
# check_bg_jobs.sh SRCDIR: contrib/lib.sh's bg_start and bg_finish, with
# which contrib/test.sh waits for the platform images it starts making in the
# background half an hour earlier. Once such a job has ended and a later child
# of the same shell is given its PID, bash forgets the job's status and `wait
# PID` says 127 ("not a child of this shell"): what failed CI's cgroup v2
# stage, after more forks than pid_max. Here the PID is given again on purpose
# (/proc/sys/kernel/ns_last_pid, as root): plain `wait` must show the loss
# (else this test proves nothing), and bg_finish must still return the job's
# own status and output; a job killed before it could write its status is an
# error of its own (125), never a success.
set -euo pipefail
PROG=check_bg_jobs
# shellcheck source=contrib/lib.sh
. "$1/contrib/lib.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "must run as root (it writes /proc/sys/kernel/ns_last_pid)"

# reuse_pid PID: forks children of this shell until one is given PID (other
# processes of the machine may take it first: retried, bounded).
reuse_pid() {
	local want=$1 got i
	for i in $(seq 1 100); do
		echo $((want - 1)) >/proc/sys/kernel/ns_last_pid
		# a child in the foreground, as most of contrib/test.sh's are
		got=$(exec sh -c 'echo $$')
		[ "$got" != "$want" ] || return 0
	done
	fail "could not have PID $want given again in 100 forks"
}

# wait_ended DIR: until bg_start's job of DIR has written its status and
# is gone (reaped by this shell), at most 10 s.
wait_ended() {
	local dir=$1 i
	for i in $(seq 1 100); do
		[ -e "$dir/rc" ] && ! kill -0 "$(cat "$dir/pid")" 2>/dev/null && return 0
		sleep 0.1
	done
	fail "the job of $dir did not end in 10 s"
}

# 1. bash's own wait loses the status once the PID is given again.
sh -c 'exit 3' &
p=$!
sleep 0.5
reuse_pid "$p"
rc=0
wait "$p" 2>/dev/null || rc=$?
plain_rc=$rc
[ "$rc" != 3 ] || fail "plain wait still returned the job's 3 after its PID was given again: then this test shows nothing"

# 2. bg_finish keeps it.
job=
bg_start job sh -c 'echo "its output"; exit 3'
wait_ended "$job"
reuse_pid "$(cat "$job/pid")"
out=$(bg_finish "$job") && rc=0 || rc=$?
[ "$rc" = 3 ] || fail "bg_finish returned $rc after the PID was reused (expected the job's 3)"
[ "$out" = "its output" ] || fail "bg_finish printed '$out' (expected the job's output)"
[ ! -e "$job" ] || fail "bg_finish left $job"

# 3. a success is a success; a job still running is waited for.
bg_start job sh -c 'sleep 1; echo done'
out=$(bg_finish "$job") && rc=0 || rc=$?
[ "$rc" = 0 ] && [ "$out" = done ] || fail "a running job: bg_finish returned $rc, printed '$out'"

# 4. a job killed before it wrote its status is 125, with a message.
bg_start job sh -c 'sleep 30'
sleep 0.5
pkill -KILL -P "$(cat "$job/pid")" sleep || true
kill -KILL "$(cat "$job/pid")"
wait "$(cat "$job/pid")" 2>/dev/null || true
msg=$(bg_finish "$job" 2>&1) && rc=0 || rc=$?
[ "$rc" = 125 ] || fail "a killed job: bg_finish returned $rc (expected 125)"
case $msg in *"without an exit status"*) ;; *) fail "a killed job: bg_finish said '$msg'" ;; esac
echo "ok: bg_finish returns a job's status after its PID was given again (plain wait: $plain_rc)"
