# lib.sh: sourced by the remote-engine tests (tests/remote/*.sh), on top of
# tests/mount/lib.sh (mounts, .ctl transactions, cleanup of this run's scope).
#
# A test owns everything remote it uses, and tears it all down at exit:
#  - tls_engine_start: a CA, server and client certificates made with openssl,
#    and a PRIVATE dockerd (own --data-root, --exec-root, --pidfile, unix
#    socket, containerd and containerd namespace, a bridge of its own,
#    --iptables=false) listening on tcp://127.0.0.1:PORT with --tlsverify; the
#    test image is copied into it from the shared engine (docker save | load).
#    The shared dockerd is never stopped, restarted or reconfigured.
#  - sshd_start: a host key and a user key made by the test, its own
#    sshd_config on a private port of 127.0.0.1, and its own sshd process (the
#    system's sshd, if any, is neither used nor touched). The ssh client is
#    pointed at the test's key and known_hosts by a wrapper named `ssh` first
#    on PATH (ssh reads ~/.ssh of the passwd entry, not $HOME, and the test
#    must not write there); it execs the real /usr/bin/ssh with -F.
# Needs, besides MAFSBXFS and MFS_TOOL: MAFSBX_CLI (the mafsbx binary) and
# REMOTE_IT (tests/remote/it_remote).

. "$(dirname "$0")/../mount/lib.sh"

: "${MAFSBX_CLI:?MAFSBX_CLI must name the mafsbx binary}"
: "${REMOTE_IT:?REMOTE_IT must name the it_remote binary}"

PRIV_DIR=""        # the private dockerd's directory (data root, exec root, socket)
PRIV_PID=""
PRIV_BRIDGE=""     # the private dockerd's own bridge interface (never docker0)
SSHD_PID=""
SSHD_DIR=""

# A free TCP port on 127.0.0.1 (the kernel's choice; a race with another
# binder is possible but harmless: the listener then fails and the test says so).
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

remote_teardown() {
	if [ -n "$PRIV_PID" ] && kill -0 "$PRIV_PID" 2>/dev/null; then
		kill -TERM "$PRIV_PID" 2>/dev/null
		wait_exit "$PRIV_PID" 20 || { log "private dockerd did not stop: killing it"; kill -KILL "$PRIV_PID"; }
	fi
	if [ -n "$PRIV_DIR" ]; then
		# dockerd bind-mounts its data root (and overlay2 leaves mounts on a hard stop).
		local m
		for m in $(awk -v d="$PRIV_DIR" 'index($2, d) == 1 { print $2 }' /proc/self/mounts | sort -r); do
			umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
		done
		rm -rf "$PRIV_DIR"
	fi
	if [ -n "$PRIV_BRIDGE" ]; then
		ip link del "$PRIV_BRIDGE" 2>/dev/null || log "could not remove the bridge $PRIV_BRIDGE"
	fi
	if [ -n "$SSHD_PID" ] && kill -0 "$SSHD_PID" 2>/dev/null; then
		kill -TERM "$SSHD_PID" 2>/dev/null
		wait_exit "$SSHD_PID" 10 || kill -KILL "$SSHD_PID" 2>/dev/null
	fi
	if [ -n "${TERM_PID:-}" ] && kill -0 "$TERM_PID" 2>/dev/null; then
		kill -TERM "$TERM_PID" 2>/dev/null
		wait_exit "$TERM_PID" 10 || kill -KILL "$TERM_PID" 2>/dev/null
	fi
}

