#!/bin/bash
# bench_remote.sh: bench_mount over the three kinds of endpoint in one run
# (doc/performance.md): this machine's unix socket, a private dockerd over TLS and this
# machine's dockerd over ssh://, with the same set-up and teardown as the
# remote tests (tests/remote/lib.sh). Not a test; run it by hand, as root,
# from a built tree:
#
#   tests/remote/bench_remote.sh [BUILD_DIR] [bench_mount options...]
#
# Default bench_mount options: --runs 7 --sandboxes 10.
build=$(cd "${1:-build}" && pwd) || exit 2
shift
export MAFSBXFS=$build/fs/mafsbxfs MFS_TOOL=$build/tests/mount/mfs_tool
export MAFSBX_CLI=$build/tools/mafsbx REMOTE_IT=$build/tests/remote/it_remote
opts=("$@")
((${#opts[@]})) || opts=(--runs 7 --sandboxes 10)
set --
. "$(dirname "$0")/lib.sh"
require_env
tls_engine_start
sshd_start
export DOCKER_TLS_VERIFY=1 DOCKER_CERT_PATH=$TLS_CERTS
"$build/tests/bench/bench_mount" --mafsbxfs "$MAFSBXFS" "${opts[@]}" \
	--host unix:///var/run/docker.sock --host "tcp://localhost:$TLS_PORT" --host "ssh://root@127.0.0.1:$SSH_PORT"
