#!/usr/bin/env bash
# files.sh: a sandbox's files through the mount, on the plane named by
# MAFSBX_TEST_PLANE (meson runs it on both; mafsbxfs(1) READING AND WRITING FILES):
#   the hostile layout of doc/upstream.md §9.2 with the FILES_OUT, FILES_IN and
#   FILES_DELETE probes (doc/upstream.md §9.3, §9.4, §9.6) as a filesystem shows them;
#   fifos and device nodes never opened from the host; another mount of the
#   guest is EXDEV (local); the guest's authority over writes, removes and
#   renames and the owner of what is created; a writer killed mid-stream
#   and a daemon killed mid-write leave the old file whole; a restarted
#   sandbox is re-pinned; shell tools over a 1,000-file tree (local); a
#   growing file read again sees the new size inside the attribute cache;
#   a read during a running exec does not wait (local); the guest flipping
#   a directory and a link while the host reads, lists, writes and removes
#   through it: nothing outside is read or written; on the local plane an
#   acquire that makes its work dir and the file calls after it take no
#   freeze (no pause event).
. "$(dirname "$0")/lib.sh"
require_env
command -v docker >/dev/null || skip_or_fail "the docker CLI is missing (used to play the guest as root)"

# -o plane=local refuses to mount where it cannot serve (a tcp endpoint).
mkdir -p "$T/nomount"
if out=$(timeout 20 "$MAFSBXFS" -f -o plane=local -o host=tcp://127.0.0.1:9 "$T/nomount" 2>&1); then
	fail "plane=local mounted over a tcp endpoint"
fi
expect_contains "$out" "plane=local" "plane=local refusal message"
is_mounted "$T/nomount" && fail "something was mounted"

M=$T/mnt
# attr_timeout stays at its default (1 s): freshness must not depend on it.
mount_fs "$M" -o max_write=64M
# docker exec as root, retried while a burst's freeze still holds the guest (lib.sh)
dexec() { dexec_as 0 "$@"; }
gsh() { local n=$1; shift; dexec "$n" sh -c "$*"; }
# shellcheck source=tests/mount/files_tables.sh
. "$(dirname "$0")/files_tables.sh"

# ---- the hostile layout (a root guest) ---------------------------------------------
acquire "$M" t a layout
N=$SBX
W=$M/$N/work
expect_eq "$(jget "$(cat "$M/$N/status")" plane)" "$PLANE" "status plane"
files_layout
files_out
files_in
files_delete
if [ "$PLANE" = local ]; then
	mv "$W/sibling.txt" "$W/real/moved.txt" || fail "mv within work"
	gsh "$N" "test -e $GW/real/moved.txt && test ! -e $GW/sibling.txt" || fail "mv landed"
else
	# rename is EXDEV on the engine plane (mv copies)
	expect_errno "rename on the engine plane" EXDEV rename "$W/sibling.txt" "$W/real/moved.txt"
fi

# ---- a big directory: the listing is bounded and says how it was cut -------------------
# The engine plane stats every entry (a HEAD of the archive API each); Podman
# answers one in 20 to 70 ms where dockerd takes 2 to 5 (doc/engines.md), so on
# Podman 10,050 entries would take minutes: the cut is checked on dockerd.
if [ "$PLANE" = engine ] && engine_is_podman; then
	log "a 10,050-entry directory is not listed on Podman's engine plane (doc/engines.md)"
else
	gsh "$N" "mkdir -p $GW/huge && cd $GW/huge && i=0; while [ \$i -lt 10050 ]; do : > f\$i; i=\$((i + 1)); done" ||
		fail "huge directory"
	s=$(date +%s%N)
	got=$(ls -f "$W/huge" | grep -c '^f')
	e=$(( ($(date +%s%N) - s) / 1000000 ))
	log "ls of a 10,050-entry directory: $got names in $e ms ($PLANE plane)"
	if [ "$PLANE" = local ]; then
		expect_eq "$got" 10050 "the local plane lists every entry"
	else
		expect_eq "$got" 10000 "the engine plane lists at most 10,000 entries"
		daemon_log_has "$T/daemon.$(basename "$M").log" \
			"the listing of $GW/huge was cut: 10000 entries listed, 50 more not listed" ||
			fail "the cut listing was not logged"
	fi
	gsh "$N" "rm -rf $GW/huge" || fail "rm huge"
fi

# ---- special files: never opened from the host, nothing blocks ----------------------
# Device nodes need CAP_MKNOD, which sandboxes drop: a hand-made, non-hardened
# container with the identity labels plays that guest.
H=$("$MFS_TOOL" handmade "$SCOPE" t a devices) || fail "handmade container"
HW=$M/$H/work
gsh "$H" "mkdir -p $GW && mkfifo $GW/fifo && mknod $GW/blk b 8 0 && mknod $GW/chr c 1 1" ||
	fail "mkfifo/mknod in the non-hardened guest"
for f in fifo blk chr; do
	expect_errno "$f read" EPERM read "$HW/$f"
	expect_errno "$f write" EPERM write "$HW/$f"
	timeout 5 cat "$HW/$f" >/dev/null 2>&1
	[ $? = 124 ] && fail "cat of $f blocked"
	expect_eq "$(stat -c '%F %a' "$HW/$f")" "regular empty file 0" "$f shown as an empty mode-0 file"
done
expect_eq "$(ls -l "$HW" | grep -c '^---------- .* \(fifo\|blk\|chr\)$')" 3 "a listing shows special files as empty mode-0 files"
rm "$HW/fifo" || fail "a fifo can be removed"

# ---- other mounts of the guest ---------------------------------------------------------
if [ "$PLANE" = local ]; then
	for p in proc/self/status proc/1/environ sys/kernel dev/null dev/shm etc/hostname etc/hosts; do
		expect_errno "/$p is another mount" EXDEV stat "$M/$N/root/$p"
	done
	expect_errno "root/ is read-only" EROFS write "$M/$N/root/tmp/x"
	expect_errno "root/ is read-only (mkdir)" EROFS mkdir "$M/$N/root/tmp/d"
	expect_errno "root/ is read-only (unlink)" EROFS unlink "$M/$N/root/etc/passwd"
	expect_eq "$(head -1 "$M/$N/root/etc/passwd")" "root:x:0:0:root:/root:/bin/sh" "root/ reads"
fi

# ---- freshness: a grown or shrunk file is read whole, inside attr_timeout ------------
gsh "$N" "printf 'abc' > $GW/grow.txt" || fail "grow setup"
expect_eq "$(stat -c %s "$W/grow.txt")" 3 "grow: first size"
gsh "$N" "printf 'abcdefghij' > $GW/grow.txt"
expect_eq "$(cat "$W/grow.txt")" abcdefghij "a read after the file grew sees all of it"
gsh "$N" "printf 'xy' > $GW/grow.txt"
expect_eq "$(cat "$W/grow.txt")" xy "a read after the file shrank sees the new content"
for i in 1 2 3; do
	gsh "$N" "echo line$i >> $GW/log.txt"
	expect_eq "$(tail -n 1 "$W/log.txt")" "line$i" "tail of a growing file ($i)"
done

# ---- a writer killed mid-stream, and the daemon killed mid-write: the old file whole ---
# Each writer is killed 1 s after its open returned and it wrote (its `sleep`
# then runs; the writer itself must do nothing else with the file: any close
# of it by a live process commits the write): an engine-plane open is frozen
# calls to the engine, which a loaded Podman can take over a second to
# answer, and a daemon killed inside a freeze leaves the guest paused until
# the next mount (what thaw.sh tests).
open_writer() {
	local s i
	s=$(date +%s%N)
	( { printf 'partial'; sleep 30; } >"$W/victim.txt" ) 2>/dev/null &
	WP=$!
	for i in $(seq 1 300); do
		pgrep -P "$WP" -x sleep >/dev/null && break
		sleep 0.1
	done
	pgrep -P "$WP" -x sleep >/dev/null || fail "the write open did not return within 30 s"
	log "a write open through the mount returned in $(( ($(date +%s%N) - s) / 1000000 )) ms ($PLANE plane)"
	sleep 1
}
gsh "$N" "echo original > $GW/victim.txt"
open_writer
pkill -KILL -P "$WP" 2>/dev/null
kill -KILL "$WP" 2>/dev/null
wait "$WP" 2>/dev/null
sleep 0.5
expect_eq "$(gsh "$N" "cat $GW/victim.txt")" original "a killed writer leaves the old file whole"
gsh "$N" "ls -a $GW | grep -q mafsbxfs-" && fail "a temporary was left by the killed writer"
# the daemon killed while a write is open
open_writer
kill -KILL "$DAEMON_PID"
sleep 0.5
kill -KILL "$WP" 2>/dev/null
pkill -KILL -P "$WP" 2>/dev/null
fusermount3 -u -z "$M" 2>/dev/null
expect_eq "$(gsh "$N" "cat $GW/victim.txt")" original "a killed daemon leaves the old file whole"
mount_fs "$M" -o max_write=64M

# ---- a restarted sandbox is pinned again -------------------------------------------------
gsh "$N" "echo gen1 > $GW/gen.txt"
expect_eq "$(cat "$W/gen.txt")" gen1 "before the restart"
docker restart -t 1 "$N" >/dev/null || fail "docker restart"
gsh "$N" "echo gen2 > $GW/gen.txt"
expect_eq "$(cat "$W/gen.txt")" gen2 "after the restart the new container's files are read"
expect_eq "$(jget "$(cat "$M/$N/status")" plane)" "$PLANE" "plane after the restart"
docker stop -t 1 "$N" >/dev/null
expect_errno "a stopped sandbox" EBUSY read "$W/gen.txt"
docker start "$N" >/dev/null
expect_eq "$(cat "$W/gen.txt")" gen2 "after a stop and start"

# ---- a guest paused by someone else: left paused, the file call refused ------------------
# (dockerd answers the freeze's pause 409 "already paused", Podman 500 "is already paused")
if [ "$PLANE" = engine ]; then
	# the last read's freeze may still be in force for a few ms: "already paused" is retried
	for i in $(seq 1 100); do
		docker pause "$N" >/dev/null 2>"$T/pause.err" && break
		grep -q "already paused" "$T/pause.err" || fail "docker pause: $(cat "$T/pause.err")"
		sleep 0.02
	done
	[ -s "$T/pause.err" ] && fail "docker pause: $(cat "$T/pause.err")"
	expect_errno "a read while someone else paused the guest" EBUSY read "$W/gen.txt"
	expect_eq "$("$MFS_TOOL" state "$N")" paused "a pause by someone else is left alone"
	docker unpause "$N" >/dev/null || fail "docker unpause"
	expect_eq "$(cat "$W/gen.txt")" gen2 "a read once the other party unpaused"
fi

# ---- the guest's authority (a guest running as uid 1000) -------------------------------
U_IMAGE=mafsbx/busybox-uid1000:test
# The image holds a work dir that is the guest's and, inside it, a directory
# and a file that are root's (a hardened root cannot make them: no DAC_OVERRIDE).
if ! docker image inspect "$U_IMAGE" >/dev/null 2>&1; then
	cid=$(docker run -d --network none -u 0 "$IMAGE" sh -c "mkdir -p $GW/rootdir && echo r > $GW/rootdir/rootfile &&
		chmod 755 $GW/rootdir && chown 1000:1000 $GW") || fail "docker run (image setup)"
	docker wait "$cid" >/dev/null
	commit_image "$cid" "$U_IMAGE" 'USER 1000:1000' 'CMD ["/bin/sleep", "infinity"]' || fail "docker commit"
	docker rm "$cid" >/dev/null
fi
IMAGE=$U_IMAGE acquire "$M" t a uid1000
U=$SBX
UW=$M/$U/work
expect_eq "$(jget "$CTL_REPLY" uid)" 1000 "guest uid"
echo mine >"$UW/mine.txt" || fail "a file the guest may write"
echo more >>"$UW/mine.txt" || fail "append to a file the guest owns"
expect_eq "$(gsh "$U" "stat -c %u:%g $GW/mine.txt")" 1000:1000 "created files are the guest's"
mkdir "$UW/sub" || fail "mkdir"
expect_eq "$(gsh "$U" "stat -c %u:%g $GW/sub")" 1000:1000 "created directories are the guest's"
if [ "$PLANE" = local ]; then
	expect_errno "write in a root-owned directory" EACCES write "$UW/rootdir/new"
	expect_errno "remove in a root-owned directory" EACCES unlink "$UW/rootdir/rootfile"
	expect_errno "rename out of a root-owned directory" EACCES rename "$UW/rootdir/rootfile" "$UW/stolen"
	expect_errno "overwrite a root-owned file" EACCES write "$UW/rootdir/rootfile"
	expect_eq "$(gsh "$U" "cat $GW/rootdir/rootfile")" r "the root-owned file is untouched"
	mv "$UW/mine.txt" "$UW/sub/mine.txt" || fail "the guest renames its own file"
	chmod 600 "$UW/sub/mine.txt" || fail "the guest chmods its own file"
	expect_eq "$(gsh "$U" "stat -c %a $GW/sub/mine.txt")" 600 "chmod seen in the guest"
else
	expect_errno "remove in a root-owned directory (the guest's rm)" EACCES unlink "$UW/rootdir/rootfile"
fi

# ---- reads do not wait for a running exec (local) ----------------------------------------
if [ "$PLANE" = local ]; then
	"$MFS_TOOL" ctl "$M/.ctl/exec" "{\"sandbox\": \"$N\", \"command\": \"sleep 6\"}" >/dev/null &
	EP=$!
	sleep 1
	s=$(date +%s%N)
	expect_eq "$(cat "$W/gen.txt")" gen2 "read during an exec"
	e=$(( ($(date +%s%N) - s) / 1000000 ))
	[ "$e" -lt 3000 ] || fail "a read during an exec waited ${e} ms"
	wait "$EP"
fi

# ---- a 1,000-file tree and the shell tools (local: the engine plane lists only known files)
if [ "$PLANE" = local ]; then
	gsh "$N" "mkdir -p $GW/big/a $GW/big/b && cd $GW/big && i=0; while [ \$i -lt 1000 ]; do
		echo \"file \$i\" > \$( [ \$((i % 2)) = 0 ] && echo a || echo b)/f\$i.txt; i=\$((i + 1)); done" ||
		fail "tree"
	expect_eq "$(find "$W/big" -type f | wc -l)" 1000 "find -type f"
	expect_eq "$(ls -la "$W/big/a" | grep -c 'f.*\.txt$')" 500 "ls -la"
	expect_eq "$(grep -r 'file 999' "$W/big" | wc -l)" 1 "grep -r"
	du -s "$W/big" >/dev/null || fail "du -s"
	cp -r "$W/big" "$T/copy" || fail "cp -r"
	expect_eq "$(cat "$T/copy/b/f999.txt")" "file 999" "cp -r content"
	mv "$W/big/a" "$W/big/c" || fail "mv of a directory"
	rm -r "$W/big" || fail "rm -r of the tree"
	gsh "$N" "test ! -e $GW/big" || fail "rm -r left something"
fi

# ---- the local plane takes no freeze: an acquire that makes its work dir, and file calls ----
# The engine's pause events of the new sandbox, from before its acquire: none.
if [ "$PLANE" = local ]; then
	since=$(date +%s.%N)
	acquire "$M" t a nofreeze ', "work_dir": "/srv/nf/work"'
	NF=$SBX
	expect_eq "$(dexec "$NF" stat -c '%u:%g %a' /srv/nf /srv/nf/work)" "0:0 755
0:0 755" "work dir made beneath the pinned root"
	echo one >"$M/$NF/work/a.txt" || fail "write without a freeze"
	expect_eq "$(cat "$M/$NF/work/a.txt")" one "read without a freeze"
	mkdir "$M/$NF/work/d" && mv "$M/$NF/work/a.txt" "$M/$NF/work/d/b.txt" && rm "$M/$NF/work/d/b.txt" &&
		rmdir "$M/$NF/work/d" || fail "mkdir, rename, remove without a freeze"
	acquire "$M" t a nofreeze ', "work_dir": "/srv/nf/work"'
	until=$(date -d '+1 sec' +%s.%N)
	sleep 1.2
	pauses=$(docker events --since "$since" --until "$until" --filter "container=$NF" --filter event=pause \
		--format '{{.Status}}' | wc -l)
	expect_eq "$pauses" 0 "pause events of a local-plane sandbox over its acquire and file calls"
fi

# ---- the race: the guest flips a directory and links to /etc and a host-looking path ------
# Local plane only. On the engine plane a freeze and an exec of the same
# container exclude each other (a pause during an exec's start or exit wedges
# containerd 1.6), so a flipping exec cannot overlap a frozen call by design;
# its chain check is raced by it_files (integration suite) instead.
if [ "$PLANE" = local ]; then
	HOSTDIR=$(mktemp -d /tmp/mafsbx-hostcanary.XXXXXX)
	echo "HOST root: must never be read" >"$HOSTDIR/passwd"
	FLIPS=${MAFSBX_RACE_FLIPS:-10000} FLIP_SECS=${MAFSBX_RACE_SECS:-20}
	gsh "$N" "mkdir -p $GW/flip.d && echo inside > $GW/flip.d/passwd && mv $GW/flip.d $GW/flip" || fail "flip setup"
	# the flipper (tests/mount/flipper.c): six system calls per flip, at
	# least FLIPS flips and FLIP_SECS seconds, then GW/race.done
	[ -x "${MFS_FLIPPER:-}" ] || fail "MFS_FLIPPER must name the built flipper"
	docker cp "$MFS_FLIPPER" "$N:/maf-sandbox/flipper" >/dev/null || fail "docker cp of the flipper"
	STOP=$T/race.stop
	( rc=0; dexec "$N" /maf-sandbox/flipper "$GW" flip "$HOSTDIR" "$FLIPS" "$FLIP_SECS" \
		>"$T/flipped" 2>&1 || rc=$?; echo "$rc" >"$T/flipper.rc"; touch "$STOP" ) &
	BGPIDS+=($!)
	RACE=$("$MFS_TOOL" race "$W/flip" "$STOP") || fail "the race saw outside content: $RACE"
	[ "$(cat "$T/flipper.rc")" = 0 ] || fail "the flipper failed: $(cat "$T/flipped")"
	FLIPPED=$(cat "$W/race.done") || fail "the flipper's count"
	[ "$FLIPPED" -ge "$FLIPS" ] || fail "the guest flipped $FLIPPED times, fewer than $FLIPS"
	# the race only proves something if the host also got through the directory
	case "$RACE" in *" reads 0 "* | *" writes 0 "*) fail "the host never got through the flipping directory: $RACE" ;; esac
	log "race: $RACE over $FLIPPED guest flips in $FLIP_SECS s"
	gsh "$N" "test ! -e /etc/out" || fail "a write landed in the guest's /etc"
	[ -e "$HOSTDIR/out" ] && fail "a write landed in a host directory"
	expect_eq "$(cat "$HOSTDIR/passwd")" "HOST root: must never be read" "host canary untouched"
	rm -rf "$HOSTDIR"
fi

no_paused
alive() { :; }
log "ok ($PLANE plane)"
