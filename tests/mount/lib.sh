# lib.sh: sourced by every mount test (tests/mount/*.sh).
#
# The test owns its daemons: each mount runs `mafsbxfs -f` in the background
# on a private mktemp directory, is polled for with a deadline (failing at
# once if the daemon died), and is unmounted lazily and killed from the EXIT
# trap whatever happens. With MAFSBX_TEST_MOUNT=background a mount is made
# the way users make it: `mafsbxfs MOUNTPOINT` (no -f) returns once the
# daemon serves, the daemon is found by its command line, and every unmount
# checks that it is gone within DAEMON_EXIT_BOUND_S and that nothing of the run is paused. Every sandbox a test makes uses a scope unique to
# that run ($SCOPE), and the trap removes everything labelled with it.
#
# A test exits 77 (meson: skipped) when /dev/fuse, fusermount3, the engine
# or the test image is missing, unless MAFSBX_REQUIRE_ENGINE=1 (CI), which
# turns that into a failure. Needs: MAFSBXFS and MFS_TOOL (set by meson).

set -u

: "${MAFSBXFS:?MAFSBXFS must name the mafsbxfs binary}"
: "${MFS_TOOL:?MFS_TOOL must name the mfs_tool binary}"
IMAGE=${MAFSBX_TEST_IMAGE:-mafsbx/busybox:latest}
# The file plane a test runs on: meson runs the plane-sensitive tests once
# per plane (MAFSBX_TEST_PLANE=local|engine); mount_fs passes it on.
PLANE=${MAFSBX_TEST_PLANE:-local}
# foreground (mafsbxfs -f, the daemon a child of the test) or background
# (mafsbxfs forks as it does for users; its log then goes to syslog).
MOUNT_MODE=${MAFSBX_TEST_MOUNT:-foreground}
case "$MOUNT_MODE" in foreground | background) ;; *)
	echo "MAFSBX_TEST_MOUNT must be foreground or background, not '$MOUNT_MODE'" >&2
	exit 1 ;;
esac
TESTNAME=$(basename "$0" .sh)
T=$(mktemp -d "/tmp/mafsbxfs-$TESTNAME.XXXXXX")
SCOPE="mafsbxtest-fs-$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
EXTRA_SCOPES=()
DAEMONS=()        # "pid:mountpoint:log"
BGPIDS=()         # other background helpers we started

log() { printf '%s: %s\n' "$TESTNAME" "$*" >&2; }

fail() {
	log "FAIL: $*"
	exit 1
}

skip_or_fail() {
	if [ "${MAFSBX_REQUIRE_ENGINE:-0}" = 1 ]; then
		fail "$* (MAFSBX_REQUIRE_ENGINE=1)"
	fi
	log "SKIP: $*"
	exit 77
}

require_env() {
	[ -c /dev/fuse ] && [ -r /dev/fuse ] && [ -w /dev/fuse ] || skip_or_fail "/dev/fuse is not usable"
	command -v fusermount3 >/dev/null 2>&1 || skip_or_fail "fusermount3 is missing"
	"$MFS_TOOL" ping || skip_or_fail "no Docker engine answers"
	"$MFS_TOOL" image "$IMAGE" || skip_or_fail "test image $IMAGE is missing (build it with: mafsbx mkimage)"
}

is_mounted() {
	awk -v m="$1" '$5 == m { for (i = 6; i <= NF; i++) if ($i == "-") { print $(i + 1); exit } }' \
		/proc/self/mountinfo | grep -qx 'fuse.mafsbxfs'
}

