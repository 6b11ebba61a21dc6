#!/bin/bash
# thaw_users.sh: `mafsbx thaw` as root lifts the freezes left in every
# user's runtime directory, not only root's (mafsbx(1) THAW), and exits 0
# from cron when nothing it found stays frozen:
#   1. another user's /tmp/mafsbxfs-UID holds the lock files of a freeze
#      whose holder is gone (the marker in ID.gate, nobody holding ID.hold:
#      what a SIGKILLed mount of that user leaves) of a really paused
#      sandbox; root's `mafsbx thaw` with no --rundir unpauses it, says
#      "lifted 1" for that directory and exits 0;
#   2. a directory not owned by the uid its name says, and a symbolic link
#      in a directory's place, are refused, said on stderr, and do not
#      change the exit status;
#   3. the lock files root made in the user's directory are the user's, so
#      the user's own mounts still open them; and root collects no lock files
#      there (they may be a rootless engine's, whose containers root's engine
#      calls gone).
. "$(dirname "$0")/lib.sh"
require_env
: "${MAFSBX_CLI:?MAFSBX_CLI must name the mafsbx binary}"
[ "$(id -u)" = 0 ] || skip_or_fail "must run as root (it walks every user's runtime directory)"

OTHER=mafsbxtest-other
id "$OTHER" >/dev/null 2>&1 || useradd -M -s /bin/sh "$OTHER" || fail "useradd"
OUID=$(id -u "$OTHER")
as_other() { su -s /bin/sh "$OTHER" -c "$1"; }
UD=/tmp/mafsbxfs-$OUID
# two names of uids nobody has, unique to this run
BAD_OWNER=/tmp/mafsbxfs-$((4000000000 + $$ % 100000))
BAD_LINK=/tmp/mafsbxfs-$((4000100000 + $$ % 100000))
made_ud=0
ID=

# an ID no engine here has: the record of another engine's container
GONE=$(printf '%064x' $$)
finish() {
	[ -n "$ID" ] && rm -f "$UD/$ID".*
	rm -f "$UD/$GONE".*
	[ "$made_ud" = 1 ] && rmdir "$UD" 2>/dev/null
	rm -rf "$BAD_OWNER"
	rm -f "$BAD_LINK"
	cleanup
}
trap finish EXIT

if [ -e "$UD" ] || [ -L "$UD" ]; then
	[ "$(stat -c %u "$UD")" = "$OUID" ] && [ ! -L "$UD" ] || fail "$UD exists and is not $OTHER's directory"
else
	made_ud=1
fi
N=$(MFS_HANDMADE_PLAIN=1 "$MFS_TOOL" handmade "$SCOPE" t a thawusers) || fail "cannot start a sandbox"
ID=$(docker inspect -f '{{.Id}}' "$N") || fail "inspect $N"

# --- 1. a freeze left in another user's runtime directory ----------------------
as_other "umask 077 && mkdir -p $UD && printf 'frozen pid 999999 t=0\\n' >$UD/$ID.gate && : >$UD/$ID.hold && : >$UD/$GONE.gate" ||
	fail "cannot write $OTHER's lock files"
docker pause "$N" >/dev/null || fail "docker pause"
expect_eq "$("$MFS_TOOL" state "$N")" paused "the sandbox before the thaw"

# --- 2. directories that are not what their names say ---------------------------
mkdir -m 700 "$BAD_OWNER"
ln -s "$UD" "$BAD_LINK"

"$MAFSBX_CLI" thaw >"$T/thaw.out" 2>"$T/thaw.err"
rc=$?
log "thaw (exit $rc): $(cat "$T/thaw.out") | stderr: $(cat "$T/thaw.err")"
expect_eq "$rc" 0 "root's thaw exit status"
expect_eq "$("$MFS_TOOL" state "$N")" running "the sandbox after root's thaw"
grep -qxF "$UD: lifted 1" "$T/thaw.out" || fail "no line '$UD: lifted 1' in: $(cat "$T/thaw.out")"
grep -qF "$BAD_OWNER: refused: owned by uid 0, not by uid ${BAD_OWNER#/tmp/mafsbxfs-}" "$T/thaw.err" ||
	fail "the directory of another owner was not refused: $(cat "$T/thaw.err")"
grep -qF "$BAD_LINK: refused: not a directory" "$T/thaw.err" ||
	fail "the symbolic link was not refused: $(cat "$T/thaw.err")"
log "ok: root's thaw lifts a freeze in another user's directory and refuses the wrong ones"

# --- 3. what root left in the user's directory is the user's ---------------------
strays=$(find "$UD" -maxdepth 1 -name "$ID.*" ! -user "$OTHER")
[ -z "$strays" ] || fail "root left lock files in $UD that are not $OTHER's: $strays"
as_other "exec 3>>$UD/$ID.gate && exec 4>>$UD/$ID.hold" || fail "$OTHER cannot open its own lock files"
[ -e "$UD/$GONE.gate" ] || fail "root collected a lock file in $OTHER's directory"

out=$("$MAFSBX_CLI" thaw --json 2>/dev/null) || fail "a second thaw: exit $?"
expect_eq "$(jget "$out" thawed)" 0 "a second thaw has nothing to do"
printf '%s' "$out" | grep -qF "\"rundir\": \"$UD\", \"result\": \"none\"" ||
	printf '%s' "$out" | grep -qF "\"rundir\":\"$UD\",\"result\":\"none\"" ||
	fail "the second thaw does not say 'none' for $UD: $out"
log "ok: root's lock files in the user's directory are the user's"
