#!/usr/bin/env bash
# snapshot.sh: on the engine plane, a listing's answers serve the stats that
# follow it with no freeze (src/guestfs/listsnap.h;
# mafsbxfs(1) READING AND WRITING FILES), and never more than the documented staleness:
#   - the stats of every entry after a listing make no pause of the guest
#     (before: the listing's answers died with its freeze, and the stats
#     froze the guest again and paid a HEAD each);
#   - within the validity, a change the guest makes is not seen yet (the
#     test daemon's validity is stretched to 8 s, MAFSBX_TEST_LISTSNAP_MS, so
#     that this is observable however slow `docker exec` is);
#   - after a mutation through the mount (mkdir, a write, an rm, an exec)
#     the next stat is the engine's, and after the validity too;
#   - a read never trusts the listing: a file the guest swapped for a link,
#     or a directory swapped for one, is refused though the stat still
#     shows the listing's answer;
#   - nothing is left paused.
. "$(dirname "$0")/lib.sh"
require_env
command -v docker >/dev/null || skip_or_fail "the docker CLI is missing (used to play the guest)"

VALID_MS=8000
export MAFSBX_TEST_LISTSNAP_MS=$VALID_MS
M=$T/m
mount_fs "$M" -o plane=engine -o attr_timeout=0
acquire "$M" t a snap
N=$SBX
W=$M/$N/work
GD=/maf-sandbox/work/d
gsh() { dexec_as 0 "$N" sh -c "$*"; }
gsh "mkdir -p $GD && cd $GD && for i in \$(seq -w 0 19); do echo p\$i > p\$i; done" || fail "layout"
ID=$(docker inspect -f '{{.Id}}' "$N") || fail "inspect $N"
size() { stat -c %s "$1"; }
listing() { [ "$(ls -f "$W/d" | grep -c '^p')" = 20 ] || fail "the listing of d lost entries"; }
pauses() { docker events --since "$1" --until "$2" --filter "container=$ID" --filter event=pause --format x | wc -l; }

# ---- the stats after a listing freeze nothing --------------------------------------
listing
sleep 0.4   # past the listing's linger and its burst's join window: the freeze has ended
since=$(date +%s.%N)
for i in $(seq -w 0 19); do expect_eq "$(size "$W/d/p$i")" 4 "p$i's size from the listing"; done
until=$(date +%s.%N)
sleep 1.2
expect_eq "$(pauses "$since" "$until")" 0 "pauses of the guest for the 20 stats after the listing"

# ---- within the validity: the listing's answer; after a mutation: the engine's ----
# (each round: a listing, the guest grows one file, the stat still shows the
# listing's size; then a mutation through the mount, and the stat is fresh)
stale_then() {
	local f=$1 what=$2
	shift 2
	listing
	local t0=$SECONDS
	gsh "echo grown-by-the-guest > $GD/$f" || fail "guest write $f"
	local got
	got=$(size "$W/d/$f")
	[ $((SECONDS - t0)) -lt $((VALID_MS / 1000 - 2)) ] || fail "the guest's write took too long to test the snapshot"
	expect_eq "$got" 4 "$f within the validity: the listing's answer"
	"$@" || fail "$what through the mount"
	expect_eq "$(size "$W/d/$f")" 19 "$f after $what through the mount: the engine's answer"
}
stale_then p00 "a mkdir" mkdir "$W/d/newdir"
stale_then p01 "a write" sh -c "echo x > '$W/d/other'"
stale_then p02 "an rm" rm "$W/d/other"
exec_true() { run_exec "$M" "$N" true; [ "$CTL_STATUS" = OK ]; }
stale_then p03 "an exec" exec_true

# ---- after the validity: the engine's answer --------------------------------------
listing
gsh "echo grown-by-the-guest > $GD/p04" || fail "guest write p04"
expect_eq "$(size "$W/d/p04")" 4 "p04 within the validity: the listing's answer"
sleep $((VALID_MS / 1000 + 1))
expect_eq "$(size "$W/d/p04")" 19 "p04 after the validity: the engine's answer"

# ---- a read never stands on the listing ------------------------------------------
listing
gsh "cd $GD && rm p05 && ln -s /etc/passwd p05" || fail "guest link p05"
expect_eq "$(stat -c %F "$W/d/p05")" "regular file" "p05 within the validity: the listing's answer"
expect_errno "a file swapped for a link after the listing is not read" ELOOP read "$W/d/p05"
listing
gsh "mv $GD /maf-sandbox/work/d.real && ln -s /etc /maf-sandbox/work/d" || fail "guest link d"
expect_eq "$(stat -c %F "$W/d/p06")" "regular file" "d/p06 within the validity: the listing's answer"
expect_errno "a read through a directory swapped for a link after the listing" ELOOP read "$W/d/p06"

no_paused
log "ok"
