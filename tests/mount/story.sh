#!/bin/bash
# story.sh: the user story of README.md "Using it from an agent", from a shell, through a real mount
# over the real engine: mount; acquire with declared outputs; exec a command
# writing result.json and plots/fig.txt; `ls MOUNT` shows the sandbox;
# `ls MOUNT/NAME/work` shows the declared outputs; `cat` returns their bytes;
# `cp` a file in and read it back through exec; by-scope/ links to it;
# `rmdir MOUNT/NAME` removes the container; unmount; a remount shows the
# sandboxes that remain (their declared outputs kept in the label); a
# fire-and-forget `echo ... > .ctl/dispose` removes the rest.
. "$(dirname "$0")/lib.sh"
require_env

M=$T/mnt
mount_fs "$M"
PID=$DAEMON_PID
grep -q " $M .* - fuse.mafsbxfs mafsbxfs " /proc/self/mountinfo || fail "mountinfo does not show fuse.mafsbxfs"

# --- acquire, the shell idiom of doc/protocol.md "The transactions" ----
REQ="{\"scope\": \"$SCOPE\", \"thread\": \"t1\", \"agent\": \"analyst\", \"kind\": \"python\", \"image\": \"$IMAGE\", \"outputs\": [\"result.json\", \"plots/fig.txt\"]}"
exec 3<>"$M/.ctl/acquire"
printf '%s' "$REQ" >&3 || fail "acquire write failed"
REPLY_LINE=$(cat <&3)
exec 3>&-
expect_eq "$(jget "$REPLY_LINE" ok)" true "acquire ok ($REPLY_LINE)"
N=$(jget "$REPLY_LINE" name)
expect_eq "$(jget "$REPLY_LINE" path)" "$N" "acquire path"
expect_eq "$(jget "$REPLY_LINE" state)" created "acquire state"
expect_eq "$(jget "$REPLY_LINE" work_dir)" /maf-sandbox/work "acquire work_dir"
[ -n "$(jget "$REPLY_LINE" id)" ] || fail "acquire reply has no id"
jget "$REPLY_LINE" uid | grep -qE '^[0-9]+$' || fail "acquire reply uid"
jget "$REPLY_LINE" gid | grep -qE '^[0-9]+$' || fail "acquire reply gid"
case "$N" in maf-sandbox-docker-????????????) ;; *) fail "odd sandbox name $N" ;; esac

# The same key again is reused.
exec 3<>"$M/.ctl/acquire"
printf '%s' "$REQ" >&3 || fail "second acquire write failed"
R2=$(cat <&3)
exec 3>&-
expect_eq "$(jget "$R2" name)" "$N" "re-acquire name"
expect_eq "$(jget "$R2" state)" reused "re-acquire state"

ls "$M" | grep -qx "$N" || fail "ls MOUNT does not show $N"
expect_eq "$(readlink "$M/by-scope/$SCOPE/t1/analyst/python")" "../../../../$N" "by-scope link"
[ -d "$M/by-scope/$SCOPE/t1/analyst/python/work" ] || fail "by-scope link does not lead to the sandbox"
# the modes are the kinds' rows (fs/rows.h): by-scope's levels 0555, its links 0777
expect_eq "$(stat -c %A "$M/by-scope" "$M/by-scope/$SCOPE" "$M/by-scope/$SCOPE/t1/analyst" | tr '\n' ' ')" \
	"dr-xr-xr-x dr-xr-xr-x dr-xr-xr-x " "the modes of by-scope's levels"
expect_eq "$(stat -c %A "$M/by-scope/$SCOPE/t1/analyst/python")" lrwxrwxrwx "the mode of a by-scope link"

# --- exec writes the outputs ------------------------------------------------
exec 3<>"$M/.ctl/exec"
printf '%s' "{\"sandbox\": \"$N\", \"command\": \"mkdir -p plots && printf '{\\\"answer\\\": 42}\\\\n' > result.json && echo figure-1 > plots/fig.txt && echo done\"}" >&3 ||
	fail "exec write failed"
X=$(cat <&3)
exec 3>&-
expect_eq "$(jget "$X" ok)" true "exec ok ($X)"
expect_eq "$(jget "$X" exit_code)" 0 "exec exit code"
expect_eq "$(jget "$X" stdout)" "done" "exec stdout"
expect_eq "$(jget "$X" stdout_b64)" "$(printf 'done\n' | base64)" "exec stdout_b64"
expect_eq "$(jget "$X" timed_out)" false "exec timed_out"
expect_eq "$(jget "$X" truncated)" false "exec truncated"
jget "$X" duration_ms | grep -qE '^[0-9]+$' || fail "exec duration_ms"

