#!/usr/bin/env bash
# check_clocks.sh SRCDIR: every condition variable of the code takes
# CLOCK_MONOTONIC for its timed waits. The code computes every deadline with
# mafsbx_monotonic_after_ms (src/base/buf.h); a condition variable made with
# pthread_cond_init(cv, NULL) measures that deadline on CLOCK_REALTIME, where a
# monotonic instant (the machine's uptime) lies in 1970: the wait returns
# ETIMEDOUT at once. That is how a remote engine's cancel of a detached exec
# answered "the command did not end" without waiting (fs/execs.c, the flaky
# tests/mount/treekill.sh step 6). So: condition variables are made only with
# mafsbx_cond_init_monotonic, whose definition is the one pthread_cond_init.
set -euo pipefail
cd "$1"
bad=$(grep -rn --include='*.c' --include='*.h' 'pthread_cond_init *(' src fs tools |
	grep -v '^src/base/buf\.c:' || true)
if [ -n "$bad" ]; then
	printf '%s\n' "$bad" | sed 's/^/FAIL: a condition variable not made with mafsbx_cond_init_monotonic: /' >&2
	exit 1
fi
n=$(grep -rn --include='*.c' 'mafsbx_cond_init_monotonic *(' src fs tools | wc -l)
echo "check_clocks: $n condition variables, all on CLOCK_MONOTONIC"
