#!/usr/bin/env bash
# identity.sh: whose authority a write through the mount has (doc/security.md "Findings fixed after review").
#   1. an image that names a user the mount cannot resolve without trusting
#      the guest (USER sandbox, /etc/passwd a link, no `id`): the acquire
#      reply gives no uid (never 0), `status` says why, and a write to a
#      root-owned 0444 file, a new file, a mkdir and an unlink all fail with
#      EACCES; the file is untouched. A `id` planted first on the guest's
#      PATH, printing 0, changes nothing.
#   2. a host append to a root-owned 0602 file in the guest's work dir (the
#      guest may write it, not read it) keeps its owner, group and mode: the
#      guest still cannot read it afterwards.
#   3. (local plane) the temporary of a failed replace is removed as the
#      guest: a root-owned file left at its name in a sticky dir stays.
#   4. a truncating write (O_TRUNC, or a create over an existing file) keeps
#      the file's owner, group and mode too, and drops its set-id bits: a
#      root-owned 0602 file stays root's and unreadable to the guest, a
#      root-owned set-id file the guest may write is no longer set-id.
# Runs on both planes (MAFSBX_TEST_PLANE).
. "$(dirname "$0")/lib.sh"
require_env
command -v docker >/dev/null || skip_or_fail "the docker CLI is missing"

GW=/maf-sandbox/work

# dexec USER CONTAINER ARGS...: docker exec, retried while a burst's freeze holds the guest (lib.sh)
dexec() { dexec_as "$@"; }

# build_image TAG USER SCRIPT: the test image, changed by SCRIPT run as root,
# committed with USER (once per machine: the tag is reused).
build_image() {
	docker image inspect "$1" >/dev/null 2>&1 && return 0
	local cid
	cid=$(docker run -d --network none -u 0 "$IMAGE" sh -c "$3") || fail "docker run (image $1)"
	[ "$(docker wait "$cid")" = 0 ] || fail "image $1: the setup script failed: $(docker logs "$cid" 2>&1)"
	docker commit --change "USER $2" --change 'CMD ["/bin/sleep", "infinity"]' "$cid" "$1" >/dev/null ||
		fail "docker commit $1"
	docker rm "$cid" >/dev/null
}

M=$T/mnt
mount_fs "$M"

# ---- 1. an unresolvable named user never becomes root ------------------------------------
# runc follows the link and runs the guest as 1000; the mount's archive read
# refuses a link, and no `id` is there to ask. A fake `id` printing 0 sits
# first on the guest's PATH (/usr/local/bin): trusting it would mean root.
G_IMAGE=mafsbx/busybox-ghost:test2
build_image "$G_IMAGE" sandbox "rm -f /bin/id /usr/bin/id &&
	mv /etc/passwd /etc/passwd.real && ln -s passwd.real /etc/passwd &&
	mkdir -p /usr/local/bin && printf '#!/bin/sh\necho 0\n' > /usr/local/bin/id && chmod 755 /usr/local/bin/id &&
	mkdir -p $GW && echo original > $GW/ro && chmod 444 $GW/ro && chown 1000:1000 $GW"
IMAGE=$G_IMAGE acquire "$M" t a ghost ', "capabilities": ["exec"]'
G=$SBX
GWM=$M/$G/work
[ "$(jget "$CTL_REPLY" uid)" = 0 ] && fail "the acquire reply says uid 0 for an unresolved user: $CTL_REPLY"
[ "$(jget "$CTL_REPLY" gid)" = 0 ] && fail "the acquire reply says gid 0 for an unresolved user: $CTL_REPLY"
expect_contains "$(jget "$CTL_REPLY" identity)" "sandbox" "the acquire reply says why the identity is unknown"
ST=$(cat "$M/$G/status") || fail "status"
expect_eq "$(jget "$ST" identity.resolved)" false "status: identity.resolved"
expect_contains "$(jget "$ST" identity.reason)" "/etc/passwd" "status: why the identity is unresolved"
expect_eq "$(dexec sandbox "$G" awk '/^Uid:/ { print $2 }' /proc/self/status)" 1000 "the guest itself runs as 1000"
expect_errno "overwrite a root-owned 0444 file" EACCES write "$GWM/ro"
expect_errno "append to a root-owned 0444 file" EACCES append "$GWM/ro"
expect_errno "create a file" EACCES write "$GWM/new"
expect_errno "mkdir" EACCES mkdir "$GWM/newdir"
expect_errno "unlink" EACCES unlink "$GWM/ro"
expect_eq "$(dexec 0 "$G" sh -c "stat -c %u:%g:%a $GW/ro; cat $GW/ro")" "0:0:444
original" "the root-owned file is untouched"
dexec 0 "$G" test ! -e "$GW/new" || fail "a file was created at root's authority"
dexec 0 "$G" test ! -e "$GW/newdir" || fail "a directory was created at root's authority"
# reading stays as it was (the mount's own owner and modes)
expect_eq "$(cat "$GWM/ro")" original "reads are served"

