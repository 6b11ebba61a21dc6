#!/usr/bin/env bash
# access.sh: who may use a mount (mafsbxfs(1) OPTIONS, allow_other and
# max_open_per_user):
#   with -o allow_other, another local (unprivileged) user cannot run a
#   request, cannot write into a sandbox, and sees sandbox files with the
#   mount's -o uid/gid/umask, never the guest's owner;
#   with -o umask=077 another user reads no command output (execs/),
#   status or egress log either (EACCES);
#   another user holds at most -o max_open_per_user open files (EMFILE);
#   on the engine plane another user has at most -o max_calls_per_user file
#   calls waiting at once (EBUSY past it), e.g. behind a long exec;
#   the engine plane's open spools share one budget: past it an open fails
#   with ENOMEM before anything is fetched (no freeze of the guest), and
#   once files are closed opens work again; the local plane's
#   -o frozen_reads copies count against the same budget.
. "$(dirname "$0")/lib.sh"
require_env
command -v python3 >/dev/null || skip_or_fail "python3 is missing"

OTHER=mafsbxtest-other
id "$OTHER" >/dev/null 2>&1 || useradd -M -s /bin/sh "$OTHER" || fail "useradd"
as_other() { su -s /bin/sh "$OTHER" -c "$1"; }

M=$T/mnt
chmod 755 "$T"
mount_fs "$M" -o allow_other
acquire "$M" t a access
N=$SBX
W=$M/$N/work
echo secret >"$W/f.txt" || fail "write as the mounting user"
expect_eq "$(stat -c '%U %a' "$M/.ctl/exec")" "root 600" ".ctl/exec is the mounting user's, 0600"
expect_eq "$(stat -c '%u:%g %a' "$W/f.txt")" "0:0 644" "a sandbox file shows the mount's owner and umask"
REQ="{\"sandbox\": \"$N\", \"command\": \"touch /maf-sandbox/work/pwned\"}"
if as_other "printf '%s' '$REQ' > '$M/.ctl/exec'" 2>/dev/null; then
	fail "another user ran an exec"
fi
if as_other "echo '{\"name\": \"$N\"}' > '$M/.ctl/dispose'" 2>/dev/null; then
	fail "another user disposed a sandbox"
fi
[ -e "$W/pwned" ] && fail "the other user's exec ran"
as_other "echo x > '$W/f.txt'" 2>/dev/null && fail "another user wrote into a sandbox"
as_other "echo x > '$W/new.txt'" 2>/dev/null && fail "another user created a file in a sandbox"
as_other "rm -f '$W/f.txt'" 2>/dev/null
[ -e "$W/f.txt" ] || fail "another user removed a sandbox file"
expect_eq "$(as_other "cat '$W/f.txt'")" secret "another user may read what the modes allow"
# and so the output of a command (0444 & ~022, as a sandbox file)
ctl "$M" exec "{\"sandbox\": \"$N\", \"detach\": true, \"command\": \"cat f.txt\"}"
[ "$CTL_STATUS" = OK ] || fail "detached exec: $CTL_STATUS $CTL_REPLY"
X=$M/$N/execs/$(jget "$CTL_REPLY" exec)
cat "$X/wait" >/dev/null || fail "wait for the detached exec"
expect_eq "$(as_other "cat '$X/stdout'")" secret "another user reads a command's output where the umask allows"
umount_fs "$M" "$DAEMON_PID"

# -o uid/gid/umask: shown as given, and enforced for the other user
mount_fs "$M" -o "allow_other,uid=$(id -u "$OTHER"),gid=$(id -g "$OTHER"),umask=077"
expect_eq "$(stat -c '%U %a' "$W/f.txt")" "$OTHER 600" "-o uid/umask shown"
expect_eq "$(as_other "cat '$W/f.txt'")" secret "the owner named by -o uid reads"
umount_fs "$M" "$DAEMON_PID"

