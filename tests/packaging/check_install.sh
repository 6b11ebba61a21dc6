#!/bin/sh
# check_install.sh MESON BUILD_ROOT PREFIX BINDIR MANDIR UNITDIR EXAMPLEDIR COMPLETIONDIR LIBEXECDIR
#
# Runs `meson install --destdir` into a temporary directory and checks that
# every file lands where the units, the cron example and the man pages say:
# the binaries, both man pages, the three systemd units, the cron.d and fstab
# examples, the bash completion (for both programs), the egress proxy where
# mkimage looks for it; no test knob in the installed binaries; every program a unit or the cron line runs exists (executable) in
# the install tree; every man:PAGE a unit names is installed; the timer's
# service is installed next to it; every unit or example path the man pages
# name is installed. All directory arguments are absolute (prefix included).
set -u
meson=$1 build=$2 prefix=$3 bindir=$4 mandir=$5 unitdir=$6 exampledir=$7 completiondir=$8 libexecdir=$9

work=$(mktemp -d "${TMPDIR:-/tmp}/mafsbx-install.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT INT TERM
dest=$work/root
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }

if ! "$meson" install -C "$build" --no-rebuild --quiet --destdir "$dest" >"$work/install.log" 2>&1; then
	cat "$work/install.log" >&2
	echo "FAIL: meson install --destdir failed" >&2
	exit 1
fi

# 1. Every file in its place.
for f in "$bindir/mafsbx" "$bindir/mafsbxfs"; do
	[ -f "$dest$f" ] && [ -x "$dest$f" ] || bad "binary $f not installed (or not executable)"
done
for f in "$mandir/man1/mafsbxfs.1" "$mandir/man1/mafsbx.1" \
	"$unitdir/mafsbxfs@.service" "$unitdir/mafsbx-reap.service" "$unitdir/mafsbx-reap.timer" \
	"$exampledir/cron.d/mafsbx-reap" "$exampledir/fstab.example" "$completiondir/mafsbx" \
	"$completiondir/mafsbxfs"; do
	[ -f "$dest$f" ] && [ -s "$dest$f" ] || bad "$f not installed"
done
[ -x "$dest$libexecdir/mafsbx/mafsbx-egress-proxy" ] || bad "$libexecdir/mafsbx/mafsbx-egress-proxy not installed"
# mkimage's default proxy is that installed one
strings "$dest$bindir/mafsbx" 2>/dev/null | grep -qxF "$libexecdir/mafsbx/mafsbx-egress-proxy" ||
	bad "mafsbx does not look for the proxy at $libexecdir/mafsbx/mafsbx-egress-proxy"

# 1b. No test knob ships: the environment variables and hooks the tests turn
#     are compiled only into the test libraries, the test daemon and the
#     proxy's test build (src/meson.build, fs/meson.build,
#     tools/egress-proxy/meson.build), which are never installed.
for f in "$bindir/mafsbx" "$bindir/mafsbxfs" "$libexecdir/mafsbx/mafsbx-egress-proxy"; do
	[ -f "$dest$f" ] || continue
	knobs=$(strings "$dest$f" | grep -o 'MAFSBX_TEST_[A-Z_]*' | sort -u | tr '\n' ' ')
	[ -z "$knobs" ] || bad "$f reads test knobs: $knobs"
	# the proxy's switch before it was test-only; the settings that are -o options now
	old=$(strings "$dest$f" | grep -oE 'MAFSBX_PROXY_ALLOW_NONGLOBAL|MAFSBX_(REPLY|SPOOL)_BUDGET_MB' | sort -u |
		tr '\n' ' ')
	[ -z "$old" ] || bad "$f still reads from the environment: $old"
	if command -v nm >/dev/null 2>&1; then
		hooks=$(nm "$dest$f" 2>/dev/null | awk '$3 ~ /(^|_)test_/ {print $3}' | sort -u | tr '\n' ' ')
		[ -z "$hooks" ] || bad "$f carries test hooks: $hooks"
	fi
