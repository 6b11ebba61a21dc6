#!/bin/bash
# budgets.sh: no read of a virtual file, in any number of opens and
# threads, grows the daemon past its budgets; one sandbox's finished execs
# never starve another's output (doc/protocol.md "Budgets"):
#   1. 20 opens x 16 concurrent 1-byte preads of a detached exec's `wait`
#      (8 MiB of stdout, 8 MiB of stderr): the daemon's RSS moves by less
#      than 64 MiB; the same against NAME/status and NAME/egress (one text
#      per object, shared by its handles, counted against the reply budget);
#   2. a small reply budget: a `wait` whose reply needs more is ENOMEM,
#      logged naming the budget, and the daemon stays as it was;
#   3. one sandbox's 32 finished execs of 16 MiB each (a 64 MiB spool
#      budget): another sandbox's 1 MiB exec output is whole;
#   4. the spool budget's shares on the engine plane (8 MiB): another user
#      holds at most a quarter of it, one sandbox at most half, and the
#      mounting user still opens files of another sandbox;
#   5. .ctl replies held unread count against the reply budget: past it the
#      write is ENOMEM (the reply says the command ran), and once the
#      replies are read and their files closed, execs answer again.
. "$(dirname "$0")/lib.sh"
require_env
command -v python3 >/dev/null || skip_or_fail "python3 is missing"

OTHER=mafsbxtest-other
id "$OTHER" >/dev/null 2>&1 || useradd -M -s /bin/sh "$OTHER" || fail "useradd"
chmod 755 "$T"

M=$T/mnt
# A 64 MiB spool budget: the 32 execs of part 3 hold eight times that.
mount_fs "$M" -o "image=$IMAGE,scope=$SCOPE,spool_budget=64M"
acquire "$M" t a x
A=$SBX
acquire "$M" t b x
B=$SBX

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$DAEMON_PID/status"; }

