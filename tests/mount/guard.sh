#!/bin/bash
# guard.sh: what a mount refuses to do or to hold (issue 10):
#   - dispose by name never removes a container that only has a sandbox's
#     name (no identity labels), scoped mount or not (item 7);
#   - exec replies are bounded: a guest printing 16 MiB of \x01 does not make
#     the daemon build a ~100 MiB reply (item 6, the reply half).
. "$(dirname "$0")/lib.sh"
require_env

M=$T/mnt
mount_fs "$M" -o scope="$SCOPE"
PID=$DAEMON_PID
U=$T/unscoped
mount_fs "$U"

# --- item 7: a plain container named like a sandbox -------------------------
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
