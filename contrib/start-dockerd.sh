#!/usr/bin/env bash
# contrib/start-dockerd.sh: make sure a Docker engine answers, as root.
#
# When something already answers /_ping at the engine endpoint (DOCKER_HOST,
# else unix:///var/run/docker.sock), do nothing. Otherwise start dockerd in
# the background (detached, logging to /var/log/mafsbx-dockerd.log, or
# $TMPDIR when /var/log is not writable), wait up to 60 s for /_ping, and fail
# with the tail of its log when it does not come up. A tcp:// endpoint that
# does not answer is an error: this script only starts a local engine.
# MAFSBX_DOCKERD_ARGS adds daemon arguments; MAFSBX_DOCKERD_DEADLINE changes
# the 60 s wait.
set -euo pipefail
PROG=start-dockerd
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

DEADLINE_S=${MAFSBX_DOCKERD_DEADLINE:-60}
url=$(engine_url)

if engine_ping; then
	log "engine answers at $url"
	exit 0
fi
case "$url" in
unix://*) ;;
*) die "no engine answers at $url, and only a local unix:// engine can be started here" ;;
esac
require_root
command -v dockerd >/dev/null || die "dockerd is not installed (run contrib/setup.sh)"
command -v curl >/dev/null || die "curl is not installed (run contrib/setup.sh)"

if [ -w /var/log ]; then
	logfile=/var/log/mafsbx-dockerd.log
else
	logfile=${TMPDIR:-/tmp}/mafsbx-dockerd.log
fi
sock=$(engine_socket)
args=()
[ "$sock" = /var/run/docker.sock ] || args+=(-H "unix://$sock")
# Extra daemon arguments (word-split), e.g. a separate --data-root for a test daemon.
# shellcheck disable=SC2206
args+=(${MAFSBX_DOCKERD_ARGS:-})

log "no engine answers at $url; starting dockerd (log: $logfile)"
printf '\n=== %s: start-dockerd.sh starting dockerd %s\n' "$(date -u +%FT%TZ)" "${args[*]:-}" >>"$logfile"
# setsid: the daemon outlives this script and is not hit by its terminal's signals.
setsid nohup dockerd "${args[@]}" >>"$logfile" 2>&1 </dev/null &
pid=$!

start=$SECONDS
until engine_ping; do
	if ! kill -0 "$pid" 2>/dev/null; then
		log "dockerd exited before answering; last lines of $logfile:"
		tail -n 40 "$logfile" >&2
		exit 1
	fi
	if ((SECONDS - start >= DEADLINE_S)); then
		log "dockerd (pid $pid) did not answer /_ping within ${DEADLINE_S} s; stopping it; last lines of $logfile:"
		kill "$pid" 2>/dev/null || true
		tail -n 40 "$logfile" >&2
		exit 1
	fi
	sleep 0.5
done
log "dockerd (pid $pid) answers at $url after $((SECONDS - start)) s"