# mount_fs MOUNTPOINT [mafsbxfs options...]: sets DAEMON_PID
mount_fs() {
	local mnt=$1
	shift
	mkdir -p "$mnt"
	local logf="$T/daemon.$(basename "$mnt").log"
	# The default (no MAFSBX_TEST_PLANE, PLANE left "local") mounts with
	# plane=auto, which is local on this host's socket and engine elsewhere.
	local planeopt=()
	if [ -n "${MAFSBX_TEST_PLANE:-}" ] || [ "$PLANE" != local ]; then
		planeopt=(-o "plane=$PLANE")
	fi
	if [ "$MOUNT_MODE" = background ]; then
		mount_background "$mnt" "$logf" "${planeopt[@]}" "$@"
		return
	fi
	"$MAFSBXFS" -f "${planeopt[@]}" "$@" "$mnt" >>"$logf" 2>&1 &
	DAEMON_PID=$!
	DAEMONS+=("$DAEMON_PID:$mnt:$logf")
	local i
	for i in $(seq 1 200); do
		if is_mounted "$mnt"; then
			return 0
		fi
		if ! kill -0 "$DAEMON_PID" 2>/dev/null; then
			cat "$logf" >&2
			fail "mafsbxfs exited before mounting $mnt"
		fi
		sleep 0.05
	done
	fail "no mount on $mnt after 10 s"
}

# mount_background MOUNTPOINT LOG [mafsbxfs options...]: as a user mounts.
# The command returns once the daemon serves (or failed, with its message),
# so the mount must be there when it returns 0.
mount_background() {
	local mnt=$1 logf=$2 rc=0
	shift 2
	timeout 60 "$MAFSBXFS" "$@" "$mnt" >>"$logf" 2>&1 || rc=$?
	if [ "$rc" != 0 ]; then
		cat "$logf" >&2
		fail "mafsbxfs $* $mnt (background) exited with $rc"
	fi
	is_mounted "$mnt" || fail "mafsbxfs returned 0 but $mnt is not mounted"
	DAEMON_PID=$(daemon_pid_of "$mnt") || fail "no mafsbxfs daemon serves $mnt"
	DAEMONS+=("$DAEMON_PID:$mnt:$logf")
}

# daemon_pid_of MOUNTPOINT: the live mafsbxfs process whose last argument is it.
daemon_pid_of() {
	local want p last
	want=$(readlink -f "$MAFSBXFS")
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/exe" 2>/dev/null)" = "$want" ] || continue
		last=$(tr '\0' '\n' <"$p/cmdline" 2>/dev/null | tail -n 1)
		if [ "$last" = "$1" ]; then
			echo "${p#/proc/}"
			return 0
		fi
	done
	return 1
}

# gone PID: the process has exited (a zombie not yet reaped counts as gone:
# a background daemon's parent is init, which reaps when it will).
gone() {
	local st
	st=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 0
	[ -z "$st" ] || [ "$st" = Z ] || [ "$st" = X ]
}

# wait_exit PID SECONDS: 0 when it exited in time; sets EXIT_STATUS (empty
# for a background daemon, which is not our child: its status is init's).
wait_exit() {
	local pid=$1 secs=$2 i
	for i in $(seq 1 $((secs * 20))); do
		if gone "$pid"; then
			EXIT_STATUS=
			wait "$pid" 2>/dev/null && EXIT_STATUS=0 || EXIT_STATUS=$?
			[ "$MOUNT_MODE" = background ] && EXIT_STATUS=
			return 0
		fi
		sleep 0.05
	done
	return 1
}

# threads_of PID: each thread's state, wait channel, syscall (number, args)
# and kernel stack, to stderr: what a daemon that did not exit in time was
# blocked in, without a debugger (an exit bound missed on a loaded CI run
# is otherwise a bare timeout).
threads_of() {
	local t fd
	echo "threads of $1 (state, wchan, syscall; kernel stack):" >&2
	for t in /proc/"$1"/task/*; do
		printf '  tid %s %s wchan=%s syscall=%s\n' "${t##*/}" \
			"$(awk '{ print $3 }' "$t/stat" 2>/dev/null)" "$(cat "$t/wchan" 2>/dev/null)" \
			"$(cat "$t/syscall" 2>/dev/null)" >&2
		sed 's/^/      /' "$t/stack" >&2 2>/dev/null || true
	done
	for fd in /proc/"$1"/fd/*; do
		printf '  fd %s -> %s\n' "${fd##*/}" "$(readlink "$fd" 2>/dev/null)" >&2
	done
}