# --- browse and read --------------------------------------------------------
expect_eq "$(ls "$M/$N" | tr "\\n" " ")" "egress execs root status work " "ls NAME"
expect_eq "$(ls "$M/$N/work" | tr '\n' ' ')" "plots result.json " "ls NAME/work"
expect_eq "$(ls "$M/$N/work/plots")" "fig.txt" "ls NAME/work/plots"
expect_eq "$(cat "$M/$N/work/result.json")" '{"answer": 42}' "cat result.json"
expect_eq "$(cat "$M/$N/work/plots/fig.txt")" "figure-1" "cat plots/fig.txt"
[ "$(stat -c %s "$M/$N/work/result.json")" = 15 ] || fail "result.json size"
[ -d "$M/$N/work/plots" ] || fail "plots is not a directory"
ST=$(cat "$M/$N/status")
expect_eq "$(jget "$ST" name)" "$N" "status name"
expect_eq "$(jget "$ST" state)" running "status state"
expect_eq "$(jget "$ST" paused)" false "status paused"
expect_eq "$(jget "$ST" kind)" python "status kind"
expect_eq "$(jget "$ST" key.scope)" "$SCOPE" "status key.scope"
expect_eq "$(jget "$ST" egress)" closed "status egress"
expect_eq "$(jget "$ST" outputs)" '["result.json","plots/fig.txt"]' "status outputs"

# --- cp in, read back through exec and through the mount ----------------------
head -c 300000 /dev/urandom >"$T/in.bin"
cp "$T/in.bin" "$M/$N/work/in.bin" || fail "cp into work/"
SUM=$(sha256sum <"$T/in.bin" | cut -d' ' -f1)
run_exec "$M" "$N" "sha256sum in.bin"
expect_eq "$CTL_STATUS" OK "exec sha256sum"
expect_eq "$(jget "$CTL_REPLY" stdout | cut -d' ' -f1)" "$SUM" "the copied file inside the sandbox"
cmp -s "$T/in.bin" "$M/$N/work/in.bin" || fail "the copied file read back through the mount differs"
ls "$M/$N/work" | grep -qx in.bin || fail "a file written through the mount is not listed"
mkdir "$M/$N/work/made" || fail "mkdir under work/"
echo hi >"$M/$N/work/made/hi.txt" || fail "write into a new directory"
expect_eq "$(cat "$M/$N/work/made/hi.txt")" hi "read back made/hi.txt"

# --- a second sandbox that survives the remount --------------------------------
acquire "$M" t1 analyst shell ', "outputs": ["keep.txt"]'
KEEP=$SBX
run_exec "$M" "$KEEP" "echo kept > keep.txt"
expect_eq "$CTL_STATUS" OK "exec in the second sandbox"

# --- rmdir disposes ------------------------------------------------------------
rmdir "$M/$N" || fail "rmdir MOUNT/NAME"
expect_eq "$("$MFS_TOOL" state "$N")" absent "container after rmdir"
ls "$M" | grep -qx "$N" && fail "the disposed sandbox is still listed"
[ -e "$M/$N" ] && fail "the disposed sandbox can still be looked up"
no_paused

# --- unmount, remount ----------------------------------------------------------
umount_fs "$M" "$PID"
mount_fs "$M"
PID=$DAEMON_PID
ls "$M" | grep -qx "$KEEP" || fail "the remaining sandbox is not shown after a remount"
ls "$M" | grep -qx "$N" && fail "the disposed sandbox came back"
expect_eq "$(ls "$M/$KEEP/work")" keep.txt "declared outputs survive the remount (label)"
expect_eq "$(cat "$M/$KEEP/work/keep.txt")" kept "cat after the remount"

# --- fire-and-forget dispose of the conversation --------------------------------
echo "{\"scope\": \"$SCOPE\", \"thread\": \"t1\"}" >"$M/.ctl/dispose" || fail "echo > .ctl/dispose failed"
expect_eq "$("$MFS_TOOL" state "$KEEP")" absent "container after dispose"
ls "$M" | grep -qx "$KEEP" && fail "the disposed sandbox is still listed"
# Disposing what is gone is success with disposed 0.
ctl "$M" dispose "{\"name\": \"$KEEP\"}"
expect_eq "$CTL_STATUS" OK "dispose of a gone sandbox"
expect_eq "$(jget "$CTL_REPLY" disposed)" 0 "disposed count"
expect_eq "$(jget "$CTL_REPLY" failures)" "[]" "dispose failures"

umount_fs "$M" "$PID"
log "PASS"
