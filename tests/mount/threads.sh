#!/bin/bash
# threads.sh: long requests cannot starve lookups.
#
# A .ctl request holds a FUSE worker thread for as long as it runs (an exec
# up to its timeout). The kernel runs the writes to ONE file one at a time
# (it holds the inode lock across a FUSE write), so requests on one .ctl
# file queue in the kernel without taking workers; requests on different
# .ctl files run side by side, at most max_threads minus a reserve at once
# (unit test fs_ctl checks the EBUSY refusal past that). With the smallest
# pool (-o max_threads=4: two for requests, two in reserve) and long
# requests running on .ctl/exec and .ctl/acquire while more execs queue,
# lookups, listings and reads are still served.
. "$(dirname "$0")/lib.sh"
require_env

M=$T/mnt
mount_fs "$M" -o max_threads=4
PID=$DAEMON_PID
acquire "$M" t a long ', "outputs": ["f.txt"]'
N=$SBX
run_exec "$M" "$N" "echo content > f.txt"
expect_eq "$CTL_STATUS" OK "exec setup"

for i in 1 2 3; do
	"$MFS_TOOL" ctl "$M/.ctl/exec" "{\"sandbox\": \"$N\", \"argv\": [\"sleep\", \"3\"]}" >"$T/long.$i" &
	BGPIDS+=($!)
done
# an acquire that waits on a missing image's pull at the same time
"$MFS_TOOL" ctl "$M/.ctl/acquire" "{\"scope\": \"$SCOPE\", \"thread\": \"t\", \"agent\": \"a\", \"kind\": \"pull\", \"image\": \"mafsbx/no-such-image-$SCOPE:latest\"}" >"$T/pull" &
BGPIDS+=($!)
sleep 1

timeout 10 ls "$M" | grep -qx "$N" || fail "the root listing starved behind the requests"
expect_eq "$(timeout 10 cat "$M/$N/work/f.txt")" content "a read starved behind the requests"
expect_eq "$(timeout 10 ls "$M/$N/work")" f.txt "a work/ listing starved behind the requests"
timeout 10 cat "$M/.ctl/engine" >/dev/null || fail ".ctl/engine starved behind the requests"
timeout 10 cat "$M/$N/status" >/dev/null || fail "status starved behind the requests"

for p in "${BGPIDS[@]}"; do
	wait "$p"
done
for i in 1 2 3; do
	expect_eq "$(head -n1 "$T/long.$i")" OK "long exec $i"
done
expect_eq "$(head -n1 "$T/pull")" ENOENT "acquire of a missing image"
no_paused
umount_fs "$M" "$PID"
log "PASS"
