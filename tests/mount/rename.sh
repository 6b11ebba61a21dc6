#!/usr/bin/env bash
# rename.sh: renameat2(2)'s flags through the mount, on the plane named by
# MAFSBX_TEST_PLANE (meson runs it on both; see
# mafsbxfs(1) READING AND WRITING FILES). Never a silent move:
# RENAME_EXCHANGE of two files and of two directories leaves the host
# (reading through the mount) and the guest (reading with cat in the
# sandbox) agreeing on every name, and a write
# through an exchanged name lands in the file that name now holds (local
# plane), or is refused with EINVAL with nothing changed (engine plane, which
# has no rename); RENAME_NOREPLACE onto an existing name is EEXIST and moves
# nothing, onto a missing one it moves (local; EXDEV on the engine plane, as a
# plain rename: nothing moves); RENAME_WHITEOUT and an unknown flag are EINVAL; the flags on
# the rest of the tree get the errors a plain rename gets there.
. "$(dirname "$0")/lib.sh"
require_env

M=$T/mnt
mount_fs "$M"
acquire "$M" t a rename
N=$SBX
W=$M/$N/work

rename2() { "$MFS_TOOL" rename2 "$@"; }
# guest CMD: the stdout of CMD run in the sandbox (its working directory is work/)
guest() {
	run_exec "$M" "$N" "$1"
	[ "$CTL_STATUS" = OK ] || fail "exec '$1': $CTL_STATUS $CTL_REPLY"
	jget "$CTL_REPLY" stdout
}
# agree WANT NAME...: the host and the guest read NAME... as WANT ("c1/c2/...")
agree() {
	local want=$1 host="" n
	shift
	for n in "$@"; do host="$host${host:+/}$(cat "$W/$n")" || fail "host read of $n"; done
	expect_eq "$host" "$want" "the host reads $*"
	local cmd="" sep=""
	for n in "$@"; do cmd="$cmd$sep\$(cat $n)"; sep=/; done
	expect_eq "$(guest "printf '%s' \"$cmd\"")" "$want" "the guest reads $*"
}

# ---- two files ---------------------------------------------------------------
printf AAA >"$W/a" || fail "write a"
printf BBBBB >"$W/b" || fail "write b"
# Both read first: the kernel and the daemon hold a node (and cache) for each;
# `a` stays open across the exchange.
agree AAA/BBBBB a b
exec 3<"$W/a" || fail "open a"
r=$(rename2 "$W/a" "$W/b" exchange)
if [ "$PLANE" = local ]; then
	expect_eq "$r" OK "RENAME_EXCHANGE of two files"
	agree BBBBB/AAA a b
	expect_eq "$(stat -c %s "$W/a") $(stat -c %s "$W/b")" "5 3" "the sizes the host sees"
	expect_eq "$(cat <&3)" AAA "a file open across the exchange stays the file it was"
	# A write through an exchanged name lands in the file the name now holds.
	printf CCC >"$W/a" || fail "write a after the exchange"
	agree CCC/AAA a b
	# And back: each name has its first contents again.
	expect_eq "$(rename2 "$W/a" "$W/b" exchange)" OK "RENAME_EXCHANGE back"
	agree AAA/CCC a b
else
	expect_eq "$r" EINVAL "RENAME_EXCHANGE on the engine plane"
	agree AAA/BBBBB a b
	expect_eq "$(cat <&3)" AAA "a file open across the refused exchange"
fi
exec 3<&-

# ---- two directories, with files below each ---------------------------------
mkdir -p "$W/d1/sub" "$W/d2" || fail "mkdir"
printf one >"$W/d1/f" && printf deep >"$W/d1/sub/g" && printf two >"$W/d2/f" || fail "write the trees"
agree one/deep/two d1/f d1/sub/g d2/f
r=$(rename2 "$W/d1" "$W/d2" exchange)
if [ "$PLANE" = local ]; then
	expect_eq "$r" OK "RENAME_EXCHANGE of two directories"
	agree two/one/deep d1/f d2/f d2/sub/g
	expect_errno "d1/sub went with its directory" ENOENT stat "$W/d1/sub/g"
	expect_eq "$(guest 'ls d1; ls d2 | tr "\n" " "')" "f
f sub " "the guest lists d1 and d2"
	expect_eq "$(ls "$W/d1"; ls "$W/d2" | tr '\n' ' ')" "f
f sub " "the host lists d1 and d2"
else
	expect_eq "$r" EINVAL "RENAME_EXCHANGE of two directories on the engine plane"
	agree one/deep/two d1/f d1/sub/g d2/f
fi

# ---- RENAME_NOREPLACE ----------------------------------------------------------
printf SRC >"$W/src" && printf DST >"$W/dst" || fail "write src, dst"
agree SRC/DST src dst
# The kernel answers this one from its own lookup: nothing reaches the plane.
expect_eq "$(rename2 "$W/src" "$W/dst" noreplace)" EEXIST "RENAME_NOREPLACE onto an existing file"
agree SRC/DST src dst
if [ "$PLANE" = local ]; then
	expect_eq "$(rename2 "$W/src" "$W/new" noreplace)" OK "RENAME_NOREPLACE onto a missing name"
	expect_errno "the source moved" ENOENT stat "$W/src"
	expect_eq "$(guest 'test -e src || echo gone')" gone "the guest's source moved"
	agree SRC/DST new dst
	# A name the host last saw missing, made by the guest since: refused
	# all the same.
	expect_errno "late is missing" ENOENT stat "$W/late"
	guest 'printf LATE > late' >/dev/null
	expect_eq "$(rename2 "$W/new" "$W/late" noreplace)" EEXIST "RENAME_NOREPLACE onto a name the guest made"
	agree SRC/LATE new late
else
	expect_eq "$(rename2 "$W/src" "$W/new" noreplace)" EXDEV "RENAME_NOREPLACE onto a missing name (engine)"
	expect_errno "nothing was made" ENOENT stat "$W/new"
	agree SRC/DST src dst
fi

# ---- refused flags: nothing changes --------------------------------------------
expect_eq "$(rename2 "$W/dst" "$W/other" whiteout)" EINVAL "RENAME_WHITEOUT"
expect_eq "$(rename2 "$W/dst" "$W/other" 0x80)" EINVAL "an unknown flag"
expect_eq "$(rename2 "$W/dst" "$W/other" 3)" EINVAL "RENAME_NOREPLACE and RENAME_EXCHANGE together"
expect_errno "nothing was made" ENOENT stat "$W/other"
expect_eq "$(guest 'test -e other || echo absent')" absent "the guest has no 'other'"
agree DST dst

# ---- the rest of the tree: a plain rename's errors ------------------------------
expect_eq "$(rename2 "$M/.ctl/acquire" "$M/.ctl/exec" exchange)" EPERM ".ctl exchange"
expect_eq "$(rename2 "$M/.ctl/acquire" "$M/.ctl/x" noreplace)" EPERM ".ctl noreplace"
expect_eq "$(rename2 "$M/$N/status" "$W/dst" exchange)" EPERM "status exchanged with a work file"
expect_eq "$(rename2 "$M/$N/root/etc/passwd" "$M/$N/root/etc/group" exchange)" EROFS "root/ exchange"
expect_eq "$(rename2 "$M/$N" "$M/.ctl" exchange)" EPERM "NAME exchanged with .ctl"
agree DST dst
[ "$(head -c 5 "$M/$N/root/etc/passwd")" = "root:" ] || fail "root/etc/passwd changed"

umount_fs "$M" "$DAEMON_PID"
log "ok ($PLANE plane)"
