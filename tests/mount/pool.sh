#!/usr/bin/env bash
# pool.sh: the others' pool (mafsbxfs(1) -o max_open_per_user,
# max_calls_per_user; doc/security.md). A local user with subordinate ids
# (/etc/subuid) runs as many uids as it likes: 40 of them, made the way such
# a user makes them (`unshare -U --map-auto --map-root-user`, then `setpriv`
# to uids 1..40 of that namespace, host uids SUB..SUB+39), each holding
# opens, or calls that wait behind an exec, up to its own per-user bound.
# All users but the mounting one share one pool below the daemon's limits,
# so the mounting user still opens, reads and execs, and the daemon logs the
# full pool once:
#   1. open files: a daemon with 512 descriptors (pool 256, 128 per user);
#   2. engine-plane file calls behind a long exec, max_threads=16 (pool 8,
#      4 per user), while the mounting user reads another sandbox;
#   3. the same for local-plane reads with -o frozen_reads (each copy is
#      made under a freeze, so it waits behind the exec like a call).
# Before the pool, 40 uids took every descriptor (the mounting user's cat
# and exec failed) and every worker thread (its reads waited for the exec).
. "$(dirname "$0")/lib.sh"
require_env
for c in python3 setpriv unshare newuidmap useradd su; do
	command -v "$c" >/dev/null || skip_or_fail "$c is missing"
done

NUIDS=40
OWNER=mafsbxtest-subids
id "$OWNER" >/dev/null 2>&1 || useradd -m -s /bin/sh "$OWNER" || fail "useradd $OWNER"
# useradd gives the user a range where /etc/subuid exists; make one where it did not
for f in subuid subgid; do
	grep -q "^$OWNER:" "/etc/$f" 2>/dev/null && continue
	base=$(awk -F: '{ e = $2 + $3; if (e > m) m = e } END { print (m > 100000 ? m : 100000) }' "/etc/$f" 2>/dev/null)
	echo "$OWNER:${base:-100000}:65536" >>"/etc/$f" || fail "cannot give $OWNER a range in /etc/$f"
done
SUB=$(awk -F: -v u="$OWNER" '$1 == u { print $2; exit }' /etc/subuid)
[ -n "$SUB" ] || fail "no subordinate uids for $OWNER"

chmod 755 "$T"
HOLD=$T/hold
HOLDER=$T/holder.py
# holder.py MODE TARGET N OUT (run as one of the uids; U is its uid in the namespace):
#   open: open TARGET up to N times and hold what opened until OUT.release
#         appears (or OUT's directory goes); writes "PID OPENED REFUSED ERRNOS"
#   stat, read: N threads at once each stat (or open and read) TARGET with
#         {t} the thread's number and {u} the uid; writes "PID" then one
#         "ERRNO fast|slow" line per call (slow: it took over 3 s)
cat >"$HOLDER" <<'PY'
import errno, os, sys, threading, time
mode, target, n, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
u = os.getuid()
def name(e):
    return errno.errorcode.get(e.errno, str(e.errno))
def publish(text):
    with open(out + ".tmp", "w") as f:
        f.write(text)
    os.rename(out + ".tmp", out)
