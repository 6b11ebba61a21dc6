#!/usr/bin/env bash
# passthrough.sh: FUSE passthrough of local-plane reads (fs/passthrough.c),
# through a real mount on the local plane.
#   - .ctl/engine says whether passthrough is on, and why not: on where the
#     build has it (MFS_BUILT_PASSTHROUGH=1, meson) and the kernel is 6.9 or
#     later; off, naming the build, where libfuse lacks it (Debian 12);
#   - an 8 MiB file written through the mount reads back byte for byte;
#     with passthrough on, the open is passed through and the daemon serves
#     none of its reads (its read count stays); off, the daemon serves them;
#   - two opens of one file at once share the node's backing file;
#   - a file the guest appends to while it is open reads its new bytes;
#   - a file the guest replaces while the old one is still open: the new
#     open reads the new file (the kernel holds one backing file per node, so
#     that open is answered ESTALE and the kernel looks the path up again,
#     finding a new node), the old open the old one;
#   - a file of the sandbox's root (NAME/root/) is passed through too;
#     an open for writing never is.
. "$(dirname "$0")/lib.sh"
require_env
: "${MFS_BUILT_PASSTHROUGH:?MFS_BUILT_PASSTHROUGH must say whether the build has passthrough (meson sets it)}"

M=$T/mnt
mount_fs "$M" -o plane=local,max_write=64M
eng() { jget "$(cat "$M/.ctl/engine")" "passthrough.$1"; }

kmaj=$(uname -r | cut -d. -f1) kmin=$(uname -r | cut -d. -f2)
if [ "$MFS_BUILT_PASSTHROUGH" = 1 ] && { [ "$kmaj" -gt 6 ] || { [ "$kmaj" -eq 6 ] && [ "$kmin" -ge 9 ]; }; }; then
	ON=true
	expect_eq "$(eng on)" true "passthrough on (libfuse with it, kernel $(uname -r)): why '$(eng why)'"
else
	ON=false
	expect_eq "$(eng on)" false "passthrough off"
	if [ "$MFS_BUILT_PASSTHROUGH" = 0 ]; then
		expect_contains "$(eng why)" "built without it" "why passthrough is off"
	fi
fi
log "passthrough on: $ON ($(cat "$M/.ctl/engine" | tr -d '\n' | sed 's/.*"passthrough"/"passthrough"/'))"

acquire "$M" t a passthrough
N=$SBX
W=$M/$N/work

# ---- an 8 MiB file, read back -------------------------------------------------------
head -c $((8 << 20)) /dev/urandom >"$T/big"
cp "$T/big" "$W/big" || fail "write big through the mount"
opens0=$(eng opens) reads0=$(eng daemon_reads)
cmp "$T/big" "$W/big" || fail "big does not read back byte for byte"
opens1=$(eng opens) reads1=$(eng daemon_reads)
if [ "$ON" = true ]; then
	expect_eq "$opens1" $((opens0 + 1)) "passthrough opens after one read-only open"
	expect_eq "$reads1" "$reads0" "reads the daemon served for a passed-through file"
else
	expect_eq "$opens1" 0 "passthrough opens while off"
	[ "$reads1" -gt "$reads0" ] || fail "the daemon served no read of big while passthrough is off"
fi

# ---- two opens of one file at once ---------------------------------------------------
exec 3<"$W/big" 4<"$W/big" || fail "two opens of big"
cmp - "$T/big" <&3 || fail "the first of two opens reads wrong"
cmp - "$T/big" <&4 || fail "the second of two opens reads wrong"
exec 3<&- 4<&-
if [ "$ON" = true ]; then
	expect_eq "$(eng opens)" $((opens1 + 2)) "both opens passed through"
	expect_eq "$(eng relookups)" 0 "new lookups for two opens of one file"
	expect_eq "$(eng daemon_reads)" "$reads1" "reads the daemon served for two passed-through opens"
fi

# ---- a file the guest appends to while it is open ------------------------------------
printf 'first\n' >"$W/grow" || fail "write grow"
exec 3<"$W/grow" || fail "open grow"
run_exec "$M" "$N" "printf 'second\n' >> /maf-sandbox/work/grow"
expect_eq "$CTL_STATUS" OK "the guest appends ($CTL_REPLY)"
expect_eq "$(cat <&3)" "$(printf 'first\nsecond')" "an open file the guest appended to"
exec 3<&-

# ---- a file the guest replaces while the old one is open -----------------------------
printf 'old\n' >"$W/swap" || fail "write swap"
exec 3<"$W/swap" || fail "open swap"
fb0=$(eng relookups) o0=$(eng opens)
run_exec "$M" "$N" "printf 'new\n' > /maf-sandbox/work/swap.tmp && mv /maf-sandbox/work/swap.tmp /maf-sandbox/work/swap"
expect_eq "$CTL_STATUS" OK "the guest replaces swap ($CTL_REPLY)"
expect_eq "$(cat "$W/swap")" new "a new open of the replaced file"
expect_eq "$(cat <&3)" old "the open of the old file"
exec 3<&-
if [ "$ON" = true ]; then
	expect_eq "$(eng relookups)" $((fb0 + 1)) "the new open, beside the old one's backing file, looked the path up again"
	expect_eq "$(eng opens)" $((o0 + 1)) "the new file's open passed through"
	expect_eq "$(cat "$W/swap")" new "the replaced file once the old open ended"
fi

# ---- the sandbox's root, and writes ---------------------------------------------------
run_exec "$M" "$N" "cat /etc/passwd"
expect_eq "$CTL_STATUS" OK "cat /etc/passwd in the guest ($CTL_REPLY)"
want=$(jget "$CTL_REPLY" stdout)
o0=$(eng opens)
expect_eq "$(cat "$M/$N/root/etc/passwd")" "${want%$'\n'}" "root/etc/passwd through the mount"
if [ "$ON" = true ]; then
	expect_eq "$(eng opens)" $((o0 + 1)) "a read of the sandbox's root passed through"
fi
o0=$(eng opens)
printf 'x' >>"$W/grow" || fail "append to grow"
exec 3<>"$W/grow" || fail "open grow read-write"
exec 3<&-
expect_eq "$(eng opens)" "$o0" "opens for writing passed through"
expect_eq "$(cat "$W/grow")" "$(printf 'first\nsecond\nx')" "grow after the append"

ctl "$M" dispose "{\"name\": \"$N\"}"
expect_eq "$CTL_STATUS" OK "dispose ($CTL_REPLY)"
umount_fs "$M" "$DAEMON_PID"
log "ok"