# hammer FILE: 20 times: open, 16 threads pread(fd, 1, 0) at once, close.
# Prints the bytes each round's reads got, or the errno of a failed one.
hammer() {
	python3 - "$1" <<'PY'
import os, sys, threading
out = []
for _ in range(20):
    fd = os.open(sys.argv[1], os.O_RDONLY)
    got = []
    def one():
        try:
            got.append(len(os.pread(fd, 1, 0)))
        except OSError as e:
            got.append(os.strerror(e.errno))
    ts = [threading.Thread(target=one) for _ in range(16)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    os.close(fd)
    out.append(",".join(sorted(set(str(g) for g in got))))
print(" ".join(sorted(set(out))))
PY
}

# rss_bound WHAT FILE [BYTES]: hammer FILE; every pread got BYTES (default 1);
# the RSS grows by less than 64 MiB
rss_bound() {
	local before after got
	before=$(rss_kib)
	got=$(hammer "$2") || fail "$1: the reads failed: $got"
	expect_eq "$got" "${3:-1}" "$1: every 1-byte pread's answer"
	after=$(rss_kib)
	log "$1: RSS $((before / 1024)) MiB -> $((after / 1024)) MiB"
	[ $((after - before)) -lt $((64 * 1024)) ] ||
		fail "$1: 320 reads grew the daemon by $(((after - before) / 1024)) MiB"
}

# detach SANDBOX COMMAND: a detached exec; sets XID
detach() {
	ctl "$M" exec "{\"sandbox\": \"$1\", \"detach\": true, \"command\": \"$2\"}"
	[ "$CTL_STATUS" = OK ] || fail "detached exec in $1 ($2): $CTL_STATUS $CTL_REPLY"
	XID=$(jget "$CTL_REPLY" exec)
}

BIG="head -c 8388608 /dev/zero; head -c 8388608 /dev/zero >&2"   # 16 MiB of output

# --- 1. wait, status, egress: one text per object ------------------------------------------
detach "$A" "$BIG"
W=$M/$A/execs/$XID/wait
timeout 120 cat "$W" >/dev/null || fail "the first wait read"
rss_bound "wait of 16 MiB of output" "$W"
got=$(timeout 60 python3 -c 'import base64, json, sys
r = json.load(open(sys.argv[1]))
print(len(base64.b64decode(r["stdout_b64"])), len(base64.b64decode(r["stderr_b64"])))' "$W") || fail "wait after the reads"
expect_eq "$got" "8388608 8388608" "the reply still holds all of the output"
rss_bound "status" "$M/$A/status"
# egress: a closed sandbox's log is empty (every read at EOF); its one text is shared all the same
rss_bound "egress" "$M/$A/egress" 0
log "ok: 320 reads of wait, status and egress each"

# --- 2. a reply past the reply budget -------------------------------------------------------
M2=$T/mnt2
mount_fs "$M2" -o "image=$IMAGE,scope=$SCOPE,reply_budget=16M"
D2=$DAEMON_PID
ctl "$M2" exec "{\"sandbox\": \"$A\", \"detach\": true, \"command\": \"$BIG\"}"
[ "$CTL_STATUS" = OK ] || fail "detached exec on the small budget: $CTL_STATUS $CTL_REPLY"
X2=$(jget "$CTL_REPLY" exec)
timeout 120 cat "$M2/$A/execs/$X2/stdout" >/dev/null
expect_errno "a wait past the reply budget" ENOMEM read "$M2/$A/execs/$X2/wait"
daemon_log_has "$T/daemon.$(basename "$M2").log" "replies being built hold" ||
	fail "the refusal is not logged naming the budget"
umount_fs "$M2" "$D2"
log "ok: a wait past the reply budget is ENOMEM, logged"

# --- 3. finished execs never starve another sandbox ---------------------------------------
# 32 finished execs of A with 16 MiB of output each: eight times the 64 MiB budget.
for i in $(seq 1 32); do
	detach "$A" "$BIG"
	timeout 120 cat "$M/$A/execs/$XID/stdout" >/dev/null
	until [ "$(jget "$(cat "$M/$A/execs/$XID/status")" running)" = false ]; do sleep 0.1; done
done
st=$(cat "$M/$A/execs/$XID/status")
expect_eq "$(jget "$st" stdout_bytes) $(jget "$st" stderr_bytes)" "8388608 8388608" "the newest of A's execs keeps its output"
expect_eq "$(jget "$st" truncated)" false "the newest of A's execs is whole"
detach "$B" "head -c 1048576 /dev/zero | tr '\\\\0' x"
timeout 60 cat "$M/$B/execs/$XID/wait" >/dev/null || fail "wait of B's exec"
st=$(cat "$M/$B/execs/$XID/status")
expect_eq "$(jget "$st" truncated)" false "B's exec beside A's 32 finished ones: truncated"
expect_eq "$(jget "$st" stdout_bytes)" 1048576 "B's exec's stdout"
expect_eq "$(tr -d x <"$M/$B/execs/$XID/stdout" | wc -c) $(wc -c <"$M/$B/execs/$XID/stdout")" "0 1048576" "B's output read back"
log "ok: B's 1 MiB beside A's 32 finished execs of 16 MiB is whole"

# --- 4. the spool budget's shares -----------------------------------------------------------
M4=$T/mnt4
PLANE=engine mount_fs "$M4" -o "allow_other,burst_ms=0,scope=$SCOPE,spool_budget=8M"
PLANE=local
D4=$DAEMON_PID
for s in "$A" "$B"; do
	head -c 1048576 /dev/urandom >"$M4/$s/work/one.bin" || fail "write 1 MiB into $s"
done
# hold FILE FLAG: opens FILE 20 times, holding what opens; prints "OPENED
# REFUSED" (refused: ENOMEM), then holds them until FLAG exists
cat >"$T/hold.py" <<'PY'
import errno, os, sys, time
fds, refused = [], 0
for i in range(20):
    try:
        fds.append(os.open(sys.argv[1], os.O_RDONLY))
    except OSError as e:
        if e.errno != errno.ENOMEM:
            raise
        refused += 1
print(len(fds), refused, flush=True)
while not os.path.exists(sys.argv[2]):
    time.sleep(0.1)
PY
chmod 644 "$T/hold.py"
su -s /bin/sh "$OTHER" -c "python3 '$T/hold.py' '$M4/$A/work/one.bin' '$T/done'" >"$T/other.out" 2>&1 &
HOLD1=$!
BGPIDS+=("$HOLD1")
for i in $(seq 1 300); do [ -s "$T/other.out" ] && break; sleep 0.1; done
expect_eq "$(cat "$T/other.out")" "2 18" "another user's opens of 1 MiB: a quarter of the 8 MiB budget"
# the mounting user, while the other user holds its share: A holds at most half the budget
python3 "$T/hold.py" "$M4/$A/work/one.bin" "$T/done2" >"$T/own.out" 2>&1 &
HOLD2=$!
BGPIDS+=("$HOLD2")
for i in $(seq 1 300); do [ -s "$T/own.out" ] && break; sleep 0.1; done
expect_eq "$(cat "$T/own.out")" "2 18" "the mounting user's opens of A's file: A's half of the budget is full"
# ... and B, another sandbox, still has room for the mounting user
got=$(python3 - "$M4/$B/work/one.bin" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
print(len(os.read(fd, 2 << 20)))
os.close(fd)
PY
) || fail "the mounting user's open of B's file: $got"
expect_eq "$got" 1048576 "the mounting user reads B's file beside the full shares"
touch "$T/done" "$T/done2"
wait "$HOLD1" "$HOLD2"
umount_fs "$M4" "$D4"
log "ok: another user holds a quarter of the spool budget, a sandbox half, the mounting user the rest"

# --- 5. .ctl replies held for reading ------------------------------------------------------
M5=$T/mnt5
mount_fs "$M5" -o "scope=$SCOPE,reply_budget=64M"
D5=$DAEMON_PID
# 12 execs of 4 MiB of output, each reply (about 7 MiB) held unread on its own
# open file: 84 MiB, past the 64 MiB budget
got=$(python3 - "$M5/.ctl/exec" "$A" <<'PY'
import errno, json, os, sys
req = json.dumps({"sandbox": sys.argv[2], "command": "head -c 4194304 /dev/zero | tr '\\0' a"}).encode()
fds, res = [], []
for i in range(12):
    fd = os.open(sys.argv[1], os.O_RDWR)
    fds.append(fd)
    try:
        os.write(fd, req + b"\n")
        res.append("OK")
    except OSError as e:
        res.append(errno.errorcode[e.errno])
held = 0
for fd, r in zip(fds, res):
    reply = b""
    while True:
        b = os.read(fd, 1 << 20)
        if not b:
            break
        reply += b
    o = json.loads(reply)
    if r == "OK":
        held += len(reply)
    elif "the request ran" not in o["error"]["message"] and "exec in" not in o["error"]["message"]:
        print("unexplained", r, o["error"]["message"])
for fd in fds:
    os.close(fd)
print(res.count("OK"), res.count("ENOMEM"), held <= 64 << 20)
PY
) || fail "the held replies: $got"
log "held replies: $got (held, refused, within the budget)"
read -r ok refused within <<<"$got"
[ "$refused" -ge 1 ] || fail "12 replies of 7 MiB held within a 64 MiB reply budget: none refused ($got)"
expect_eq "$((ok + refused))" 12 "every write answered OK or ENOMEM"
expect_eq "$within" True "the replies held together fit the budget"
daemon_log_has "$T/daemon.$(basename "$M5").log" "of the mount's" || fail "the refusal is not logged naming the budget"
run_exec "$M5" "$A" "echo again"
expect_eq "$CTL_STATUS" OK "an exec once the replies are closed"
umount_fs "$M5" "$D5"
log "ok: .ctl replies held unread count against the reply budget"