# How long a background daemon may take to exit once unmounted or
# signalled: its own bound on its end (engine calls end 10 s after the
# session, an unpause 5 s more: fs/main.c) plus 5 s. It fails a daemon that
# never exits; a CPU-starved one takes seconds (0.5-3.2 s measured with 45
# runnable tasks on 2 cores; ~30 ms quiet), so a tighter bound fails
# healthy daemons on a loaded machine.
DAEMON_EXIT_BOUND_S=20

# umount_fs MOUNTPOINT PID: a clean unmount; the daemon must exit 0.
# In the background mode the daemon must be gone within
# DAEMON_EXIT_BOUND_S, leaving nothing of the run paused.
umount_fs() {
	local mnt=$1 pid=$2
	fusermount3 -u "$mnt" || fail "fusermount3 -u $mnt failed"
	if [ "$MOUNT_MODE" = background ]; then
		wait_exit "$pid" "$DAEMON_EXIT_BOUND_S" || {
			threads_of "$pid"
			fail "the background daemon $pid did not exit within $DAEMON_EXIT_BOUND_S s of the unmount"
		}
		is_mounted "$mnt" && fail "$mnt is still mounted"
		no_paused_now
		return 0
	fi
	wait_exit "$pid" 30 || { threads_of "$pid"; fail "mafsbxfs did not exit within 30 s of the unmount"; }
	[ "$EXIT_STATUS" = 0 ] || fail "mafsbxfs exited with $EXIT_STATUS after the unmount"
	is_mounted "$mnt" && fail "$mnt is still mounted"
	return 0
}

# no_paused_now: nothing of this run's scope is paused at this moment (after
# an unmount no burst may linger: the daemon released its freezes on the way out).
no_paused_now() {
	local n
	n=$("$MFS_TOOL" paused "$SCOPE") || fail "cannot list $SCOPE"
	expect_eq "$n" 0 "containers left paused after the unmount"
}

# daemon_log_has PATTERN: the daemon's log says it. A background daemon logs
# to syslog, which a test cannot read here: the caller checks the effect
# itself, and this answers yes (said in the test's output).
daemon_log_has() {
	local logf=$1 pat=$2
	if [ "$MOUNT_MODE" = background ]; then
		log "(background mount: its log is syslog's; '$pat' not checked, the effect is)"
		return 0
	fi
	grep -q -- "$pat" "$logf"
}

