#!/bin/bash
# ssh.sh: ssh:// endpoints (mafsbxfs(1) ENGINE ENDPOINT) through a real sshd on 127.0.0.1 (its
# own keys, config, port and process: tests/remote/lib.sh) driving this
# machine's dockerd with `docker system dial-stdio`, as the Docker CLI does:
#  - the subset through a mount and the CLI: .ctl/engine (kind ssh, plane
#    engine), acquire, write/stat/read, exec with stdin, dispose, reap;
#  - it_remote over the same endpoint (exec with stdin up to 2 MiB, parallel
#    execs, acquire/files/dispose);
#  - failures name ssh's own reason and mount nothing: a user the server
#    refuses, a port nobody listens on; URLs that would smuggle an ssh option
#    are refused before anything runs;
#  - clean teardown: after the unmount no ssh process of the daemon is left
#    (no zombie, none running).
. "$(dirname "$0")/lib.sh"
require_env
[ -x /usr/sbin/sshd ] || skip_or_fail "sshd is missing (Debian package openssh-server)"
command -v ssh-keygen >/dev/null || skip_or_fail "ssh-keygen is missing"

sshd_start
URL=ssh://root@127.0.0.1:$SSH_PORT

remote_subset "$URL" ssh

DOCKER_HOST=$URL "$REMOTE_IT" || fail "it_remote over ssh failed"

# --- no ssh process outlives its daemon -------------------------------------
M=$T/mnt-procs
mount_fs "$M" -o "host=$URL"
PID=$DAEMON_PID
cat "$M/.ctl/engine" >/dev/null || fail ".ctl/engine over ssh"
kids=$(pgrep -P "$PID" -x ssh | wc -l)
[ "$kids" -ge 1 ] || fail "no ssh child while mounted over ssh"
umount_fs "$M" "$PID"
left=$(ps -eo ppid=,comm= | awk -v p="$PID" '$1 == p' | wc -l)
expect_eq "$left" 0 "processes left by the daemon after unmount"
pgrep -f -- "-p $SSH_PORT" >/dev/null && fail "an ssh to port $SSH_PORT is still running after the unmount"

# --- failures name the reason and mount nothing -------------------------------
expect_mount_refused "a user the server refuses" "Permission denied" -o "host=ssh://nobody@127.0.0.1:$SSH_PORT"
expect_mount_refused "nobody listening" "Connection refused" -o "host=ssh://root@127.0.0.1:$(free_port)"
out=$("$MAFSBX_CLI" ls -H "ssh://root@127.0.0.1:$SSH_PORT:" 2>&1) && fail "a malformed ssh:// URL was accepted"
expect_contains "$out" "port" "malformed ssh URL"
out=$("$MAFSBX_CLI" ls -H "ssh://-oProxyCommand=x@127.0.0.1" 2>&1) && fail "an option-looking user was accepted"
expect_contains "$out" "must not start with '-'" "option-looking user"
out=$("$MAFSBX_CLI" ls -H "ssh://root@-oProxyCommand=x" 2>&1) && fail "an option-looking host was accepted"
log "PASS"
