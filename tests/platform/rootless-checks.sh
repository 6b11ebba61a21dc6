#!/bin/bash
# rootless-checks.sh: run by tests/platform/rootless.sh, as the user of a
# rootless dockerd on cgroup v1 (cgroup driver 'none': no pause, no pids
# limit), from a copy beside tests/mount/lib.sh. What the platform changes:
#   - .ctl/engine and NAME/status say that no freeze is possible and that the
#     pids limit is ignored; the acquire reply and the daemon's log warn of it
#   - the engine plane (-o plane=engine) refuses a file call (EOPNOTSUPP) and
#     an acquire (which needs a freeze there), saying why, leaving no container
#   - the local plane reads a guest file of a subordinate id (a guest uid
#     other than root) where its mode bits let others read, and refuses one
#     they do not with EACCES, the log naming the host and guest owner
#   - a sandbox whose user is not root: an acquire that must make its work
#     dir for that subordinate id is refused with EPERM saying why, leaving
#     no container; where the work dir exists, a write acting as that uid is
#     refused with EPERM saying why
# Needs: MAFSBXFS, MFS_TOOL, DOCKER_HOST naming the rootless engine.
. "$(dirname "$0")/lib.sh"
require_env

M=$T/local
E=$T/engine
PLANE=local mount_fs "$M" -o loglevel=debug
LPID=$DAEMON_PID
LLOG=$T/daemon.local.log

# --- what the engine cannot do, said where a user looks ------------------------
ENG=$(cat "$M/.ctl/engine")
expect_eq "$(jget "$ENG" plane)" local ".ctl/engine plane"
expect_eq "$(jget "$ENG" cgroup_driver)" none ".ctl/engine cgroup_driver"
expect_eq "$(jget "$ENG" freeze)" false ".ctl/engine freeze"
expect_contains "$(jget "$ENG" freeze_why)" "cannot pause" ".ctl/engine freeze_why"
expect_eq "$(jget "$ENG" pids_limit)" false ".ctl/engine pids_limit"

ctl "$M" acquire "{\"scope\": \"$SCOPE\", \"thread\": \"t1\", \"agent\": \"a\", \"kind\": \"k\", \"image\": \"$IMAGE\"}"
expect_eq "$CTL_STATUS" OK "acquire on the local plane ($CTL_REPLY)"
S=$(jget "$CTL_REPLY" name)
expect_contains "$(jget "$CTL_REPLY" warnings)" "ignores the pids limit" "acquire reply warnings"
grep -q "ignores --pids-limit (cgroup driver 'none')" "$LLOG" ||
	fail "the daemon's log does not report the ignored --pids-limit"
ST=$(cat "$M/$S/status")
expect_eq "$(jget "$ST" freeze)" false "status freeze"
expect_contains "$(jget "$ST" freeze_why)" "cannot pause" "status freeze_why"
expect_contains "$(jget "$ST" warnings)" "ignores the pids limit" "status warnings"
expect_eq "$(jget "$ST" paused)" false "status paused"
run_exec "$M" "$S" "echo hello > note.txt"
expect_eq "$CTL_STATUS" OK "exec writes work/note.txt"
expect_eq "$(cat "$M/$S/work/note.txt")" hello "a local-plane read"

# --- the engine plane refuses, saying why ----------------------------------------
PLANE=engine mount_fs "$E" -o loglevel=debug
EPID=$DAEMON_PID
ELOG=$T/daemon.engine.log
expect_eq "$(jget "$(cat "$E/.ctl/engine")" plane)" engine "engine mount's plane"
expect_errno "an engine-plane read" EOPNOTSUPP read "$E/$S/work/note.txt"
grep -q "the engine cannot freeze .*cgroup driver .none.*the local plane needs none" "$ELOG" ||
	fail "the engine-plane daemon's log does not say why the read was refused"