# ---- -o umask governs every file of a sandbox -----------------------------------------
# With allow_other,umask=077 another user reads nothing of a sandbox: not
# its files, nor its status, its egress log, or a command's output under
# execs/ (shown with the owner and umask of the sandbox's files: 0400, the
# directories 0500). Before, those were 0444 whatever the umask, so another
# user read the output of `cat f.txt`, a file the umask hid from it.
mount_fs "$M" -o allow_other,umask=077
ctl "$M" exec "{\"sandbox\": \"$N\", \"detach\": true, \"command\": \"cat f.txt; echo err >&2\"}"
[ "$CTL_STATUS" = OK ] || fail "detached exec: $CTL_STATUS $CTL_REPLY"
X=$M/$N/execs/$(jget "$CTL_REPLY" exec)
cat "$X/wait" >/dev/null || fail "wait for the detached exec"
expect_eq "$(cat "$X/stdout")" secret "the mounting user reads the command's output"
out=$(as_other "python3 - '$X' '$M/$N'" <<'PY'
import errno, os, sys
x, n = sys.argv[1], sys.argv[2]
for p in [x + "/stdout", x + "/stderr", x + "/status", x + "/wait", n + "/status", n + "/egress", n + "/work/f.txt"]:
    try:
        with open(p, "rb") as f:
            f.read(1)
        what = "read"
    except OSError as e:
        what = errno.errorcode.get(e.errno, str(e.errno))
    print(os.path.relpath(p, n), what)
for d in [n + "/execs", x]:
    try:
        os.listdir(d)
        what = "listed"
    except OSError as e:
        what = errno.errorcode.get(e.errno, str(e.errno))
    print(os.path.relpath(d, n), what)
PY
) || fail "the other user's reads: $out"
log "another user, umask=077: $(echo $out)"
expect_eq "$(echo "$out" | awk '{ print $2 }' | sort -u)" EACCES "another user's reads and listings of the sandbox's files"
expect_eq "$(stat -c '%u %a' "$X/stdout" "$X/stderr" "$X/status" "$X/wait" "$M/$N/status" "$M/$N/egress" | sort -u)" \
	"0 400" "the owner and modes of the exec's files, status and egress"
expect_eq "$(stat -c '%u %a' "$X" "$M/$N/execs" | sort -u)" "0 500" "the owner and modes of execs/ and execs/ID"
umount_fs "$M" "$DAEMON_PID"

# ---- open files per user ------------------------------------------------------------
# Another user may hold at most -o max_open_per_user files open (EMFILE past
# it, the daemon's own descriptors untouched); the mounting user is not
# counted, and closing gives the other user its opens back. Before the bound,
# ~1000 opens by another user took every descriptor of the daemon.
mount_fs "$M" -o allow_other,max_open_per_user=40
# other_opens N: as the other user, open f.txt N times, holding them (the
# virtual directories hold nothing and are not counted); prints "OPENED REFUSED_EMFILE", then after closing all, one more open's result
other_opens() {
	as_other "python3 - '$W/f.txt' '$M' $1" <<'PY'
import errno, os, sys
fds, emfile = [], 0
for i in range(int(sys.argv[3])):
    try:
        fds.append(os.open(sys.argv[1], os.O_RDONLY))
    except OSError as e:
        if e.errno != errno.EMFILE:
            raise
        emfile += 1
print(len(fds), emfile)
sys.stdout.flush()
# while the other user holds its share, the mounting user is not refused
os.system("cat " + sys.argv[1] + " >/dev/null 2>&1 || echo 'MOUNTER-REFUSED'")
for fd in fds:
    os.close(fd)
fd = os.open(sys.argv[1], os.O_RDONLY)
print("again", os.read(fd, 100).decode().strip())
PY
}
out=$(other_opens 60) || fail "the other user's opens failed: $out"
expect_eq "$(echo "$out" | head -n 1)" "40 20" "another user holds 40 opens (the bound), 20 more are EMFILE"
expect_eq "$(echo "$out" | tail -n 1)" "again secret" "after closing, the other user opens again"
# the mounting user, holding more than the bound at once, is never refused
out=$(python3 - "$W/f.txt" <<'PY'
import os, sys
fds = [os.open(sys.argv[1], os.O_RDONLY) for _ in range(60)]
print(len(fds))
PY
) || fail "the mounting user was refused an open: $out"
expect_eq "$out" 60 "the mounting user holds 60 opens"
daemon_log_has "$T/daemon.$(basename "$M").log" "uid $(id -u "$OTHER") holds 40 open files on this mount" ||
	fail "the refusal is not logged naming the user"
umount_fs "$M" "$DAEMON_PID"

# ---- engine-plane calls per user ----------------------------------------------------
# A file call on the engine plane waits for its freeze while an exec of the
# sandbox runs, on a FUSE worker thread. Another user may have at most
# -o max_calls_per_user of them waiting (EBUSY past it, logged once naming
# the uid): 6 lookups in 6 directories behind a 20 s detached exec, with a
# bound of 2, are 2 that wait for the exec and 4 refused at once. Before the
# bound all 6 waited (and enough of them held every worker thread). A
# detached exec is answered before its thread registers it with the freezer
# and starts it (fs/execs.c): the lookups start once its `sleep` runs in the
# guest, or on a loaded machine they can take their freezes before it.
PLANE=engine mount_fs "$M" -o allow_other,max_calls_per_user=2,attr_timeout=60
PLANE=local
for i in 1 2 3 4 5 6; do mkdir -p "$W/calls$i" || fail "mkdir calls$i"; done
ctl "$M" exec "{\"sandbox\": \"$N\", \"detach\": true, \"command\": \"sleep 20\"}"
[ "$CTL_STATUS" = OK ] || fail "detached exec: $CTL_STATUS $CTL_REPLY"
for i in $(seq 1 100); do
	docker top "$N" 2>/dev/null | grep -q 'sleep 20' && break
	sleep 0.1