if mode == "open":
    fds, errs = [], {}
    for i in range(n):
        try:
            fds.append(os.open(target, os.O_RDONLY))
        except OSError as e:
            errs[name(e)] = errs.get(name(e), 0) + 1
    publish("%d %d %d %s\n" % (os.getpid(), len(fds), sum(errs.values()),
                               ",".join(sorted(errs)) or "-"))
    end = time.monotonic() + 180
    while time.monotonic() < end and os.path.isdir(os.path.dirname(out)) \
            and not os.path.exists(os.path.join(os.path.dirname(out), "release")):
        time.sleep(0.1)
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass   # the mount went away under us (a failed run's cleanup)
else:
    res = []
    def call(t):
        p = target.format(t=t, u=u)
        t0 = time.monotonic()
        try:
            if mode == "stat":
                os.stat(p)
            else:
                fd = os.open(p, os.O_RDONLY)
                os.read(fd, 16)
                os.close(fd)
            what = "OK"
        except OSError as e:
            what = name(e)
        res.append("%s %s" % (what, "slow" if time.monotonic() - t0 > 3 else "fast"))
    ts = [threading.Thread(target=call, args=(t,)) for t in range(1, n + 1)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    publish("%d\n%s\n" % (os.getpid(), "\n".join(res)))
PY
chmod 644 "$HOLDER"

# subids MODE TARGET N: $NUIDS holders, uids 1..$NUIDS of $OWNER's namespace, in the background
subids() {
	rm -rf "$HOLD"
	mkdir -p "$HOLD"
	chmod 1777 "$HOLD"
	su -s /bin/sh "$OWNER" -c "cd / && unshare -U --map-auto --map-root-user sh -c 'i=1; while [ \$i -le $NUIDS ]; do setpriv --reuid \$i --regid \$i --clear-groups python3 $HOLDER $1 \"$2\" $3 $HOLD/\$i & i=\$((i + 1)); done; wait'" &
	SUBIDS=$!
	BGPIDS+=("$SUBIDS")
}
# results N SECONDS: wait until N holders have written their results (1: not in time)
results() {
	local i
	for i in $(seq 1 $(($2 * 10))); do
		[ "$(find "$HOLD" -maxdepth 1 -name '[0-9]*' ! -name '*.tmp' | wc -l)" -ge "$1" ] && return 0
		sleep 0.1
	done
	return 1
}
# distinct_uids: the host uids of the holders (by the PIDs they wrote): all
# $NUIDS distinct and in $OWNER's range, or fail
distinct_uids() {
	local f pid uids
	uids=$(for f in "$HOLD"/[0-9]*; do
		pid=$(head -n 1 "$f" | cut -d' ' -f1)
		awk '/^Uid:/ { print $2 }' "/proc/$pid/status" 2>/dev/null
	done | sort -u)
	expect_eq "$(echo "$uids" | grep -c .)" "$NUIDS" "distinct host uids of the $NUIDS holders"
	echo "$uids" | awk -v lo="$SUB" '$1 < lo || $1 >= lo + 65536 { bad = 1 } END { exit bad }' ||
		fail "a holder ran outside $OWNER's subordinate range: $(echo $uids)"
}
# release: the open holders close and end
release() {
	touch "$HOLD/release"
	local i
	for i in $(seq 1 300); do
		kill -0 "$SUBIDS" 2>/dev/null || return 0
		sleep 0.1
	done
	fail "the holders did not end"
}
# mounter_works SANDBOX: the mounting user reads a file of SANDBOX, holds 20
# opens at once and runs an exec in it, each within 20 s
mounter_works() {
	local w=$M/$1/work out
	out=$(timeout 20 cat "$w/f.txt") || fail "the mounting user's cat of $1/work/f.txt failed or took over 20 s"
	expect_eq "$out" hello "the mounting user reads"
	out=$(timeout 20 python3 -c '
import os, sys
fds = [os.open(sys.argv[1], os.O_RDONLY) for _ in range(20)]
print(len(fds), os.read(fds[-1], 5).decode())' "$w/f.txt" 2>&1) || fail "the mounting user's 20 opens: $out"
	expect_eq "$out" "20 hello" "the mounting user holds 20 more opens"
	out=$(timeout 20 "$MFS_TOOL" ctl "$M/.ctl/exec" "{\"sandbox\": \"$1\", \"command\": \"cat f.txt\"}") ||
		fail "the mounting user's exec failed or took over 20 s: $out"
	expect_eq "$(echo "$out" | head -n 1)" OK "the mounting user's exec"
	expect_eq "$(echo "$out" | tail -n +2 | "$MFS_TOOL" jget stdout)" hello "the mounting user's exec output"
}
# pool_logged LOG WHAT: the daemon logged the full pool of WHAT exactly once
pool_logged() {
	local n
	n=$(grep -c "the others' pool is full: .* $2 on this mount" "$1")
	expect_eq "$n" 1 "log lines naming the full pool of $2"
}

# each part its own mount point, so its own daemon log ($T/daemon.NAME.log)
M=$T/opens
LOGF=$T/daemon.opens.log

# ---- 1. open files ---------------------------------------------------------------------
# 512 descriptors (soft and hard, so the daemon cannot raise it): the others'
# pool is 256 open files, 128 per user.
ulimit -n 512
mount_fs "$M" -o allow_other
acquire "$M" t a pool
A=$SBX
acquire "$M" t b pool
B=$SBX
echo hello >"$M/$A/work/f.txt" || fail "write $A/work/f.txt"
echo hello >"$M/$B/work/f.txt" || fail "write $B/work/f.txt"
subids open "$M/$A/work/f.txt" 200
results "$NUIDS" 120 || fail "the $NUIDS open holders did not report within 120 s"
distinct_uids
held=$(cat "$HOLD"/[0-9]* | awk '{ s += $2 } END { print s }')
most=$(cat "$HOLD"/[0-9]* | awk '$2 > m { m = $2 } END { print m + 0 }')
errs=$(cat "$HOLD"/[0-9]* | awk '{ print $4 }' | tr ',' '\n' | grep -v '^-$' | sort -u | tr '\n' ' ')
log "open files: $NUIDS uids hold $held (the most one holds: $most), refused with: $errs"
mounter_works "$B"
mounter_works "$A"
expect_eq "$held" 256 "the other users together hold the pool (half of 512 descriptors)"
[ "$most" -le 128 ] || fail "one uid holds $most opens, over its bound of 128"
expect_eq "$errs" "EMFILE " "the opens past the pool fail with"
pool_logged "$LOGF" "open files"
release
# once the others closed (the kernel sends their releases after the close), they open again
for i in $(seq 1 50); do
	out=$(setpriv --reuid "$SUB" --regid "$SUB" --clear-groups cat "$M/$A/work/f.txt" 2>&1) && break
	sleep 0.1
done
expect_eq "$out" hello "another uid opens once the pool has room"
umount_fs "$M" "$DAEMON_PID"

# calls_behind_exec MODE TARGET: a 60 s detached exec of A; $NUIDS uids make 4
# calls each (MODE, TARGET as holder.py takes them) that wait behind it; the
# mounting user reads B and execs meanwhile; then the exec is killed and
# every call answered. Sets CALLS (each call's "ERRNO fast|slow").
calls_behind_exec() {
	ctl "$M" exec "{\"sandbox\": \"$A\", \"detach\": true, \"command\": \"sleep 60\"}"
	[ "$CTL_STATUS" = OK ] || fail "detached exec: $CTL_STATUS $CTL_REPLY"
	local i pid
	for i in $(seq 1 100); do
		docker top "$A" 2>/dev/null | grep -q 'sleep 60' && break
		sleep 0.1
	done
	pid=$(docker top "$A" -o pid,args 2>/dev/null | awk '$2 == "sleep" && $3 == 60 { print $1; exit }')
	[ -n "$pid" ] || fail "the detached exec's sleep never ran"
	subids "$1" "$2" 4
	# the refused uids answer at once: all but the pool's worth (8 calls, at most 8 uids)
	if ! results $((NUIDS - 8)) 30; then
		log "after 30 s only $(find "$HOLD" -maxdepth 1 -name '[0-9]*' ! -name '*.tmp' | wc -l) of $NUIDS uids were answered: their calls all wait"
	fi
	mounter_works "$B"
	kill -KILL "$pid"
	results "$NUIDS" 90 || fail "the calls were not all answered within 90 s of the exec's end"
	CALLS=$(cat "$HOLD"/[0-9]* | grep -v '^[0-9]*$')
	log "$1 calls of $NUIDS uids behind an exec: $(echo "$CALLS" | sort | uniq -c | tr '\n' ';')"
	expect_eq "$(echo "$CALLS" | wc -l)" $((NUIDS * 4)) "calls answered"
	local waited
	waited=$(echo "$CALLS" | grep -vc '^EBUSY fast$')
	[ "$waited" -ge 1 ] && [ "$waited" -le 8 ] ||
		fail "$waited of the other users' calls were let wait, want 1 to 8 (the pool)"
	expect_eq "$(echo "$CALLS" | grep -c '^EBUSY fast$')" $((NUIDS * 4 - waited)) "the others' calls past the pool are EBUSY at once"
}

# ---- 2. engine-plane calls ---------------------------------------------------------------
# 16 worker threads: the others' pool is 8 calls that may wait, 4 per user.
M=$T/calls
LOGF=$T/daemon.calls.log
PLANE=engine mount_fs "$M" -o allow_other,max_threads=16,attr_timeout=60
PLANE=local
# The kernel takes lookups in one directory one at a time: each call looks
# up in a directory of its own, looked up (and its attributes cached) by the
# mounting user before the exec.
run_exec "$M" "$A" "i=1; while [ \$i -le $NUIDS ]; do for t in 1 2 3 4; do mkdir -p c\$i-\$t; done; i=\$((i + 1)); done"
[ "$CTL_STATUS" = OK ] || fail "mkdir the call directories: $CTL_STATUS $CTL_REPLY"
for i in $(seq 1 $NUIDS); do
	for t in 1 2 3 4; do
		[ -d "$M/$A/work/c$i-$t" ] || fail "no directory c$i-$t"
	done
done
calls_behind_exec stat "$M/$A/work/c{u}-{t}/absent"
echo "$CALLS" | grep -v '^EBUSY fast$' | grep -vq '^ENOENT ' && fail "a call let wait was not answered ENOENT"
pool_logged "$LOGF" "file calls that may wait"
umount_fs "$M" "$DAEMON_PID"

# ---- 3. -o frozen_reads -------------------------------------------------------------------
M=$T/frozen
LOGF=$T/daemon.frozen.log
mount_fs "$M" -o allow_other,frozen_reads,max_threads=16
for i in 1 2 3 4; do echo hello >"$M/$A/work/r$i.txt" || fail "write r$i.txt"; done
calls_behind_exec read "$M/$A/work/r{t}.txt"
echo "$CALLS" | grep -v '^EBUSY fast$' | grep -vq '^OK ' && fail "a read let wait failed"
pool_logged "$LOGF" "file calls that may wait"
umount_fs "$M" "$DAEMON_PID"
log "ok"