expect_ctl_error "$E" acquire \
	"{\"scope\": \"$SCOPE\", \"thread\": \"t1\", \"agent\": \"a\", \"kind\": \"engineplane\", \"image\": \"$IMAGE\"}" \
	EOPNOTSUPP "the engine cannot freeze"
expect_contains "$(jget "$CTL_REPLY" error.message)" "was removed" "the refused acquire removed its container"
expect_eq "$(docker ps -a --format '{{.Names}}' | grep -c "^maf-sandbox-docker-" || true)" 1 \
	"containers on the engine after the refused acquire (only the local plane's)"
umount_fs "$E" "$EPID"

# --- a guest file of a subordinate id ---------------------------------------------
CID=$(docker inspect -f '{{.Id}}' "$S")
docker exec -u 1000:1000 "$CID" sh -c 'umask 022; echo public > /tmp/sub644; echo secret > /tmp/sub600;
	chmod 600 /tmp/sub600' || fail "docker exec -u 1000 could not make the files"
expect_eq "$(cat "$M/$S/root/tmp/sub644")" public "a 0644 file of guest uid 1000 read on the local plane"
expect_errno "a 0600 file of guest uid 1000" EACCES read "$M/$S/root/tmp/sub600"
grep -q "read tmp/sub600: this daemon is not root (uid $(id -u)) .*(guest uid 1000, a subordinate id" "$LLOG" ||
	fail "the daemon's log does not say why the subordinate id's file was refused"
# the guest's root is this user: its 0600 files are ours to read
docker exec "$CID" sh -c 'echo mine > /tmp/root600; chmod 600 /tmp/root600' || fail "docker exec"
expect_eq "$(cat "$M/$S/root/tmp/root600")" mine "a 0600 file of guest root"

# --- a sandbox whose user is a subordinate id ---------------------------------------
# An image with no work dir: acquire must make it for uid 1000 (host: a
# subordinate id), which a daemon that is not root cannot give away.
U1000=mafsbx/busybox-rootless-u1000:latest
FRESH=$(docker create "$IMAGE" true) || fail "docker create"
commit_image "$FRESH" "$U1000" "USER 1000:1000" || fail "cannot commit $U1000"
docker rm -f "$FRESH" >/dev/null
expect_ctl_error "$M" acquire \
	"{\"scope\": \"$SCOPE\", \"thread\": \"t2\", \"agent\": \"a\", \"kind\": \"u1000\", \"image\": \"$U1000\"}" \
	EPERM "cannot give it to the guest's host ids"
expect_contains "$(jget "$CTL_REPLY" error.message)" "was removed" "the refused acquire removed its container"
expect_eq "$(docker ps -a --format '{{.Names}}' | grep -c "^maf-sandbox-docker-" || true)" 1 \
	"containers on the engine after the refused acquire of uid 1000 (only the first sandbox)"
# An image whose work dir exists (root's, from S): the acquire succeeds, and
# a write acting as uid 1000 is refused saying why.
U1000W=mafsbx/busybox-rootless-u1000w:latest
commit_image "$CID" "$U1000W" "USER 1000:1000" || fail "cannot commit $U1000W"
IMAGE=$U1000W acquire "$M" t3 a u1000w
S2=$SBX
expect_errno "a write acting as guest uid 1000" EPERM write "$M/$S2/work/new.txt" data
grep -q "write (acting as the guest) new.txt: this daemon is not root (uid $(id -u)) and cannot act as the guest's host ids" "$LLOG" ||
	fail "the daemon's log does not say why the write as guest uid 1000 was refused"
rmdir "$M/$S2" || fail "rmdir $S2"
docker image rm -f "$U1000" "$U1000W" >/dev/null || fail "docker image rm"

rmdir "$M/$S" || fail "rmdir $S"
expect_eq "$("$MFS_TOOL" state "$S")" absent "the sandbox after rmdir"
umount_fs "$M" "$LPID"
log "PASS"