done
docker top "$N" 2>/dev/null | grep -q 'sleep 20' || fail "the detached exec's sleep never ran"
out=$(as_other "python3 - '$W'" <<'PY'
import errno, os, sys, threading, time
res = []
def look(i):
    t0 = time.monotonic()
    try:
        os.stat(os.path.join(sys.argv[1], "calls%d" % i, "absent"))
        what = "found"
    except OSError as e:
        what = errno.errorcode.get(e.errno, str(e.errno))
    res.append((what, time.monotonic() - t0))
ts = [threading.Thread(target=look, args=(i,)) for i in range(1, 7)]
for t in ts:
    t.start()
for t in ts:
    t.join()
for what, secs in sorted(res):
    print(what, "slow" if secs > 2 else "fast")
PY
) || fail "the other user's lookups: $out"
log "another user's lookups behind an exec: $(echo $out)"
expect_eq "$(echo "$out" | grep -c '^EBUSY fast$')" 4 "4 of another user's 6 waiting calls are refused at once"
expect_eq "$(echo "$out" | grep -c '^ENOENT slow$')" 2 "2 of them (the bound) wait for the exec and get their answer"
daemon_log_has "$T/daemon.$(basename "$M").log" "uid $(id -u "$OTHER") has 2 engine-plane file calls waiting" ||
	fail "the refusal is not logged naming the user"
# the mounting user is not counted: once the other user's calls are done, it still looks up
expect_errno "the mounting user's lookup" ENOENT stat "$W/calls1/absent2"
umount_fs "$M" "$DAEMON_PID"

# ---- the spool budget -------------------------------------------------------------
# hold_opens FILE: opens FILE 200 times and holds what opens; prints
# "OPENED REFUSED" (refused: ENOMEM), closes all, then the size one more
# open reads
hold_opens() {
	python3 - "$1" <<'PY'
import errno, os, sys
fds, refused = [], 0
for i in range(200):
    try:
        fds.append(os.open(sys.argv[1], os.O_RDONLY))
    except OSError as e:
        if e.errno != errno.ENOMEM:
            raise
        refused += 1
print(len(fds), refused)
for fd in fds:
    os.close(fd)
fd = os.open(sys.argv[1], os.O_RDONLY)
print(len(os.read(fd, 2 << 20)))
os.close(fd)
PY
}
# check_budget OUT WHAT: the opens past 8 MiB of 1 MiB spools were ENOMEM
check_budget() {
	read -r opened refused got <<<"$(echo $1)"
	[ "$opened" -ge 1 ] && [ "$opened" -le 8 ] || fail "$2: opened $opened spools of 1 MiB within an 8 MiB budget"
	expect_eq "$refused" $((200 - opened)) "$2: the opens past the budget are ENOMEM"
	expect_eq "$got" 1048576 "$2: after closing, an open works again"
}

# The engine plane: burst_ms=0 makes every fetch its own freeze, so the
# engine's pause events count the fetches.
PLANE=engine mount_fs "$M" -o burst_ms=0,spool_budget=8M
PLANE=local
head -c 1048576 /dev/urandom >"$T/one"
cp "$T/one" "$W/one.bin" || fail "write 1 MiB"
since=$(date +%s.%N)
out=$(hold_opens "$W/one.bin") || fail "engine plane opens: $out"
check_budget "$out" "engine plane"
until=$(date -d '+1 sec' +%s.%N)
sleep 1.2
pauses=$(docker events --since "$since" --until "$until" --filter "container=$N" --filter event=pause \
	--format '{{.Status}}' | wc -l)
# the held opens and the last one fetched; lookups (1 s attribute cache) freeze too
[ "$pauses" -ge "$opened" ] || fail "$pauses freezes counted for $opened fetches: the count is broken"
[ "$pauses" -le $((opened + 20)) ] || fail "$pauses freezes for $opened fetches: refused opens fetched"
log "engine plane: $opened opens held, $refused refused with ENOMEM, $pauses freezes"
umount_fs "$M" "$DAEMON_PID"

# The local plane's -o frozen_reads copies count against the same budget.
mount_fs "$M" -o frozen_reads,spool_budget=8M
out=$(hold_opens "$W/one.bin") || fail "frozen_reads opens: $out"
check_budget "$out" "frozen_reads"
log "ok: frozen_reads: $opened copies held, $refused refused with ENOMEM"
