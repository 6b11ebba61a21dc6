#!/bin/bash
# bigfile.sh: a 256 MiB output read through the mount comes back byte for
# byte, and the daemon's memory stays flat: the file is spooled into a
# memfd, not the heap, and reads are served from the spool (the daemon's
# peak resident size stays far below the file's size). Random reads at
# scattered offsets (dd skip=) see the same bytes as a sequential read.
. "$(dirname "$0")/lib.sh"
require_env

M=$T/mnt
mount_fs "$M" -o max_read=300M
PID=$DAEMON_PID
acquire "$M" t a big ', "outputs": ["big.bin"]'
N=$SBX
# 256 MiB of a known pattern: the 16-byte line "0123456789abcde\n" repeated.
run_exec "$M" "$N" "yes 0123456789abcde | head -c 268435456 > big.bin && wc -c < big.bin"
expect_eq "$CTL_STATUS" OK "writing the big file ($CTL_REPLY)"
expect_eq "$(jget "$CTL_REPLY" stdout)" 268435456 "size of the big file"
WANT=$(yes 0123456789abcde | head -c 268435456 | sha256sum | cut -d' ' -f1)

GOT=$(cat "$M/$N/work/big.bin" | sha256sum | cut -d' ' -f1)
expect_eq "$GOT" "$WANT" "sha256 of the big file read through the mount"
HWM=$(awk '/^VmHWM:/ { print $2 }' "/proc/$PID/status")
log "daemon peak resident size after a 256 MiB read: ${HWM} KiB"
# (ASan's quarantine keeps freed buffers resident: no figure to check there)
if ldd "$MAFSBXFS" 2>/dev/null | grep -q libasan; then
	log "ASan build: peak resident size not checked"
else
	[ "$HWM" -lt 65536 ] || fail "the daemon's peak resident size grew to ${HWM} KiB for a 256 MiB read"
fi

# scattered reads of one open file, out of order, see the same bytes
GOT=$("$MFS_TOOL" preads "$M/$N/work/big.bin" 15 268435440 16 134217728 0 200000000 | tr '\n' ' ')
expect_eq "$GOT" "0123456789abcde 0123456789abcde 0123456789abcde 0123456789abcde 0123456789abcde " "scattered reads"
umount_fs "$M" "$PID"
log "PASS"
