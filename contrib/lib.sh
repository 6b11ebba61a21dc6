# contrib/lib.sh: helpers shared by the contrib scripts (sourced, never run).
#
# The scripts talk to the engine with curl, never the docker CLI: the engine
# is DOCKER_HOST when it is unix:// or tcp:// (plain), else
# unix:///var/run/docker.sock. (mafsbx itself also reads Docker contexts and
# TLS settings; these scripts only manage a local engine.)

MAFSBX_IMAGE=${MAFSBX_IMAGE:-mafsbx/busybox:latest}

log() { printf '%s: %s\n' "${PROG:-contrib}" "$*" >&2; }
die() { log "error: $*"; exit 1; }

require_root() {
	[ "$(id -u)" -eq 0 ] || die "must run as root (e.g. sudo $0)"
}

# bg_start VAR CMD...: runs CMD in the background and sets VAR to a folder
# holding its output (out), its PID (pid) and, once it has ended, its exit
# status (rc). bg_finish DIR waits for it, prints its output and returns that
# status. The status goes through a file because `wait PID` cannot be trusted
# half an hour later: bash forgets an ended job's status as soon as a later
# child is given the same PID, and contrib/test.sh forks far more processes
# than pid_max (32768 on these machines); `wait` then says 127, "not a child"
# (tests/packaging/check_bg_jobs.sh shows both).
bg_start() {
	local dir
	dir=$(mktemp -d /tmp/mafsbx-bg-"$1".XXXXXX)
	printf -v "$1" '%s' "$dir"
	shift
	( set +e; "$@" >"$dir/out" 2>&1; echo $? >"$dir/rc.partial" && mv "$dir/rc.partial" "$dir/rc" ) &
	echo $! >"$dir/pid"
}
bg_finish() {
	local dir=$1 pid rc=0
	pid=$(cat "$dir/pid")
	# While the job lives its PID cannot be reused; once it has written rc it is done.
	while [ ! -e "$dir/rc" ] && kill -0 "$pid" 2>/dev/null; do
		sleep 1
	done
	wait "$pid" 2>/dev/null || true
	cat "$dir/out"
	if [ -s "$dir/rc" ]; then
		rc=$(cat "$dir/rc")
	else
		log "the background job '$(basename "$dir")' ended without an exit status (killed?)"
		rc=125
	fi
	rm -rf "$dir"
	return "$rc"
}

engine_url() {
	case "${DOCKER_HOST:-}" in
	"") echo "unix:///var/run/docker.sock" ;;
	*) echo "$DOCKER_HOST" ;;
	esac
}

# engine_curl PATH [curl args...]: one request to the engine.
engine_curl() {
	local path=$1
	shift
	case "$(engine_url)" in
	unix://*) curl -s --max-time 10 --unix-socket "$(engine_socket)" "$@" "http://localhost$path" ;;
	tcp://*) curl -s --max-time 10 "$@" "http://$(engine_url | sed 's|^tcp://||; s|/$||')$path" ;;
	*) die "these scripts handle unix:// and tcp:// engines only (DOCKER_HOST=$(engine_url))" ;;
	esac
}

engine_socket() {
	local u
	u=$(engine_url)
	echo "${u#unix://}"
}

engine_ping() {
	[ "$(engine_curl /_ping 2>/dev/null)" = "OK" ]
}

# 0 present, 1 absent, 2 could not tell.
image_present() {
	local code
	code=$(engine_curl "/images/$1/json" -o /dev/null -w '%{http_code}' 2>/dev/null) || return 2
	case "$code" in
	200) return 0 ;;
	404) return 1 ;;
	*) return 2 ;;
	esac
}
