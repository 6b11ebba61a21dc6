#!/bin/bash
# interop.sh: the engine's labels are the record. Sandboxes created by hand
# through the plain Engine API with the Python backend's naming and labels
# (no mafsbxfs involved) appear in the root listing and in by-scope/ of a
# running mount at once, call-scoped ones as KIND@CALL; a proxy container
# (maf-sandbox.role=proxy) is not a sandbox; -o scope shows only its scope.
. "$(dirname "$0")/lib.sh"
require_env

M=$T/mnt
mount_fs "$M"
PID=$DAEMON_PID

H=$("$MFS_TOOL" handmade "$SCOPE" thread-1 devops-engineer bicep) || fail "cannot create a sandbox by hand"
HC=$("$MFS_TOOL" handmade "$SCOPE" thread-1 devops-engineer bicep c1) || fail "cannot create a call-scoped sandbox by hand"
HP=$(MFS_HANDMADE_PROXY=1 "$MFS_TOOL" handmade "$SCOPE" thread-1 devops-engineer bicep) || fail "cannot create a proxy by hand"
[ "$HP" = "$H-proxy" ] || fail "proxy name $HP"

# Upstream names: the same algorithm as the Python backend (names.c vectors).
case "$H" in maf-sandbox-docker-????????????) ;; *) fail "odd name $H" ;; esac

L=$(ls "$M")
grep -qx "$H" <<<"$L" || fail "the hand-made sandbox is not in the root listing"
grep -qx "$HC" <<<"$L" || fail "the hand-made call-scoped sandbox is not in the root listing"
grep -qx "$HP" <<<"$L" && fail "a proxy is listed as a sandbox"
expect_errno "a proxy is not a sandbox" ENOENT stat "$M/$HP"

expect_eq "$(ls "$M/by-scope/$SCOPE")" thread-1 "by-scope/SCOPE"
expect_eq "$(ls "$M/by-scope/$SCOPE/thread-1")" devops-engineer "by-scope/SCOPE/THREAD"
expect_eq "$(ls "$M/by-scope/$SCOPE/thread-1/devops-engineer" | tr '\n' ' ')" "bicep bicep@c1 " "by-scope/SCOPE/THREAD/AGENT"
expect_eq "$(readlink "$M/by-scope/$SCOPE/thread-1/devops-engineer/bicep")" "../../../../$H" "by-scope link"
expect_eq "$(readlink "$M/by-scope/$SCOPE/thread-1/devops-engineer/bicep@c1")" "../../../../$HC" "call-scoped link"
[ -L "$M/by-scope/$SCOPE/thread-1/devops-engineer/bicep" ] || fail "by-scope entry is not a symlink"
ST=$(cat "$M/by-scope/$SCOPE/thread-1/devops-engineer/bicep/status") || fail "status through the by-scope link"
expect_eq "$(jget "$ST" name)" "$H" "status name"
expect_eq "$(jget "$ST" kind)" bicep "status kind"
expect_eq "$(jget "$ST" key.thread)" thread-1 "status key.thread"
expect_eq "$(jget "$ST" work_dir)" /maf-sandbox/work "status work_dir (label)"
expect_eq "$(jget "$(cat "$M/$HC/status")" key.call)" c1 "call-scoped status key.call"

# A mount with -o scope shows only that scope.
OTHER="${SCOPE}-other"
EXTRA_SCOPES+=("$OTHER")
HO=$("$MFS_TOOL" handmade "$OTHER" t a k) || fail "cannot create a sandbox in another scope"
M2=$T/mnt-scoped
mount_fs "$M2" -o "scope=$SCOPE"
PID2=$DAEMON_PID
L2=$(ls "$M2")
grep -qx "$H" <<<"$L2" || fail "the scoped mount does not show its scope's sandbox"
grep -qx "$HO" <<<"$L2" && fail "the scoped mount shows another scope's sandbox"
expect_errno "another scope's sandbox in a scoped mount" ENOENT stat "$M2/$HO"
expect_eq "$(ls "$M2/by-scope")" "$SCOPE" "by-scope of a scoped mount"
grep -qx "$HO" <<<"$(ls "$M")" || fail "the unscoped mount does not show the other scope"
ctl "$M2" exec "{\"sandbox\": \"$HO\", \"argv\": [\"true\"]}"
expect_eq "$CTL_STATUS" ENOENT "exec in another scope's sandbox through a scoped mount"
ctl "$M2" acquire "{\"scope\": \"$OTHER\", \"thread\": \"t\", \"agent\": \"a\", \"kind\": \"k\", \"image\": \"$IMAGE\"}"
expect_eq "$CTL_STATUS" EACCES "acquire in another scope through a scoped mount"
expect_contains "$(jget "$CTL_REPLY" error.message)" "$SCOPE" "the refusal names the mount's scope"

# Disposal through the mount removes the hand-made sandboxes too.
rmdir "$M/$H" || fail "rmdir of a hand-made sandbox"
expect_eq "$("$MFS_TOOL" state "$H")" absent "hand-made sandbox after rmdir"
grep -qx "$H" <<<"$(ls "$M2")" && fail "the scoped mount still lists the disposed sandbox"

umount_fs "$M2" "$PID2"
umount_fs "$M" "$PID"
log "PASS"
