#!/bin/bash
# reclaim.sh: upstream's reclaim through a real mount (mafsbxfs(1) CONTROL FILES, dispose "reclaim"): the
# declarations list `reclaim`; `.ctl/dispose {"name", "reclaim": DIR}` removes
# a tree of the sandbox with the guest's rm and keeps the sandbox; the work
# dir itself, an escape and a reclaim without a name are refused with EINVAL;
# a missing directory succeeds. Then the nothing-left-behind proof from a
# shell: `mafsbx fingerprint` before a call that writes only under
# calls/c1, the reclaim, and `mafsbx fingerprint --diff` exits 0.
. "$(dirname "$0")/lib.sh"
require_env
: "${MAFSBX_CLI:?MAFSBX_CLI must name the mafsbx binary}"

M=$T/mnt
mount_fs "$M"

grep -q '"reclaim"' "$M/.ctl/declarations" || fail "declarations do not list reclaim: $(cat "$M/.ctl/declarations")"

acquire "$M" t1 a k
N=$SBX

# warm the sandbox: the first call may create what every later call reuses
run_exec "$M" "$N" "mkdir -p calls"
expect_eq "$CTL_STATUS" OK "mkdir calls"
"$MAFSBX_CLI" fingerprint "$N" -o "$T/before.json" >/dev/null || fail "fingerprint before"

run_exec "$M" "$N" "mkdir -p calls/c1/deep && echo result > calls/c1/deep/out.txt && ln -s /etc calls/c1/etc"
expect_eq "$CTL_STATUS" OK "the call"
[ -f "$M/$N/work/calls/c1/deep/out.txt" ] || fail "the call's file is not visible"
"$MAFSBX_CLI" fingerprint --diff "$T/before.json" "$N" >"$T/dirty.txt"
expect_eq "$?" 1 "diff after the call"
grep -q '^+ /maf-sandbox/work/calls/c1/deep/out.txt ' "$T/dirty.txt" || fail "the call's file is not in the diff: $(cat "$T/dirty.txt")"

ctl "$M" dispose "{\"name\": \"$N\", \"reclaim\": \"calls/c1\"}"
expect_eq "$CTL_STATUS" OK "reclaim ($CTL_REPLY)"
expect_eq "$(jget "$CTL_REPLY" ok)" true "reclaim reply ok"
expect_eq "$(jget "$CTL_REPLY" reclaimed)" /maf-sandbox/work/calls/c1 "reclaim reply"
[ -e "$M/$N/work/calls/c1" ] && fail "calls/c1 is still there"
[ -d "$M/$N" ] || fail "the sandbox went away with the reclaim"
"$MAFSBX_CLI" fingerprint --diff "$T/before.json" "$N" >"$T/clean.txt"
expect_eq "$?" 0 "diff after the reclaim ($(cat "$T/clean.txt"))"

# a missing directory succeeds; refusals
ctl "$M" dispose "{\"name\": \"$N\", \"reclaim\": \"calls/never\"}"
expect_eq "$CTL_STATUS" OK "reclaim of a missing directory ($CTL_REPLY)"
expect_ctl_error "$M" dispose "{\"name\": \"$N\", \"reclaim\": \".\"}" EINVAL "working directory itself"
expect_ctl_error "$M" dispose "{\"name\": \"$N\", \"reclaim\": \"../../etc\"}" EINVAL "outside"
expect_ctl_error "$M" dispose "{\"scope\": \"$SCOPE\", \"thread\": \"t1\", \"reclaim\": \"calls\"}" EINVAL "requires 'name'"
run_exec "$M" "$N" "test -d /etc && test -d calls"
expect_eq "$(jget "$CTL_REPLY" exit_code)" 0 "nothing else was removed"
log "OK"