done
[ -z "$(find "$dest" -name 'mafsbxfs-test*')" ] || bad "the test daemon mafsbxfs-test is installed"
[ -z "$(find "$dest" -name '*-test')" ] || bad "a test build is installed: $(find "$dest" -name '*-test')"

# 2. What the units and the cron line run is installed (or, outside the
#    prefix, present on this host); no unsubstituted @var@ is left.
check_program() { # $1 = path, $2 = where it was named
	case "$1" in
	"$prefix"/*) [ -x "$dest$1" ] || bad "$2 runs $1, which is not installed" ;;
	/*) [ -x "$1" ] || bad "$2 runs $1, which does not exist on this host" ;;
	*) bad "$2 runs '$1', not an absolute path" ;;
	esac
}
for u in "$dest$unitdir"/*.service "$dest$unitdir"/*.timer "$dest$exampledir/cron.d/mafsbx-reap"; do
	[ -f "$u" ] || continue
	name=${u#"$dest"}
	if grep -n '@[a-z_]*@' "$u" >/dev/null; then bad "$name has an unsubstituted @variable@"; fi
	grep -E '^Exec[A-Za-z]*=' "$u" | while IFS= read -r line; do
		cmd=${line#*=}
		cmd=$(printf '%s' "$cmd" | sed 's/^[-@:+!]*//')
		echo "${cmd%% *}"
	done >"$work/progs"
	while IFS= read -r p; do check_program "$p" "$name"; done <"$work/progs"
	grep -oE 'man:[A-Za-z0-9._-]+\([0-9]\)' "$u" | while IFS= read -r m; do
		page=${m#man:}; sect=${page#*\(}; sect=${sect%\)}; page=${page%%\(*}
		[ -f "$dest$mandir/man$sect/$page.$sect" ] || echo "$m"
	done >"$work/missing"
	while IFS= read -r m; do bad "$name names $m, which is not installed"; done <"$work/missing"
done
cron="$dest$exampledir/cron.d/mafsbx-reap"
if [ -f "$cron" ]; then
	prog=$(grep -E '^[0-9*]' "$cron" | awk '{print $7}')
	[ -n "$prog" ] || bad "no command line in the cron example"
	for p in $prog; do check_program "$p" "the cron example"; done
	grep -E '^[0-9*]' "$cron" | grep -q 'reap --older-than' || bad "the cron example does not run reap --older-than"
fi
timer="$dest$unitdir/mafsbx-reap.timer"
if [ -f "$timer" ]; then
	[ -f "$dest$unitdir/mafsbx-reap.service" ] || bad "mafsbx-reap.timer has no mafsbx-reap.service beside it"
	grep -q '^OnCalendar=' "$timer" || bad "mafsbx-reap.timer has no OnCalendar="
fi
svc="$dest$unitdir/mafsbxfs@.service"
if [ -f "$svc" ]; then
	grep -q '^ExecStart=.* -f ' "$svc" || bad "mafsbxfs@.service does not run the daemon in the foreground (-f)"
	grep -q '^Restart=on-failure' "$svc" || bad "mafsbxfs@.service lacks Restart=on-failure"
	grep -q '^Type=notify$' "$svc" || bad "mafsbxfs@.service is not Type=notify (the daemon says READY=1)"
	grep -q '^Wants=.*docker\.service' "$svc" || bad "mafsbxfs@.service does not want docker.service"
	grep -q '^StartLimitBurst=' "$svc" || bad "mafsbxfs@.service sets no StartLimitBurst (restarts while docker starts)"
	grep -q '^LimitNOFILE=' "$svc" || bad "mafsbxfs@.service sets no LimitNOFILE"
	grep -Eq '^Exec(Stop|StopPost)=.*fusermount3? -u' "$svc" || bad "mafsbxfs@.service does not unmount on stop"
	# hardened, but with no directive that gives the service a mount namespace of its own:
	# a FUSE mount made there would be seen by no other process
	for d in NoNewPrivileges=yes CapabilityBoundingSet= RestrictNamespaces= ProtectClock=yes \
		'DeviceAllow=/dev/fuse rw' ProtectHostname=yes RestrictRealtime=yes LockPersonality=yes \
		MemoryDenyWriteExecute=yes SystemCallArchitectures=native; do
		grep -q "^$d" "$svc" || bad "mafsbxfs@.service lacks $d"
	done
	if grep -q '^CapabilityBoundingSet=' "$svc" && ! grep -q '^CapabilityBoundingSet=.*CAP_SYS_ADMIN' "$svc"; then
		bad "mafsbxfs@.service bounds away CAP_SYS_ADMIN (mount)"
	fi
	if grep -q '^RestrictNamespaces=' "$svc" && ! grep -Eq '^RestrictNamespaces=(.* )?net( |$)' "$svc"; then
		bad "mafsbxfs@.service forbids setns into a network namespace (the egress checks)"
	fi
	for d in ProtectSystem ProtectHome PrivateTmp PrivateDevices PrivateMounts PrivateNetwork PrivateUsers PrivateIPC \
		ReadOnlyPaths ReadWritePaths InaccessiblePaths TemporaryFileSystem BindPaths BindReadOnlyPaths \
		ProtectKernelTunables ProtectKernelModules ProtectKernelLogs ProtectControlGroups ProtectProc ProcSubset \
		MountFlags RootDirectory RootImage; do
		grep -q "^$d=" "$svc" && bad "mafsbxfs@.service sets $d=, which gives it a mount namespace: the mount would be invisible"
	done
fi

# 2b. systemd itself accepts the units: no "file:line: ..." diagnostic (an
#     unknown key, a value it cannot parse). The binaries live in the destdir,
#     so "not executable" for paths under the prefix is expected (checked above).
if command -v systemd-analyze >/dev/null 2>&1 && [ -d "$dest$unitdir" ]; then
	vdir="$work/units"
	mkdir -p "$vdir"
	cp "$dest$unitdir"/*.service "$dest$unitdir"/*.timer "$vdir"/
	# A template is verified through an instance.
	for t in "$vdir"/*@.service; do
		[ -f "$t" ] || continue
		mv "$t" "${t%@.service}@srv-sandboxes.service"
	done
	(cd "$vdir" && systemd-analyze verify --man=no ./*.service ./*.timer) >"$work/verify.log" 2>&1
	if grep -E ':[0-9]+: ' "$work/verify.log" >"$work/verify.bad"; then
		while IFS= read -r l; do bad "systemd-analyze verify: $l"; done <"$work/verify.bad"
	fi
fi

# 3. Every unit or example file the man pages name is installed.
for page in "$dest$mandir"/man1/mafsbx.1 "$dest$mandir"/man1/mafsbxfs.1; do
	[ -f "$page" ] || continue
	text=$(sed 's/\\-/-/g' "$page")
	for unit in $(printf '%s\n' "$text" | grep -oE 'lib/systemd/system/[A-Za-z0-9@._-]+' | sort -u); do
		[ -f "$dest$unitdir/${unit##*/}" ] || bad "${page##*/} names $unit, which is not installed"
	done
	for ex in $(printf '%s\n' "$text" | grep -oE 'doc/mafsbxfs/examples/[A-Za-z0-9@./_-]+' | sed 's/[.]$//' | sort -u); do
		[ -e "$dest$exampledir/${ex#doc/mafsbxfs/examples/}" ] || bad "${page##*/} names $ex, which is not installed"
	done
done

if [ $fail -eq 0 ]; then
	echo "installed as documented:"
	(cd "$dest" && find . -type f | sort | sed 's/^\./  /')
fi
exit $fail
