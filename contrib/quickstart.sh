#!/usr/bin/env bash
# contrib/quickstart.sh: README's first command, as root. Sets the machine up
# (contrib/setup.sh --set run: only the packages building and running the
# mount need, dockerd, build/ without the tests, the offline image), then shows
# the filesystem at work (doc/protocol.md):
#
#   mount build/fs/mafsbxfs on a temporary directory,
#   acquire a sandbox through .ctl/acquire,
#   run a command in it through .ctl/exec that writes work/hello.txt,
#   cat that file through the mount,
#   dispose the sandbox through .ctl/dispose and unmount,
#   and check that the daemon (in the background, as users run it) is gone
#   within 2 s of the unmount and that the sandbox was never left paused.
#
# Every step that fails stops the script with a message naming it; the
# sandbox and the mount are cleaned up on the way out.
set -euo pipefail
PROG=quickstart
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
. "$here/lib.sh"
require_root

"$here/setup.sh" --set run
cd "$root"

daemon=build/fs/mafsbxfs
if [ ! -x "$daemon" ]; then
	log "set-up done; $daemon is not built yet, so there is nothing to mount"
	exit 0
fi

mnt=$(mktemp -d "${TMPDIR:-/tmp}/mafsbx-quickstart.XXXXXX")
name=""
disposed=0

# ctl FILE JSON: one transaction (write the request, read the reply on the
# same open file); prints the reply; fails when the write or the reply fails.
ctl() {
	local file="$mnt/.ctl/$1" req=$2 reply
	exec 3<>"$file" || die "cannot open $file"
	if ! printf '%s' "$req" 2>/dev/null >&3; then
		reply=$(cat <&3 || true)
		exec 3>&-
		die ".ctl/$1 refused the request: ${reply:-no reply}"
	fi
	reply=$(cat <&3) || {
		exec 3>&-
		die "cannot read the reply of .ctl/$1"
	}
	exec 3>&-
	printf '%s\n' "$reply" | grep -Eq '"ok": *true' || die ".ctl/$1 answered: $reply"
	printf '%s\n' "$reply"
}

# daemon_pid: the mafsbxfs process serving $mnt (its last argument)
daemon_pid() {
	local p
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/exe" 2>/dev/null)" = "$(readlink -f "$daemon")" ] || continue
		[ "$(tr '\0' '\n' <"$p/cmdline" 2>/dev/null | tail -n 1)" = "$mnt" ] && { echo "${p#/proc/}"; return 0; }
	done
	return 1
}

# running PID: the process exists and is no zombie
running() {
	local st
	st=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) && [ -n "$st" ] && [ "$st" != Z ]
}

cleanup() {
	local rc=$?
	if [ -n "$name" ] && [ "$disposed" -eq 0 ] && mountpoint -q "$mnt"; then
		printf '{"name": "%s"}' "$name" >"$mnt/.ctl/dispose" 2>/dev/null || log "could not dispose $name"
	fi
	if mountpoint -q "$mnt"; then
		fusermount3 -u "$mnt" || umount "$mnt" || log "could not unmount $mnt"
	fi
	rmdir "$mnt" 2>/dev/null || true
	exit "$rc"
}
trap cleanup EXIT

log "mounting $daemon on $mnt"
"$daemon" -o "host=$(engine_url)" -o "image=$MAFSBX_IMAGE" "$mnt" || die "mafsbxfs failed to mount"
for _ in $(seq 1 100); do
	mountpoint -q "$mnt" && break
	sleep 0.1
done
mountpoint -q "$mnt" || die "the mount did not appear on $mnt within 10 s"
pid=$(daemon_pid) || die "no mafsbxfs daemon serves $mnt"
log "mounted; engine: $(cat "$mnt/.ctl/engine")"

log "acquiring a sandbox"
reply=$(ctl acquire "{\"scope\": \"quickstart\", \"thread\": \"t$$\", \"agent\": \"demo\", \"kind\": \"shell\", \"image\": \"$MAFSBX_IMAGE\", \"outputs\": [\"hello.txt\"]}")
name=$(printf '%s\n' "$reply" | sed -n 's/.*"name": *"\([^"]*\)".*/\1/p')
[ -n "$name" ] || die "no sandbox name in the acquire reply: $reply"
log "sandbox $name; its directory: $(ls "$mnt/$name" | tr '\n' ' ')"

log "running a command in it"
ctl exec "{\"sandbox\": \"$name\", \"command\": \"echo hello from the sandbox > hello.txt\"}" >/dev/null

log "reading $mnt/$name/work/hello.txt"
content=$(cat "$mnt/$name/work/hello.txt") || die "cannot read hello.txt through the mount"
printf '%s\n' "$content"
[ "$content" = "hello from the sandbox" ] || die "hello.txt holds '$content'"

grep -Eq '"paused": *false' "$mnt/$name/status" || die "$name is paused after the read: $(cat "$mnt/$name/status")"

log "disposing $name"
ctl dispose "{\"name\": \"$name\"}" >/dev/null
disposed=1
log "done; unmounting"
fusermount3 -u "$mnt" || die "cannot unmount $mnt"
for _ in $(seq 1 40); do
	running "$pid" || break
	sleep 0.05
done
running "$pid" && die "the mafsbxfs daemon $pid still runs 2 s after the unmount"
log "unmounted; the daemon has exited"