# Replaces mount/lib.sh's cleanup: mounts first, then this run's scope on the
# shared engine, then the private engine and sshd, then the files.
cleanup() {
	local rc=$?
	local d pid mnt logf
	for d in "${DAEMONS[@]}"; do
		pid=${d%%:*}
		mnt=${d#*:}
		mnt=${mnt%%:*}
		logf=${d##*:}
		is_mounted "$mnt" && fusermount3 -u -z "$mnt" 2>/dev/null
		if [ "$pid" -gt 0 ] 2>/dev/null && kill -0 "$pid" 2>/dev/null; then
			kill -TERM "$pid" 2>/dev/null
			wait_exit "$pid" 10 || kill -KILL "$pid" 2>/dev/null
		fi
		if [ "$rc" != 0 ] && [ -s "$logf" ]; then
			log "daemon log $logf:"
			tail -n 40 "$logf" >&2
		fi
	done
	(unset DOCKER_HOST DOCKER_TLS_VERIFY DOCKER_CERT_PATH; "$MFS_TOOL" rm-scope "$SCOPE" 2>/dev/null)
	if [ "$rc" != 0 ] && [ -n "$PRIV_DIR" ] && [ -s "$PRIV_DIR/dockerd.log" ]; then
		log "private dockerd log:"
		tail -n 20 "$PRIV_DIR/dockerd.log" >&2
	fi
	if [ "$rc" != 0 ] && [ -n "$SSHD_DIR" ] && [ -s "$SSHD_DIR/sshd.log" ]; then
		log "sshd log:"
		tail -n 20 "$SSHD_DIR/sshd.log" >&2
	fi
	remote_teardown
	rm -rf "$T"
	exit "$rc"
}

# make_cert DIR NAME CA_DIR SUBJ EXT DAYS: NAME.pem / NAME-key.pem signed by CA_DIR/ca.pem
make_cert() {
	local dir=$1 name=$2 ca=$3 subj=$4 ext=$5 days=$6
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$dir/$name-key.pem" \
		-out "$dir/$name.csr" -subj "$subj" 2>/dev/null || fail "openssl req $name"
	printf '%b' "$ext" >"$dir/$name.ext"
	openssl x509 -req -in "$dir/$name.csr" -CA "$ca/ca.pem" -CAkey "$ca/ca-key.pem" -CAcreateserial \
		-out "$dir/$name.pem" -days "$days" -extfile "$dir/$name.ext" 2>/dev/null || fail "openssl x509 $name"
}

make_ca() {
	mkdir -p "$1"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$1/ca-key.pem" \
		-out "$1/ca.pem" -days 2 -subj "/CN=$2" 2>/dev/null || fail "openssl CA $2"
}

# certdir DIR CA CERT KEY: a DOCKER_CERT_PATH directory (ca.pem, cert.pem, key.pem; "" leaves one out)
certdir() {
	mkdir -p "$1"
	[ -n "$2" ] && cp "$2" "$1/ca.pem"
	[ -n "$3" ] && cp "$3" "$1/cert.pem"
	[ -n "$4" ] && cp "$4" "$1/key.pem"
	return 0
}

# tls_engine_start: sets TLS_PORT, TLS_CERTS (a good DOCKER_CERT_PATH), PKI (all material)
tls_engine_start() {
	PKI=$T/pki
	make_ca "$PKI/ca" mafsbx-test-ca
	make_ca "$PKI/other" mafsbx-other-ca
	# The server's certificate names localhost only, so 127.0.0.1 is a hostname mismatch.
	make_cert "$PKI" server "$PKI/ca" /CN=localhost 'subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\n' 2
	make_cert "$PKI" client "$PKI/ca" /CN=mafsbx-client 'extendedKeyUsage=clientAuth\n' 2
	# Expired: openssl 3.0 `x509 -req` takes a negative -days (notAfter a day before notBefore).
	make_cert "$PKI" expired "$PKI/ca" /CN=mafsbx-client 'extendedKeyUsage=clientAuth\n' -1
	TLS_CERTS=$T/certs-good
	certdir "$TLS_CERTS" "$PKI/ca/ca.pem" "$PKI/client.pem" "$PKI/client-key.pem"

	PRIV_DIR=$(mktemp -d /var/lib/mafsbx-test-remote.XXXXXX) || fail "mktemp for the private dockerd"
	TLS_PORT=$(free_port)
	local ns
	ns="mafsbx-remote-$(basename "$PRIV_DIR" | tr -dc 'a-zA-Z0-9')"
	# A bridge of its own: the host shares one network namespace between both
	# daemons, and a dockerd started with --bridge=none deletes the host's
	# "docker0" at start-up (moby's removeDefaultBridgeInterface), which
	# breaks the shared engine's default network for every test after.
	PRIV_BRIDGE="mfsbr$(basename "$PRIV_DIR" | tr -dc 'a-zA-Z0-9' | tail -c 6)"
	ip link add name "$PRIV_BRIDGE" type bridge || fail "cannot make the bridge $PRIV_BRIDGE for the private dockerd"
	ip addr add "10.213.$((RANDOM % 250 + 1)).1/24" dev "$PRIV_BRIDGE" || fail "cannot address $PRIV_BRIDGE"
	ip link set "$PRIV_BRIDGE" up || fail "cannot bring $PRIV_BRIDGE up"
	local had_docker0=0
	ip link show docker0 >/dev/null 2>&1 && had_docker0=1
	dockerd --data-root "$PRIV_DIR/data" --exec-root "$PRIV_DIR/exec" --pidfile "$PRIV_DIR/docker.pid" \
		-H "unix://$PRIV_DIR/docker.sock" -H "tcp://127.0.0.1:$TLS_PORT" \
		--tlsverify --tlscacert "$PKI/ca/ca.pem" --tlscert "$PKI/server.pem" --tlskey "$PKI/server-key.pem" \
		--bridge="$PRIV_BRIDGE" --iptables=false --ip6tables=false --ip-masq=false \
		--containerd-namespace "$ns" --containerd-plugins-namespace "$ns-plugins" \
		--log-level warn >"$PRIV_DIR/dockerd.log" 2>&1 &
	PRIV_PID=$!
	local i
	for i in $(seq 1 300); do
		[ -S "$PRIV_DIR/docker.sock" ] && docker -H "unix://$PRIV_DIR/docker.sock" version >/dev/null 2>&1 && break
		kill -0 "$PRIV_PID" 2>/dev/null || { cat "$PRIV_DIR/dockerd.log" >&2; fail "the private dockerd exited"; }
		sleep 0.1
	done
	docker -H "unix://$PRIV_DIR/docker.sock" version >/dev/null 2>&1 || fail "the private dockerd did not answer in 30 s"
	if [ "$had_docker0" = 1 ] && ! ip link show docker0 >/dev/null 2>&1; then
		fail "the private dockerd removed the shared engine's docker0 bridge"
	fi
	# The shared engine's copy of the test image (no registry is reachable).
	(unset DOCKER_HOST DOCKER_TLS_VERIFY DOCKER_CERT_PATH; docker save "$IMAGE") |
		docker -H "unix://$PRIV_DIR/docker.sock" load >/dev/null || fail "cannot load $IMAGE into the private dockerd"
	log "private dockerd $PRIV_PID: tcp://127.0.0.1:$TLS_PORT with --tlsverify, unix://$PRIV_DIR/docker.sock"
}

# tls_terminator_start SOCKET: socat as a TLS terminator on a free port in
# front of the engine socket SOCKET, with the private CA's server
# certificate and client certificates required (verify=1: socat 1.7 sets no
# session id context, so a resumed session is refused, as users meet it).
# Sets TERM_PORT. Needs tls_engine_start's PKI.
tls_terminator_start() {
	TERM_PORT=$(free_port)
	socat "OPENSSL-LISTEN:$TERM_PORT,bind=127.0.0.1,reuseaddr,fork,cert=$PKI/server.pem,key=$PKI/server-key.pem,cafile=$PKI/ca/ca.pem,verify=1" \
		"UNIX-CONNECT:$1" 2>"$T/socat.log" &
	TERM_PID=$!
	local i
	for i in $(seq 1 100); do
		(exec 3<>"/dev/tcp/127.0.0.1/$TERM_PORT") 2>/dev/null && break
		kill -0 "$TERM_PID" 2>/dev/null || { cat "$T/socat.log" >&2; fail "socat exited"; }
		sleep 0.05
	done
	log "TLS terminator (socat $TERM_PID) on localhost:$TERM_PORT in front of $1"
}

# tls_stdin_loop URL LABEL N: the story of the crash hunt, N times over one
# mount: an exec writing its stdin to a file (the stdin writer and the stream
# reader of one TLS connection at once), then the file read back through
# the mount. Every round must give the exact bytes; the daemon must live.
tls_stdin_loop() {
	local url=$1 label=$2 n=$3
	local M=$T/mnt-loop-$label
	mount_fs "$M" -o "host=$url"
	local pid=$DAEMON_PID
	acquire "$M" loop "$label" python
	local N=$SBX i payload
	for i in $(seq 1 "$n"); do
		payload="over $label $i $(head -c 600 /dev/urandom | base64 -w0)"
		ctl "$M" exec "{\"sandbox\": \"$N\", \"argv\": [\"sh\", \"-c\", \"cat > o.txt\"], \"stdin\": \"$payload\"}"
		[ "$CTL_STATUS" = OK ] || fail "$label round $i: exec with stdin: $CTL_STATUS $CTL_REPLY"
		expect_eq "$(cat "$M/$N/work/o.txt")" "$payload" "$label round $i: o.txt read back"
		kill -0 "$pid" 2>/dev/null || fail "$label round $i: the daemon died"
	done
	rmdir "$M/$N" || fail "$label: dispose"
	umount_fs "$M" "$pid"
	if grep -E "stack smashing|AddressSanitizer|ThreadSanitizer|runtime error" "$T/daemon.$(basename "$M").log"; then
		fail "$label: the daemon reported memory or thread errors"
	fi
	log "$label: $n rounds of exec-with-stdin and read-back over TLS: ok"
}

# sshd_start: sets SSH_PORT; puts the ssh wrapper first on PATH
sshd_start() {
	SSHD_DIR=$T/sshd
	mkdir -p "$SSHD_DIR/bin"
	ssh-keygen -q -t ed25519 -N '' -f "$SSHD_DIR/host_key" || fail "ssh-keygen host"
	ssh-keygen -q -t ed25519 -N '' -f "$SSHD_DIR/user_key" || fail "ssh-keygen user"
	cp "$SSHD_DIR/user_key.pub" "$SSHD_DIR/authorized_keys"
	chmod 600 "$SSHD_DIR/authorized_keys"
	SSH_PORT=$(free_port)
	cat >"$SSHD_DIR/sshd_config" <<EOF
Port $SSH_PORT
ListenAddress 127.0.0.1
HostKey $SSHD_DIR/host_key
PidFile $SSHD_DIR/sshd.pid
AuthorizedKeysFile $SSHD_DIR/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM no
StrictModes no
MaxStartups 64
MaxSessions 64
EOF
	echo "[127.0.0.1]:$SSH_PORT $(cat "$SSHD_DIR/host_key.pub")" >"$SSHD_DIR/known_hosts"
	cat >"$SSHD_DIR/ssh_config" <<EOF
Host *
  IdentityFile $SSHD_DIR/user_key
  IdentitiesOnly yes
  UserKnownHostsFile $SSHD_DIR/known_hosts
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
EOF
	printf '#!/bin/sh\nexec /usr/bin/ssh -F %s "$@"\n' "$SSHD_DIR/ssh_config" >"$SSHD_DIR/bin/ssh"
	chmod +x "$SSHD_DIR/bin/ssh"
	export PATH="$SSHD_DIR/bin:$PATH"
	# sshd insists on its privilege separation directory (the Debian unit makes it).
	mkdir -p /run/sshd
	/usr/sbin/sshd -D -f "$SSHD_DIR/sshd_config" -E "$SSHD_DIR/sshd.log" &
	SSHD_PID=$!
	local i
	for i in $(seq 1 100); do
		ssh -o BatchMode=yes -p "$SSH_PORT" root@127.0.0.1 true 2>/dev/null && break
		kill -0 "$SSHD_PID" 2>/dev/null || { cat "$SSHD_DIR/sshd.log" >&2; fail "sshd exited"; }
		sleep 0.1
	done
	ssh -o BatchMode=yes -p "$SSH_PORT" root@127.0.0.1 docker version --format '{{.Server.Version}}' >/dev/null ||
		fail "docker does not answer over ssh on port $SSH_PORT"
	log "sshd $SSHD_PID on 127.0.0.1:$SSH_PORT"
}

# expect_mount_refused DESC NEEDLE [mafsbxfs options...]: the daemon exits non-zero
# before mounting, its message names NEEDLE, and nothing is mounted.
expect_mount_refused() {
	local desc=$1 needle=$2
	shift 2
	local mnt=$T/refused.$RANDOM
	mkdir -p "$mnt"
	local out rc=0
	out=$(timeout 60 "$MAFSBXFS" -f "$@" "$mnt" 2>&1) || rc=$?
	[ "$rc" != 0 ] || fail "$desc: mafsbxfs mounted (exit 0)"
	[ "$rc" != 124 ] || fail "$desc: mafsbxfs hung"
	is_mounted "$mnt" && fail "$desc: $mnt is mounted"
	expect_contains "$out" "$needle" "$desc: message"
	log "refused as expected ($desc): $(printf '%s' "$out" | tail -n 1)"
}

# remote_subset URL KIND: the real subset through a mount and the CLI over URL:
# .ctl/engine, acquire (created, then reused), write/stat/read through the
# sandbox's files (the engine plane), exec with stdin, a blocking timeout
# (it disposes), dispose, reap.
remote_subset() {
	local url=$1 kind=$2
	local M=$T/mnt-$kind
	mount_fs "$M" -o "host=$url"
	local pid=$DAEMON_PID

	local eng
	eng=$(cat "$M/.ctl/engine") || fail ".ctl/engine unreadable"
	expect_eq "$(jget "$eng" kind)" "$kind" ".ctl/engine kind"
	expect_eq "$(jget "$eng" plane)" engine ".ctl/engine plane"
	expect_eq "$(jget "$eng" endpoint)" "$url" ".ctl/engine endpoint"
	[ -n "$(jget "$eng" server_version)" ] || fail ".ctl/engine has no server_version"

	acquire "$M" t1 a python
	local N=$SBX
	expect_eq "$(jget "$CTL_REPLY" state)" created "acquire over $kind"
	acquire "$M" t1 a python
	expect_eq "$(jget "$CTL_REPLY" state)" reused "re-acquire over $kind"

	# files: write through the mount, stat, read back, and see it from inside
	printf 'hello over %s\n' "$kind" >"$M/$N/work/hello.txt" || fail "write through the mount over $kind"
	expect_eq "$(stat -c %s "$M/$N/work/hello.txt")" "$(printf 'hello over %s\n' "$kind" | wc -c)" "stat size"
	expect_eq "$(cat "$M/$N/work/hello.txt")" "hello over $kind" "read back"
	mkdir -p "$M/$N/work/d1/d2" || fail "mkdir over $kind"
	head -c 300000 /dev/urandom >"$T/big.bin"
	cp "$T/big.bin" "$M/$N/work/d1/d2/big.bin" || fail "cp of 300 KB over $kind"
	cmp -s "$T/big.bin" "$M/$N/work/d1/d2/big.bin" || fail "300 KB read back differs over $kind"
	run_exec "$M" "$N" "cat hello.txt; wc -c < d1/d2/big.bin"
	[ "$CTL_STATUS" = OK ] || fail "exec over $kind: $CTL_STATUS $CTL_REPLY"
	expect_eq "$(jget "$CTL_REPLY" stdout)" "$(printf 'hello over %s\n300000' "$kind")" "exec sees the written files"

	# exec with stdin (the half-close of the hijacked stream)
	ctl "$M" exec "{\"sandbox\": \"$N\", \"argv\": [\"sh\", \"-c\", \"wc -c; echo after-eof\"], \"stdin\": \"twelve bytes\"}"
	[ "$CTL_STATUS" = OK ] || fail "exec with stdin over $kind: $CTL_STATUS $CTL_REPLY"
	expect_eq "$(jget "$CTL_REPLY" stdout)" "$(printf '12\nafter-eof')" "exec with stdin over $kind"
	expect_eq "$(jget "$CTL_REPLY" exit_code)" 0 "exec with stdin exit code"

	# a blocking exec's timeout on a remote engine disposes the sandbox (its
	# processes are not this host's to kill), and the reply says so
	acquire "$M" t3 a python
	local D=$SBX
	ctl "$M" exec "{\"sandbox\": \"$D\", \"command\": \"echo started; sleep 30\", \"timeout\": 2}"
	expect_eq "$CTL_STATUS" ETIMEDOUT "a timeout over $kind ($CTL_REPLY)"
	expect_eq "$(jget "$CTL_REPLY" timed_out)" true "timed_out over $kind"
	expect_eq "$(jget "$CTL_REPLY" sandbox_disposed)" true "sandbox_disposed over $kind"
	[ -e "$M/$D" ] && fail "a sandbox timed out over $kind is still there"

	# dispose through rmdir; a second sandbox is left for reap
	rmdir "$M/$N" || fail "rmdir (dispose) over $kind"
	[ -e "$M/$N" ] && fail "disposed sandbox still there over $kind"
	acquire "$M" t2 b python
	local N2=$SBX
	umount_fs "$M" "$pid"

	local out
	sleep 1.1
	out=$("$MAFSBX_CLI" reap -H "$url" --older-than 1s --scope "$SCOPE" --json 2>&1) || fail "reap over $kind: $out"
	expect_contains "$out" '"disposed":1' "reap over $kind removes the sandbox left"
	out=$("$MAFSBX_CLI" ls -H "$url" 2>&1) || fail "mafsbx ls over $kind: $out"
	case "$out" in *"$N2"*) fail "$N2 is still listed after reap over $kind" ;; esac
	log "subset over $kind ($url): ok"
}