cleanup() {
	local rc=$?
	local d pid mnt logf
	for d in "${DAEMONS[@]}"; do
		pid=${d%%:*}
		mnt=${d#*:}
		mnt=${mnt%%:*}
		logf=${d##*:}
		if is_mounted "$mnt"; then
			fusermount3 -u -z "$mnt" 2>/dev/null
		fi
		if [ "$pid" -gt 0 ] 2>/dev/null && kill -0 "$pid" 2>/dev/null; then
			kill -TERM "$pid" 2>/dev/null
			wait_exit "$pid" 10 || kill -KILL "$pid" 2>/dev/null
		fi
		if [ "$rc" != 0 ] && [ -s "$logf" ]; then
			log "daemon log $logf:"
			tail -n 40 "$logf" >&2
		fi
	done
	for pid in "${BGPIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null
	done
	"$MFS_TOOL" rm-scope "$SCOPE" 2>/dev/null
	local s
	for s in "${EXTRA_SCOPES[@]}"; do
		"$MFS_TOOL" rm-scope "$s" 2>/dev/null
	done
	rm -rf "$T"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# ctl MOUNT KIND JSON: one transaction; sets CTL_STATUS ("OK" or the write's
# errno name) and CTL_REPLY (the reply line).
ctl() {
	local out
	out=$("$MFS_TOOL" ctl "$1/.ctl/$2" "$3")
	CTL_STATUS=${out%%$'\n'*}
	CTL_REPLY=${out#*$'\n'}
}

# detach_exec JSON-MEMBERS: a detached exec in sandbox $N of mount $M
# (doc/protocol.md "Detached execs"); sets XID and CTL_REPLY
detach_exec() {
	ctl "$M" exec "{\"sandbox\": \"$N\", \"detach\": true, $1}"
	[ "$CTL_STATUS" = OK ] || fail "detached exec ($1): $CTL_STATUS $CTL_REPLY"
	XID=$(jget "$CTL_REPLY" exec)
}

jget() { printf '%s' "$1" | "$MFS_TOOL" jget "$2"; }

# guest_procs PATTERN: the live (not zombie) processes of sandbox $N of mount $M whose command line ends in PATTERN
guest_procs() {
	local out status reply
	out=$("$MFS_TOOL" ctl "$M/.ctl/exec" "{\"sandbox\": \"$N\", \"command\": \"ps -o stat,args | grep -v '^Z' | grep -c ' $1\$' || true\"}")
	status=${out%%$'\n'*} reply=${out#*$'\n'}
	[ "$status" = OK ] || fail "counting '$1' in the guest: the exec gave $status ($reply)"
	printf '%s' "$reply" | "$MFS_TOOL" jget stdout | tr -d '\n'
}

# try OP PATH [ARG]: "OK"/"OK <bytes>" or the errno name
try() { "$MFS_TOOL" try "$@"; }

expect_eq() {
	[ "$1" = "$2" ] || fail "$3: got '$1', want '$2'"
}

expect_contains() {
	case "$1" in
	*"$2"*) ;;
	*) fail "$3: '$1' does not contain '$2'" ;;
	esac
}

# expect_errno "desc" WANT OP PATH [ARG]
expect_errno() {
	local desc=$1 want=$2
	shift 2
	local got
	got=$(try "$@")
	[ "$got" = "$want" ] || fail "$desc: $* gave '$got', want '$want'"
}

# expect_ctl_error MOUNT KIND JSON ERRNO NEEDLE: the write fails with ERRNO and
# the reply is {"ok": false, "error": {"errno": ERRNO, ... "message" naming NEEDLE}}
expect_ctl_error() {
	ctl "$1" "$2" "$3"
	[ "$CTL_STATUS" = "$4" ] || fail "$2 $3: write gave '$CTL_STATUS', want '$4' (reply $CTL_REPLY)"
	expect_eq "$(jget "$CTL_REPLY" ok)" false "$2 reply ok"
	expect_eq "$(jget "$CTL_REPLY" error.errno)" "$4" "$2 reply errno"
	[ -n "$(jget "$CTL_REPLY" error.type)" ] || fail "$2 reply has no error type"
	expect_contains "$(jget "$CTL_REPLY" error.message)" "$5" "$2 reply message"
}

# acquire MOUNT THREAD AGENT KIND [extra JSON members]: sets SBX (the name)
acquire() {
	local extra=${5:-}
	ctl "$1" acquire "{\"scope\": \"$SCOPE\", \"thread\": \"$2\", \"agent\": \"$3\", \"kind\": \"$4\", \"image\": \"$IMAGE\"$extra}"
	[ "$CTL_STATUS" = OK ] || fail "acquire $2/$3/$4: $CTL_STATUS $CTL_REPLY"
	SBX=$(jget "$CTL_REPLY" name)
}

# run_exec MOUNT SANDBOX COMMAND: sets CTL_STATUS / CTL_REPLY
run_exec() {
	local cmd
	cmd=$(printf '%s' "$3" | sed 's/\\/\\\\/g; s/"/\\"/g')
	ctl "$1" exec "{\"sandbox\": \"$2\", \"command\": \"$cmd\"}"
}

# engine_is_podman: true when the engine the tests talk to is Podman (its
# Docker-compatible API names a "Podman Engine" component).
engine_is_podman() {
	docker version --format '{{range .Server.Components}}{{.Name}};{{end}}' 2>/dev/null | grep -q 'Podman Engine'
}

# commit_image CONTAINER IMAGE CHANGE...: `docker commit --change ...`. Podman
# 4.3's compat API fails the CLI's bodyless commit ("Decode(): EOF"), so
# there the same call is made with a body, the changes in the query.
commit_image() {
	local cid=$1 img=$2 q
	shift 2
	if ! engine_is_podman; then
		local args=()
		for c in "$@"; do args+=(--change "$c"); done
		docker commit "${args[@]}" "$cid" "$img" >/dev/null
		return
	fi
	q=$(python3 -c 'import sys, urllib.parse
r, t = (sys.argv[2].rsplit(":", 1) + ["latest"])[:2]
print(urllib.parse.urlencode([("container", sys.argv[1]), ("repo", r), ("tag", t)] + [("changes", c) for c in sys.argv[3:]]))' \
		"$cid" "$img" "$@")
	local sock=${DOCKER_HOST#unix://}
	curl -sf --unix-socket "$sock" -X POST -H 'Content-Type: application/json' -d '{}' "http://engine/commit?$q" >/dev/null
}

# dexec_as USER CONTAINER ARGS...: `docker exec -u USER`, retried while a
# freeze still holds the container. The docker CLI's exec does not take turns
# with the mount's freezes as .ctl/exec does; on the engine plane a freeze
# outlives the last call of a burst by a few ms (src/freeze/burst.h), so an exec
# right after a call may be refused ("... is paused"): nothing ran, so it is
# retried. dockerd words it "... is paused, unpause the container before
# exec", Podman "cannot create exec session as container ID is paused".
dexec_as() {
	local u=$1 err rc i
	shift
	err=$(mktemp)
	for i in $(seq 1 100); do
		rc=0
		docker exec -u "$u" "$@" 2>"$err" || rc=$?
		if [ "$rc" -ne 0 ] && grep -Eq "is paused, unpause the container before exec|cannot create exec session as container [0-9a-f]+ is paused" "$err"; then
			sleep 0.02
			continue
		fi
		break
	done
	cat "$err" >&2
	rm -f "$err"
	return "$rc"
}

# no_paused: nothing of this run's scope is left frozen. On the engine plane
# a burst's freeze outlives its last call by a few ms (src/freeze/burst.h; never
# past the 200 ms join window), so "left" means still paused 3 s later.
no_paused() {
	local n i
	for i in $(seq 1 30); do
		n=$("$MFS_TOOL" paused "$SCOPE") || fail "cannot list $SCOPE"
		[ "$n" = 0 ] && break
		sleep 0.1
	done
	expect_eq "$n" 0 "containers left paused"
}

# relay_init: the engine through a private unix socket the test can cut.
# Sets REAL (the real engine's socket path) and SOCK ($T/engine.sock); skips
# (or fails) when the engine is not on a unix socket. Then start_relay starts
# the relay (`mfs_tool fwd`, its PID in RELAY) and waits for the socket, and
# stop_relay stops it: to a mount, exactly an engine that went away.
relay_init() {
	case "${DOCKER_HOST:-unix:///var/run/docker.sock}" in
	unix://*) REAL=${DOCKER_HOST:-unix:///var/run/docker.sock}; REAL=${REAL#unix://} ;;
	*) skip_or_fail "the engine is not on a unix socket (DOCKER_HOST=$DOCKER_HOST)" ;;
	esac
	SOCK=$T/engine.sock
}
start_relay() {
	"$MFS_TOOL" fwd "$SOCK" "$REAL" >>"$T/fwd.log" 2>&1 &
	RELAY=$!
	BGPIDS+=("$RELAY")
	local i
	for i in $(seq 1 100); do
		[ -S "$SOCK" ] && return 0
		sleep 0.05
	done
	fail "the relay did not start"
}
stop_relay() {
	kill -TERM "$RELAY"
	wait_exit "$RELAY" 10 || fail "the relay did not stop"
}

# tcp_relay SOCKET: an engine's unix socket relayed on a tcp port of
# 127.0.0.1 (`mfs_tool fwd tcp`), so that a mount or a node label names it
# as a remote engine (tcp://127.0.0.1:$PORT). Sets PORT.
tcp_relay() {
	"$MFS_TOOL" fwd tcp "$1" >"$T/port" 2>>"$T/fwd.log" &
	BGPIDS+=("$!")
	local i
	for i in $(seq 1 50); do
		[ -s "$T/port" ] && break
		sleep 0.1
	done
	PORT=$(head -n1 "$T/port")
	[ -n "$PORT" ] || fail "the tcp relay to $1 did not start"
}
