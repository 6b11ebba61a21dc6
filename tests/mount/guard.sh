#!/bin/bash
# guard.sh: what a mount refuses to do or to hold:
#   1. dispose by name never removes a container that only has a sandbox's
#     name (no identity labels), scoped mount or not;
#   2. exec replies are bounded: a guest printing 16 MiB of \x01 does not make
#     the daemon build a ~100 MiB reply.
. "$(dirname "$0")/lib.sh"
require_env

M=$T/mnt
mount_fs "$M" -o scope="$SCOPE"
PID=$DAEMON_PID
U=$T/unscoped
mount_fs "$U"

# --- 1. a plain container named like a sandbox ----------------------------
PLAIN=$(MFS_HANDMADE_PLAIN=1 "$MFS_TOOL" handmade "$SCOPE" t a plain) || fail "cannot make the plain container"
case "$PLAIN" in maf-sandbox-docker-*) ;; *) fail "unexpected name $PLAIN" ;; esac
expect_ctl_error "$M" dispose "{\"name\": \"$PLAIN\"}" EACCES "not a sandbox"
expect_eq "$("$MFS_TOOL" state "$PLAIN")" running "a plain container is left alone (scoped mount)"
expect_ctl_error "$U" dispose "{\"name\": \"$PLAIN\"}" EACCES "not a sandbox"
expect_eq "$("$MFS_TOOL" state "$PLAIN")" running "a plain container is left alone (unscoped mount)"
# its key's dispose reports it and leaves it
ctl "$M" dispose "{\"scope\": \"$SCOPE\", \"thread\": \"t\", \"agent\": \"a\", \"kind\": \"plain\"}"
expect_eq "$(jget "$CTL_REPLY" disposed)" 0 "key dispose of a plain namesake"
expect_contains "$CTL_REPLY" "not a sandbox" "key dispose reports the plain namesake"
expect_eq "$("$MFS_TOOL" state "$PLAIN")" running "a plain container is left alone (key)"
# a real sandbox still goes by name
acquire "$M" t a real
ctl "$M" dispose "{\"name\": \"$SBX\"}"
expect_eq "$CTL_STATUS" OK "dispose a sandbox by name"
expect_eq "$(jget "$CTL_REPLY" disposed)" 1 "dispose a sandbox by name"
log "ok: dispose by name leaves non-sandboxes alone"

# --- 2. exec replies are bounded -----------------------------------------------
hwm() { awk '/^VmHWM/ { print $2 }' "/proc/$1/status"; }
acquire "$M" t a big
BIG=$SBX
before=$(hwm "$PID")
# the reply goes to a file: a shell variable of 12 MB is slow to slice
REQ="{\"sandbox\": \"$BIG\", \"command\": \"head -c 16777216 /dev/zero | tr '\\\\000' '\\\\001'\", \"timeout\": 120}"
"$MFS_TOOL" ctl "$M/.ctl/exec" "$REQ" >"$T/big.out"
after=$(hwm "$PID")
expect_eq "$(head -n 1 "$T/big.out")" OK "exec printing 16 MiB of \\x01"
tail -n +2 "$T/big.out" >"$T/big.json"
len=$(stat -c %s "$T/big.json")
fget() { "$MFS_TOOL" jget "$1" <"$T/big.json"; }
log "16 MiB of \\x01: reply ${len} bytes; daemon peak RSS ${before} -> ${after} KiB"
expect_eq "$(fget truncated)" true "output over the 8 MiB cap is truncated"
expect_eq "$(fget text_truncated)" true "the text view is cut"
fget stdout_b64 | tr -d "\n" >"$T/big.b64"
expect_eq "$(stat -c %s "$T/big.b64")" 11184812 "stdout_b64 holds all 8 MiB"
expect_eq "$(base64 -d <"$T/big.b64" | tr -d '\001' | wc -c)" 0 "the bytes are exact"
expect_eq "$(base64 -d <"$T/big.b64" | wc -c)" 8388608 "the bytes are exact"
# 8 MiB as base64 plus two views of at most 1 MiB of JSON each
[ "$len" -lt $((11184812 + 2 * 1048576 + 4096)) ] || fail "the reply is $len bytes: the views are not bounded"
# a mount with a small reply budget refuses the reply, not the mount
B=$T/budget
mount_fs "$B" -o scope="$SCOPE",reply_budget=8M
BPID=$DAEMON_PID
expect_ctl_error "$B" exec "$REQ" ENOMEM "its reply needs"
ctl "$B" exec "{\"sandbox\": \"$BIG\", \"command\": \"echo small\"}"
expect_eq "$CTL_STATUS" OK "a small reply within the budget"
expect_eq "$(jget "$CTL_REPLY" stdout)" small "a small reply within the budget"
expect_eq "$(jget "$CTL_REPLY" text_truncated)" false "a small reply is not cut"
kill -0 "$BPID" 2>/dev/null || fail "the budget mount died"
kill -0 "$PID" 2>/dev/null || fail "the daemon died"
log "ok: exec replies are bounded"
