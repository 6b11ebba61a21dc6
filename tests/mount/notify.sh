#!/bin/bash
# notify.sh: systemd readiness (contrib/systemd/mafsbxfs@.service is
# Type=notify). A datagram socket bound here stands in for systemd's
# $NOTIFY_SOCKET; a python3 listener records each datagram together with
# whether the mount point was mounted at the moment it arrived:
#  - `mafsbxfs -f` (what the unit runs) sends READY=1 once, and only once
#    the mount is there; STOPPING=1 after the unmount starts it on its way out;
#  - the same with an abstract address ('@name');
#  - without NOTIFY_SOCKET nothing changes (every other mount test).
. "$(dirname "$0")/lib.sh"
require_env
command -v python3 >/dev/null 2>&1 || skip_or_fail "python3 is missing"

M=$T/mnt
mkdir -p "$M"

# listen ADDRESS OUT: records "DATAGRAM mounted|unmounted" lines in OUT until STOPPING=1.
listen() {
	python3 - "$1" "$2" "$M" <<'PY' &
import os, socket, sys
addr, out, mnt = sys.argv[1], sys.argv[2], sys.argv[3]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("\0" + addr[1:] if addr.startswith("@") else addr)
open(out + ".bound", "w").close()
s.settimeout(120)
def mounted():
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if fields[4] == mnt and fields[fields.index("-") + 1] == "fuse.mafsbxfs":
                return True
    return False
with open(out, "a") as f:
    while True:
        msg = s.recv(4096).decode()
        f.write("%s %s\n" % (msg.replace("\n", " ").strip(), "mounted" if mounted() else "unmounted"))
        f.flush()
        if "STOPPING=1" in msg:
            break
PY
	BGPIDS+=($!)
	LISTENER=$!
	local i
	for i in $(seq 1 100); do
		[ -e "$2.bound" ] && return 0
		sleep 0.05
	done
	fail "the notify listener did not bind $1"
}

check_cycle() {  # ADDRESS
	local addr=$1 out=$T/notify.$RANDOM
	listen "$addr" "$out"
	NOTIFY_SOCKET=$addr mount_fs "$M"
	local i
	for i in $(seq 1 200); do
		grep -q READY=1 "$out" 2>/dev/null && break
		sleep 0.05
	done
	expect_eq "$(grep -c READY=1 "$out" 2>/dev/null)" 1 "READY=1 datagrams on $addr"
	expect_eq "$(grep READY=1 "$out")" "READY=1 mounted" "READY=1 arrives with the mount in place"
	ls "$M/.ctl" >/dev/null || fail "the mount does not answer after READY=1"
	umount_fs "$M" "$DAEMON_PID"
	wait "$LISTENER" || fail "the listener on $addr saw no STOPPING=1"
	expect_eq "$(grep -c STOPPING=1 "$out")" 1 "STOPPING=1 datagrams on $addr"
	expect_eq "$(wc -l <"$out")" 2 "datagrams on $addr (READY=1, STOPPING=1)"
}

check_cycle "$T/notify.sock"
check_cycle "@mafsbxfs-notify-test-$$"
log "ok"
