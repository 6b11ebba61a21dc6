# lib.sh: sourced by the fault tests (tests/fault/*.sh), on top of the mount
# tests' lib.sh (daemons, scopes, cleanup, ctl helpers).
#
# The mount reaches the engine through the fault relay (relay.c): a private
# unix socket relaying to the real engine socket, with a control socket on
# which the test asks for cuts, stalls and outages. Everything that checks
# the outcome (paused containers, the guest's files) goes to the REAL socket
# or through a fault-free exec, never through a fault the test armed.
# The engine plane: there every file call is engine traffic, which is what
# the relay can fault (the local plane reads the guest's files directly).
export MAFSBX_TEST_PLANE=engine
. "$(dirname "$0")/../mount/lib.sh"

: "${FAULT_RELAY:?FAULT_RELAY must name the relay binary}"

case "${DOCKER_HOST:-unix:///var/run/docker.sock}" in
unix://*) REAL=${DOCKER_HOST:-unix:///var/run/docker.sock}; REAL=${REAL#unix://} ;;
*) REAL= ;;
esac

RELAY_SOCK=$T/engine.sock
RELAY_CTL=$T/relay.ctl

require_relay_env() {
	require_env
	[ -n "$REAL" ] || skip_or_fail "the engine is not on a unix socket (DOCKER_HOST=$DOCKER_HOST)"
}

start_relay() {
	"$FAULT_RELAY" serve "$RELAY_SOCK" "$REAL" "$RELAY_CTL" 2>>"${RELAY_LOG:-/dev/stderr}" &
	RELAY_PID=$!
	BGPIDS+=("$RELAY_PID")
	local i
	for i in $(seq 1 100); do
		[ -S "$RELAY_SOCK" ] && [ -S "$RELAY_CTL" ] && return 0
		sleep 0.05
	done
	fail "the fault relay did not start"
}

# rctl COMMAND...: one relay command; prints the reply's value (after "ok ")
rctl() {
	local out
	out=$("$FAULT_RELAY" ctl "$RELAY_CTL" "$@") || fail "relay command '$*' failed: $out"
	printf '%s\n' "${out#ok }"
}

# rule ACTION METHOD GLOB [ARGS...]: arms a rule; sets RULE (its ID)
rule() {
	RULE=$(rctl rule "$@")
}

# fired RULE: how often the rule fired. Waits up to 2 s for the first time:
# on the engine plane the unpause of a burst's freeze comes a few ms after
# the call returned (src/freeze/burst.h).
fired() {
	local n i
	for i in $(seq 1 40); do
		n=$(rctl fired "$1")
		[ "$n" != 0 ] && break
		sleep 0.05
	done
	echo "$n"
}

# mount_relayed MOUNTPOINT [options...]: the mount under test, through the
# relay, on the engine plane (the plane whose every file call is engine
# traffic) when this build has a choice of planes, and scoped to this run
# (the engine is shared: an unscoped mount's janitor would also try to lift
# freezes of other tests' sandboxes, and wait for them at unmount).
mount_relayed() {
	local mnt=$1
	shift
	local extra=()
	if "$MAFSBXFS" --help 2>&1 | grep -q 'plane='; then
		extra=(-o plane=engine)
	fi
	mount_fs "$mnt" -o "host=unix://$RELAY_SOCK" -o "scope=$SCOPE" "${extra[@]}" "$@"
}

# wait_unpaused SECONDS: nothing of this run's scope is paused (asked on the
# real socket), polled until the deadline; sets UNPAUSED_AFTER_MS.
wait_unpaused() {
	local t0 n i
	t0=$(date +%s%N)
	for i in $(seq 1 $(($1 * 10))); do
		n=$("$MFS_TOOL" paused "$SCOPE") || fail "cannot list $SCOPE on the real socket"
		if [ "$n" = 0 ]; then
			UNPAUSED_AFTER_MS=$((($(date +%s%N) - t0) / 1000000))
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# sha_of FILE: the sha256 of a host file
sha_of() { sha256sum "$1" | cut -d' ' -f1; }

# guest_sum MOUNT SANDBOX PATH: "SIZE SHA256" of a guest file, asked through a
# fault-free exec ("absent" when there is none)
guest_sum() {
	run_exec "$1" "$2" "if [ -e '$3' ]; then echo \$(wc -c < '$3') \$(sha256sum < '$3' | cut -d' ' -f1); else echo absent; fi"
	[ "$CTL_STATUS" = OK ] || fail "guest_sum $3: exec failed: $CTL_STATUS $CTL_REPLY"
	local out
	out=$(jget "$CTL_REPLY" stdout)
	printf '%s\n' "${out%$'\n'}"
}
