#!/bin/bash
# loglevel.sh: -o loglevel=info through a real mount (its log is the
# daemon's stderr under -f):
#  - each .ctl transaction logs exactly one line, naming its kind, its
#    subject and how it ended (acquire, exec, dispose, a refused exec, a
#    request refused by the parser and one refused byte by byte), and none
#    carries the request's env or stdin;
#  - a pin decision (the local plane pins the sandbox's init) and freeze
#    decisions (-o frozen_reads: a read copies under one freeze: paused,
#    then unpaused) are logged, one line each;
#  - at the default level (warning) the same story logs none of those lines;
#  - a level that does not exist is refused before anything is mounted.
. "$(dirname "$0")/lib.sh"
require_env

M=$T/mnt
SECRET=s3cr3t-$RANDOM

# story: acquire, write and read a file, exec with env and stdin, a refused
# exec, a malformed request, dispose. Sets N.
story() {
	ctl "$M" acquire "{\"scope\": \"$SCOPE\", \"thread\": \"t1\", \"agent\": \"a\", \"kind\": \"k\", \"image\": \"$IMAGE\"}"
	expect_eq "$CTL_STATUS" OK "acquire ($CTL_REPLY)"
	N=$(jget "$CTL_REPLY" name)
	printf 'hello\n' >"$M/$N/work/f.txt" || fail "write f.txt"
	expect_eq "$(cat "$M/$N/work/f.txt")" hello "read f.txt"
	ctl "$M" exec "{\"sandbox\": \"$N\", \"argv\": [\"cat\"], \"env\": {\"K\": \"$SECRET\"}, \"stdin\": \"$SECRET\"}"
	expect_eq "$CTL_STATUS" OK "exec ($CTL_REPLY)"
	ctl "$M" exec "{\"sandbox\": \"maf-sandbox-docker-000000000000\", \"argv\": [\"true\"]}"
	expect_eq "$CTL_STATUS" ENOENT "exec in no sandbox"
	ctl "$M" dispose '{"name": "a", "name": "b"}'
	expect_eq "$CTL_STATUS" EINVAL "a duplicate member"
	ctl "$M" dispose 'hello'
	expect_eq "$CTL_STATUS" EINVAL "not JSON"
	ctl "$M" dispose "{\"name\": \"$N\"}"
	expect_eq "$CTL_STATUS" OK "dispose ($CTL_REPLY)"
}

# 1. loglevel=info (local plane, frozen reads: both a pin and freezes)
mount_fs "$M" -o loglevel=info,frozen_reads,plane=local
PID=$DAEMON_PID
LOG=$T/daemon.$(basename "$M").log
story
umount_fs "$M" "$PID"

grep -q "$SECRET" "$LOG" && fail "the log carries the request's env or stdin"
count() { grep -c -- "$1" "$LOG"; }
expect_eq "$(count "mafsbxfs: acquire: .*scope=$SCOPE .* -> ok state=created name=$N (")" 1 "the acquire's line"
expect_eq "$(count "mafsbxfs: exec: sandbox=$N program=cat -> ok exit_code=0 (")" 1 "the exec's line"
expect_eq "$(count "mafsbxfs: exec: sandbox=maf-sandbox-docker-000000000000 program=true -> ENOENT ")" 1 \
	"the refused exec's line"
expect_eq "$(count "mafsbxfs: dispose: -> EINVAL dispose: malformed JSON request at line 1 .*duplicate")" 1 \
	"the duplicate member's line"
expect_eq "$(count "mafsbxfs: dispose: -> EINVAL dispose: malformed JSON request: byte 0 ('h')")" 1 \
	"the refused byte's line"
expect_eq "$(count "mafsbxfs: dispose: name=$N -> ok disposed=1 failures=0 (")" 1 "the dispose's line"
expect_eq "$(grep -cE 'mafsbxfs: (acquire|exec|dispose): ' "$LOG")" 6 "one line per transaction"
[ "$(count "mafsbxfs: pin: sandbox .* pinned init PID [0-9]* (local plane)")" -ge 1 ] ||
	fail "no pin decision logged"
[ "$(count "mafsbxfs: freeze: [0-9a-f]\{12\} paused (a new freeze)")" -ge 1 ] || fail "no freeze logged"
[ "$(count "mafsbxfs: freeze: [0-9a-f]\{12\} unpaused (the last holder left)")" -ge 1 ] || fail "no unfreeze logged"
log "info: $(grep -cE 'mafsbxfs: (acquire|exec|dispose|pin|freeze): ' "$LOG") decision lines"

# 2. the default level: none of those lines
M2=$T/mnt2
M=$M2
mount_fs "$M" -o frozen_reads,plane=local
PID=$DAEMON_PID
LOG=$T/daemon.$(basename "$M").log
story
umount_fs "$M" "$PID"
if grep -qE 'mafsbxfs: (acquire|exec|dispose|pin|freeze): ' "$LOG"; then
	cat "$LOG" >&2
	fail "info lines at the default level"
fi

# 3. a level that does not exist
mkdir -p "$T/mnt3"
out=$("$MAFSBXFS" -f -o loglevel=chatty "$T/mnt3" 2>&1)
rc=$?
expect_eq "$rc" 2 "loglevel=chatty exit status"
expect_eq "$out" "mafsbxfs: -o loglevel=chatty: expected error, warning, info or debug
Try 'mafsbxfs --help' for more information." "loglevel=chatty message"
is_mounted "$T/mnt3" && fail "mounted with a bad loglevel"
log "ok"
