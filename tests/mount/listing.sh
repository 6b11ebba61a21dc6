#!/usr/bin/env bash
# listing.sh: the engine plane's listing of a guest directory (mafsbxfs(1)
# READING AND WRITING FILES, -o listing), through three mounts of the same
# engine: -o plane=local, -o plane=engine (listing=auto: the directory's
# archive) and -o plane=engine,listing=exec (the guest's find):
#   - every entry the guest made, with its type, mode and size, as the local
#     plane shows it: files, directories, links shown as links (never
#     followed), a hard link, fifos and device nodes (empty mode-0 files);
#   - the archive way makes no exec in the guest; the exec way does;
#   - a directory beside a subtree of 100 MiB: the archive is cut early
#     (well under 1 MiB read, the log says how) and the listing is whole;
#   - a 10,050-entry directory: bounded in time and in the daemon's memory,
#     10,000 names listed and the cut logged;
#   - nothing is left paused.
. "$(dirname "$0")/lib.sh"
require_env
command -v docker >/dev/null || skip_or_fail "the docker CLI is missing (used to play the guest as root)"

ML=$T/local
ME=$T/engine
MX=$T/exec
mount_fs "$ML" -o plane=local
mount_fs "$ME" -o plane=engine -o loglevel=info
PE=$DAEMON_PID
mount_fs "$MX" -o plane=engine -o listing=exec -o loglevel=info
LOGE="$T/daemon.$(basename "$ME").log"
LOGX="$T/daemon.$(basename "$MX").log"
gsh() { local n=$1; shift; dexec_as 0 "$n" sh -c "$*"; }
GW=/maf-sandbox/work

# Device nodes need CAP_MKNOD, which sandboxes drop: a hand-made, non-hardened
# container with the identity labels plays that guest.
H=$("$MFS_TOOL" handmade "$SCOPE" t a listing) || fail "handmade container"
gsh "$H" "mkdir -p $GW/kinds/sub/deeper $GW/outside && cd $GW/kinds && printf 'twelve bytes' > file.txt &&
	chmod 640 file.txt && chmod 711 sub && echo d > sub/deeper/d.txt && ln -s /etc/passwd link-abs &&
	ln -s file.txt link-rel && ln -s ../outside link-dir && ln file.txt hard.txt && mkfifo fifo &&
	mknod blk b 8 0 && mknod chr c 1 1 && touch .hidden 'with space' && chmod 4755 .hidden" ||
	fail "layout"

# name, type, mode of every entry as a shell sees them through a mount, and
# the size of regular files (a link's or a directory's size is each plane's own)
show_all() {
	(cd "$1" && ls -A | LC_ALL=C sort | while IFS= read -r f; do stat -c '%n|%F|%a|%s' -- "$f"; done) |
		awk -F'|' '{ print $1 "|" $2 "|" $3 "|" ($2 ~ /^regular/ ? $4 : "-") }'
}
want=$(show_all "$ML/$H/work/kinds")
expect_contains "$want" "link-abs|symbolic link|777|-" "the local plane shows a link as a link"
expect_contains "$want" "fifo|regular empty file|0|0" "the local plane shows a fifo as an empty mode-0 file"
expect_contains "$want" "with space|regular empty file|644|0" "a name with a space"
for m in "$ME" "$MX"; do
	expect_eq "$(show_all "$m/$H/work/kinds")" "$want" "the listing of $(basename "$m") shows what the local plane shows"
done
[ -L "$ME/$H/work/kinds/link-dir" ] || fail "a listed link to a directory is a link"
expect_errno "a listed link to a directory is not listed through" ELOOP readdir "$ME/$H/work/kinds/link-dir"

# ---- the archive way makes no exec in the guest; the exec way does ------------------
since=$(date +%s.%N)
[ -n "$(show_all "$ME/$H/work/kinds")" ] || fail "list and stat (archive)"
mid=$(date +%s.%N)
sleep 0.5
[ -n "$(show_all "$MX/$H/work/kinds")" ] || fail "list and stat (exec)"
until=$(date -d '+1 sec' +%s.%N)
sleep 1.2
execs() { docker events --since "$1" --until "$2" --filter "container=$H" --filter event=exec_create \
	--format '{{.Status}}' | wc -l; }
expect_eq "$(execs "$since" "$mid")" 0 "the archive listing runs nothing in the guest"
[ "$(execs "$mid" "$until")" -ge 1 ] || fail "the exec listing ran no find in the guest"

# ---- beside a subtree of 100 MiB: the archive is cut early, the listing whole --------
gsh "$H" "mkdir -p $GW/deep/sub && cd $GW/deep && for i in \$(seq -w 0 19); do echo \$i > a\$i; done &&
	for i in \$(seq -w 0 99); do dd if=/dev/zero of=sub/m\$i bs=1M count=1 2>/dev/null; done" || fail "deep"
expect_eq "$(ls "$ME/$H/work/deep" | wc -l)" 21 "a directory beside a big subtree is listed whole"
line=$(grep "the archive listing of $GW/deep was cut after" "$LOGE" | tail -1)
[ -n "$line" ] || fail "the early stop was not logged"
expect_contains "$line" "file contents dominate the archive" "the log says how the archive was cut"
bytes=$(printf '%s' "$line" | sed 's/.*was cut after \([0-9]*\) bytes.*/\1/')
[ "$bytes" -lt 1048576 ] || fail "the archive of deep was read for $bytes bytes before its cut (want < 1 MiB)"
log "deep: the archive was cut after $bytes bytes"
gsh "$H" "rm -rf $GW/deep" || fail "rm deep"

# ---- 10,050 entries: bounded in time and memory, and the cut said --------------------
gsh "$H" "mkdir -p $GW/huge && cd $GW/huge && i=0; while [ \$i -lt 10050 ]; do : > f\$i; i=\$((i + 1)); done" ||
	fail "huge directory"
rss0=$(awk '/^VmRSS/ { print $2 }' "/proc/$PE/status")
s=$(date +%s%N)
got=$(ls -f "$ME/$H/work/huge" | grep -c '^f')
e=$(( ($(date +%s%N) - s) / 1000000 ))
hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$PE/status")
log "ls of a 10,050-entry directory: $got names in $e ms; daemon RSS $rss0 KiB before, peak $hwm KiB"
expect_eq "$got" 10000 "the engine plane lists at most 10,000 entries"
[ "$e" -lt 60000 ] || fail "listing 10,050 entries took $e ms (bound: 60 s)"
[ "$hwm" -lt $((rss0 + 65536)) ] || fail "the daemon grew from $rss0 to $hwm KiB listing 10,050 entries"
grep -q "the archive listing of $GW/huge was cut after" "$LOGE" || fail "the archive's cut was not logged"
daemon_log_has "$LOGE" "the listing of $GW/huge was cut: 10000 entries listed, 50 more not listed" ||
	fail "the cut listing was not logged"
gsh "$H" "rm -rf $GW/huge" || fail "rm huge"

no_paused
log "ok"
