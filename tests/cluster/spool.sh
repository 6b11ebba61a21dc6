#!/usr/bin/env bash
# spool.sh: over a swarm the spool budget bounds the mount, not each node
# (doc/protocol.md "Budgets"). With -o spool_budget=2M, three sandboxes on
# three nodes each get a file held open for writing with 700 KiB in its
# spool: two fit, the third write fails with ENOMEM and the daemon's message
# names the mount's budget over all its nodes (before, each node's planes
# had 2 MiB of their own and all three fit); once one is closed (and
# written to its sandbox) the third fits.
. "$(dirname "$0")/testlib.sh"
require_env
M=$T/m
mount_cluster "$M" -o spool_budget=2M
LOGF=$T/daemon.m.log

# sandboxes until three nodes run one each (the swarm spreads them)
declare -A on=()
for r in $(seq 1 9); do
	acquire "$M" "sp$r" a k || fail "acquire sp$r"
	i=$(sbx_node "$SBX") || fail "the manager places no running task of $SBX"
	[ -n "${on[$i]:-}" ] || on[$i]=$SBX
	[ "${#on[@]}" = 3 ] && break
done
[ "${#on[@]}" = 3 ] || fail "nine sandboxes did not cover three nodes: ${!on[*]}"
A=${on[0]} B=${on[1]} C=${on[2]}
log "sandboxes on three nodes: $A $B $C"

exec 5>"$M/$A/work/held" || fail "open a file of $A for writing"
head -c 700K /dev/zero >&5 || fail "700 KiB into $A's spool"
exec 6>"$M/$B/work/held" || fail "open a file of $B for writing"
head -c 700K /dev/zero >&6 || fail "700 KiB into $B's spool (1.4 MiB of 2 held)"
if head -c 700K /dev/zero >"$M/$C/work/over" 2>"$T/over.err"; then
	fail "a third node's 700 KiB fit past the mount's 2 MiB budget"
fi
grep -q 'Cannot allocate memory' "$T/over.err" || fail "the third write failed, not with ENOMEM: $(cat "$T/over.err")"
grep -q "the mount's over all its nodes" "$LOGF" || fail "the daemon's refusal does not name the mount's budget"
exec 5>&-
expect_eq "$(stat -c %s "$M/$A/work/held")" 716800 "$A's file, written once closed"
# (another name: the refused file was never made, its name may still be in the kernel's cache)
head -c 700K /dev/zero >"$M/$C/work/after" || fail "700 KiB into $C after $A's file was closed"
exec 6>&-
for d in "$M"/maf-sandbox-docker-*; do
	[ -d "$d" ] || continue
	rmdir "$d" || fail "dispose ${d##*/}"
done
nothing_left "after the disposals"
umount_fs "$M" "$DAEMON_PID"
log "ok"
