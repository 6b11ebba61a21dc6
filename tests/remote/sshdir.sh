#!/bin/bash
# sshdir.sh: the ssh:// transport's socket directory (doc/security.md "Findings fixed after review": the ssh transport's private socket directory).
# Its listeners and the ssh master's control socket go in a private 0700
# directory under the runtime directory (MAFSBX_RUNDIR here), never /tmp.
# When that directory vanishes it is not made again under its name, and
# when someone else's directory (another owner, mode 0777, a planted file)
# stands at its name it is left alone: the next connection uses a fresh
# directory, nothing of ours lands in the planted one, and requests work.
. "$(dirname "$0")/lib.sh"
require_env
[ -x /usr/sbin/sshd ] || skip_or_fail "sshd is missing (Debian package openssh-server)"
command -v ssh-keygen >/dev/null || skip_or_fail "ssh-keygen is missing"

sshd_start
URL=ssh://root@127.0.0.1:$SSH_PORT
RUN=$T/run
mkdir -m 0700 "$RUN"
export MAFSBX_RUNDIR=$RUN

# ssh_dirs: the transport directories in the runtime directory, one a line
ssh_dirs() { find "$RUN" -mindepth 1 -maxdepth 1 -name 'ssh-*' -type d | sort; }
# exec_ok: an exec needs a fresh connection (a hijacked stream is never pooled)
exec_ok() {
	run_exec "$M" "$N" "echo $1"
	[ "$CTL_STATUS" = OK ] || fail "exec ($1): $CTL_STATUS $CTL_REPLY"
	expect_eq "$(jget "$CTL_REPLY" stdout)" "$1" "exec output ($1)"
}

M=$T/mnt
mount_fs "$M" -o "host=$URL"
acquire "$M" t a sshdir
N=$SBX
exec_ok first
D1=$(ssh_dirs)
[ -n "$D1" ] || fail "no ssh transport directory under the runtime directory $RUN: $(ls -la "$RUN"; ls -d /tmp/mafsbx-ssh-* 2>/dev/null)"
expect_eq "$(printf '%s\n' "$D1" | wc -l)" 1 "one transport directory"
expect_eq "$(stat -c '%u %a' "$D1")" "$(id -u) 700" "the transport directory's owner and mode"

# --- it vanishes (a cleaner): a fresh directory, never the same name again ---
rm -rf "$D1"
exec_ok after-vanish
[ -e "$D1" ] && fail "the vanished directory $D1 was made again under its name"
D2=$(ssh_dirs)
[ -n "$D2" ] || fail "no new transport directory after $D1 vanished"
expect_eq "$(stat -c '%u %a' "$D2")" "$(id -u) 700" "the new directory's owner and mode"

# --- someone else's directory at its name: left alone, a fresh one used ---
rm -rf "$D2"
mkdir -m 0777 "$D2"
echo planted >"$D2/planted"
chown -R nobody "$D2"
chmod 0777 "$D2"
exec_ok after-plant
expect_eq "$(ls -A "$D2")" planted "nothing of the transport was made in the planted directory"
expect_eq "$(stat -c '%U %a' "$D2")" "nobody 777" "the planted directory is left as it was"
D3=$(ssh_dirs | grep -vxF "$D2")
[ -n "$D3" ] || fail "no fresh transport directory beside the planted one"
expect_eq "$(stat -c '%u %a' "$D3")" "$(id -u) 700" "the fresh directory's owner and mode"

# --- a runtime directory others may write is refused for the sockets ---
chmod 0777 "$RUN"
rm -rf "$D3"
run_exec "$M" "$N" "echo refused"
[ "$CTL_STATUS" = OK ] && fail "an exec ran with its socket in a world-writable runtime directory"
chmod 0700 "$RUN"
exec_ok restored

umount_fs "$M" "$DAEMON_PID"
log "PASS"