# ---- 2. a host append keeps a file's owner, group and mode ------------------------------
# The guest (sandbox, 1000) owns the work dir and may write the root-owned
# 0602 file `wo`, not read it. An append from the host must leave it so.
W_IMAGE=mafsbx/busybox-wo:test2
build_image "$W_IMAGE" sandbox "mkdir -p $GW && chown 1000:1000 $GW &&
	echo TOPSECRET > $GW/wo && chown 0:0 $GW/wo && chmod 602 $GW/wo &&
	echo mine > $GW/own && chown 1000:1000 $GW/own && chmod 640 $GW/own"
IMAGE=$W_IMAGE acquire "$M" t a wo
N=$SBX
W=$M/$N/work
expect_eq "$(jget "$CTL_REPLY" uid)" 1000 "the guest's uid"
dexec sandbox "$N" cat "$GW/wo" 2>/dev/null && fail "the guest could read the 0602 file before the append"
echo appended >>"$W/wo" || fail "the append (the guest may write the file)"
expect_eq "$(dexec 0 "$N" stat -c %u:%g:%a "$GW/wo")" 0:0:602 "owner, group and mode after the append"
dexec sandbox "$N" cat "$GW/wo" 2>/dev/null && fail "the append handed the guest a file it could not read"
expect_eq "$(dexec 0 "$N" cat "$GW/wo")" "TOPSECRET
appended" "the appended content"
# the guest's own file is still replaced whole, and stays the guest's
echo more >>"$W/own" || fail "append to the guest's own file"
expect_eq "$(dexec 0 "$N" stat -c %u:%g:%a "$GW/own")" 1000:1000:640 "the guest's own file after an append"
expect_eq "$(dexec sandbox "$N" cat "$GW/own")" "mine
more" "the guest's own file's content"

# ---- 3. a failed replace's temporary goes at the guest's authority (local plane) ----------
# A replace makes `.mafsbxfs-*` beside the target as the guest. In the
# root-owned sticky dir `st` root swaps it for a root-owned file of the same
# name: the guest can neither rename that over `f` (the commit fails) nor
# remove it, so the mount must not remove it either (it did, as root).
if [ "$PLANE" = local ]; then
	S_IMAGE=mafsbx/busybox-sticky:test2
	build_image "$S_IMAGE" sandbox "mkdir -p $GW/st && chmod 1777 $GW/st &&
		echo old > $GW/st/f && chown 1000:1000 $GW/st/f && chmod 644 $GW/st/f"
	IMAGE=$S_IMAGE acquire "$M" t a sticky
	K=$SBX
	exec 3<>"$M/$K/work/st/f" || fail "open the guest's own file read-write"
	dexec 0 "$K" sh -c "cd $GW/st && t=\$(ls -A | grep '^\.mafsbxfs-') && [ -n \"\$t\" ] &&
		rm \"\$t\" && echo rootfile > \"\$t\" && chmod 600 \"\$t\"" ||
		fail "no temporary beside the file while it is open for writing"
	echo new >&3 || true
	exec 3>&- || true
	expect_eq "$(dexec 0 "$K" sh -c "cat $GW/st/.mafsbxfs-* 2>&1")" rootfile \
		"root's file at the temporary's name after the failed replace (removed at root's authority?)"
	expect_eq "$(dexec 0 "$K" cat "$GW/st/f")" old "the target after the failed replace"
fi

# ---- 4. a truncating write keeps owner, group and mode, and drops set-id bits ----------------
# The image has, in the guest's work dir, `tw` root's 0602, `su` root's 6757
# (the guest may write it) and `gsu` the guest's 6755.
T_IMAGE=mafsbx/busybox-trunc:test2
build_image "$T_IMAGE" sandbox "mkdir -p $GW && chown 1000:1000 $GW && cd $GW &&
	echo TOPSECRET > tw && chown 0:0 tw && chmod 602 tw &&
	echo '#!/bin/sh' > su && chown 0:0 su && chmod 6757 su &&
	echo '#!/bin/sh' > gsu && chown 1000:1000 gsu && chmod 6755 gsu"
IMAGE=$T_IMAGE acquire "$M" t a trunc
N=$SBX
W=$M/$N/work
echo replaced >"$W/tw" || fail "the truncating write (the guest may write the file)"
expect_eq "$(dexec 0 "$N" stat -c %u:%g:%a "$GW/tw")" 0:0:602 "owner, group and mode after a truncating write"
dexec sandbox "$N" cat "$GW/tw" 2>/dev/null && fail "a truncating write handed the guest a file it could not read"
expect_eq "$(dexec 0 "$N" cat "$GW/tw")" replaced "the truncated file's content"
# a create over the existing file (O_CREAT|O_TRUNC, as open(2) with a mode)
python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, b"echo guest\n")
os.close(fd)' "$W/su" || fail "the create over root's set-id file"
expect_eq "$(dexec 0 "$N" stat -c %u:%g:%a "$GW/su")" 0:0:757 "root's set-id file rewritten: root's, no set-id bits"
echo 'echo mine' >"$W/gsu" || fail "the truncating write of the guest's set-id file"
expect_eq "$(dexec 0 "$N" stat -c %u:%g:%a "$GW/gsu")" 1000:1000:755 "the guest's set-id file rewritten: no set-id bits"

no_paused
log "ok ($PLANE plane)"
