# tests/platform/systemd-checks.sh: sourced by tests/platform/systemd.sh,
# which sets $ctr, $image, $BUILD, $sock, $scope, $mnt, $unit and the helpers check,
# inside, main_pid, run_hooks, log and die. boot_systemd starts the
# container with systemd as its PID 1 and installs the build's daemon, CLI
# and unit; unit_checks drives the unit and checks what the header of
# systemd.sh lists.
# shellcheck shell=bash disable=SC2154

boot_systemd() {
	# The host's engine socket away from /run (a tmpfs systemd expects empty).
	# --tmpfs /sys/fs/cgroup: systemd mounts the hierarchies itself, in the
	# container's cgroup namespace, writable (docker's own are read-only).
	docker run -d --name "$ctr" --cgroupns private \
		--tmpfs /run --tmpfs /run/lock --tmpfs /tmp --tmpfs /sys/fs/cgroup \
		--cap-add SYS_ADMIN --cap-add SYS_PTRACE --cap-add DAC_READ_SEARCH \
		--security-opt seccomp=unconfined --security-opt apparmor=unconfined \
		--device /dev/fuse -v "$sock:/mnt/docker.sock" \
		-e container=docker --stop-signal SIGRTMIN+3 \
		"$image" /lib/systemd/systemd >/dev/null || die "cannot start a container of $image"
	local state=
	for _ in $(seq 1 120); do
		state=$(inside systemctl is-system-running 2>/dev/null) || true
		case "$state" in running | degraded) break ;; esac
		sleep 0.25
	done
	case "$state" in
	running | degraded) log "systemd $(inside systemctl --version | awk 'NR == 1 { print $2 }') is $state in $ctr" ;;
	*) die "systemd did not finish booting in $ctr (state '$state'): $(docker logs "$ctr" 2>&1 | tail -n 5)" ;;
	esac
	inside mkdir -p /usr/local/bin "$mnt" /etc/systemd/system || die "mkdir in $ctr"
	docker cp "$BUILD/fs/mafsbxfs" "$ctr:/usr/local/bin/mafsbxfs" &&
		docker cp "$BUILD/tools/mafsbx" "$ctr:/usr/local/bin/mafsbx" &&
		docker cp "$BUILD/contrib/mafsbxfs@.service" "$ctr:/etc/systemd/system/mafsbxfs@.service" ||
		die "cannot copy the build into $ctr"
	# the unit runs what the build's prefix names
	inside grep -q '^ExecStart=/usr/local/bin/mafsbxfs ' /etc/systemd/system/mafsbxfs@.service ||
		die "$BUILD was not configured with the prefix /usr/local (its unit runs $(inside grep ^ExecStart= \
			/etc/systemd/system/mafsbxfs@.service))"
	inside sh -c 'ldd /usr/local/bin/mafsbxfs /usr/local/bin/mafsbx | grep "not found"' &&
		die "a library of the build is missing from $image"
	printf 'MAFSBXFS_OPTIONS=-o plane=engine,scope=%s,image=%s\nDOCKER_HOST=unix:///mnt/docker.sock\n' \
		"$scope" "${MAFSBX_IMAGE:-mafsbx/busybox:latest}" | docker exec -i "$ctr" sh -c 'cat > /etc/default/mafsbxfs'
	inside systemctl daemon-reload || die "systemctl daemon-reload"
}

# The names of the capabilities in the bounding set of process $1, lower
# case without cap_, one a line (bit N is line N+1 of setpriv's list).
bounding_set() {
	inside sh -c 'm=$(awk "/^CapBnd:/ { print \$2 }" /proc/$1/status); i=0
		setpriv --list-caps | while read -r c; do
			[ $(( (0x$m >> i) & 1 )) = 1 ] && echo "$c"; i=$((i + 1))
		done' sh "$1" | sort
}

# The directives in force on the daemon, PID $1.
hardening_checks() {
	local pid=$1 want got st
	st=$(inside cat "/proc/$pid/status")
	grep -q '^NoNewPrivs:[[:space:]]*1$' <<<"$st"
	check "NoNewPrivileges= holds for the daemon" $? "$(grep NoNewPrivs <<<"$st")"
	grep -q '^Seccomp:[[:space:]]*2$' <<<"$st"
	check "a seccomp filter (MemoryDenyWriteExecute=, SystemCallArchitectures=, ...) is on the daemon" $? \
		"$(grep '^Seccomp' <<<"$st")"
	want=$(inside sed -n 's/^CapabilityBoundingSet=//p' /etc/systemd/system/mafsbxfs@.service |
		tr ' ' '\n' | sed 's/^CAP_//' | tr '[:upper:]' '[:lower:]' | sort)
	got=$(bounding_set "$pid")
	[ -n "$got" ] && [ -z "$(comm -13 <(echo "$want") <(echo "$got"))" ]
	check "the daemon's bounding set is within the unit's CapabilityBoundingSet=" $? \
		"has $(comm -13 <(echo "$want") <(echo "$got") | paste -sd' ')"
	[ "$(inside readlink "/proc/$pid/ns/mnt")" = "$(inside readlink /proc/1/ns/mnt)" ]
	check "the daemon is in PID 1's mount namespace (none of its own, so the mount is seen)" $? \
		"$(inside readlink "/proc/$pid/ns/mnt") vs $(inside readlink /proc/1/ns/mnt)"
	[ "$(inside readlink "/proc/$pid/ns/uts")" != "$(inside readlink /proc/1/ns/uts)" ]
	check "ProtectHostname= gave the daemon a UTS namespace" $? "same as PID 1's"
	local cg
	cg=$(inside sed -n 's/^[0-9]*:devices://p' "/proc/$pid/cgroup")
	inside grep -qx 'c 10:229 rw' "/sys/fs/cgroup/devices$cg/devices.list" &&
		! inside grep -q '^a ' "/sys/fs/cgroup/devices$cg/devices.list"
	check "the unit's device list holds /dev/fuse and is a list (DeviceAllow=)" $? \
		"$(inside cat "/sys/fs/cgroup/devices$cg/devices.list" 2>&1 | paste -sd' ')"
}

# The mount as a process outside the unit sees it, and a sandbox acquired and
# written through it (sets $sbx).
mount_checks() {
	inside grep -q " $mnt .* - fuse.mafsbxfs " /proc/self/mountinfo
	check "another process sees the fuse.mafsbxfs mount on $mnt" $? "not in its mountinfo"
	inside cat "$mnt/.ctl/engine" | grep -q '"plane": "engine"'
	check "$mnt/.ctl/engine reads through the mount" $? "$(inside cat "$mnt/.ctl/engine" 2>&1 | head -n 3)"
	local req reply
	req="{\"scope\": \"$scope\", \"thread\": \"t\", \"agent\": \"a\", \"kind\": \"k\"}"
	reply=$(inside sh -c 'exec 3<>"$1/.ctl/acquire" && printf "%s" "$2" >&3 && cat <&3' sh "$mnt" "$req")
	sbx=$(printf '%s' "$reply" | sed -n 's/.*"name": *"\(maf-sandbox-docker-[0-9a-f]*\)".*/\1/p')
	[ -n "$sbx" ] && inside sh -c "echo under-systemd > $mnt/$sbx/work/unit.txt" &&
		[ "$(inside cat "$mnt/$sbx/work/unit.txt")" = under-systemd ]
	check "a sandbox acquired, written and read back through the unit's mount" $? "reply: $reply"
}

# journalctl -p err shows the daemon's error: a second instance whose engine
# socket does not exist fails to start with "cannot reach the Docker engine".
journal_checks() {
	local bad=mafsbxfs@srv-bad.service out
	inside mkdir -p /srv/bad "/etc/systemd/system/$bad.d"
	printf 'DOCKER_HOST=unix:///mnt/no-such-engine.sock\n' | docker exec -i "$ctr" sh -c 'cat > /etc/default/mafsbxfs-bad'
	printf '[Service]\nEnvironmentFile=\nEnvironmentFile=/etc/default/mafsbxfs-bad\nRestart=no\n' |
		docker exec -i "$ctr" sh -c "cat > /etc/systemd/system/$bad.d/bad.conf"
	inside systemctl daemon-reload
	inside systemctl start "$bad" >/dev/null 2>&1
	check "an instance without an engine fails to start" $((!$?)) "systemctl start $bad succeeded"
	out=$(inside journalctl -p err -u "$bad" --no-pager -o cat)
	grep -q '^mafsbxfs: cannot reach the Docker engine at unix:///mnt/no-such-engine.sock' <<<"$out"
	check "journalctl -p err shows the daemon's error line" $? "journalctl -p err -u $bad: $out"
	out=$(inside journalctl -p crit -u "$bad" --no-pager -o cat)
	! grep -q '^mafsbxfs:' <<<"$out"
	check "the error line is at priority err, not above" $? "journalctl -p crit: $out"
	inside systemctl reset-failed "$bad" >/dev/null 2>&1
}

unit_checks() {
	local pid pid2 t
	t=$SECONDS
	inside systemctl start "$unit"
	check "systemctl start $unit (Type=notify: the daemon said READY=1)" $? \
		"$(inside journalctl -u "$unit" --no-pager -o cat -n 12 2>&1)"
	log "started in $((SECONDS - t)) s"
	pid=$(main_pid)
	[ "${pid:-0}" != 0 ] || { check "the unit has a main process" 1 "MainPID is '${pid:-}'"; return; }
	hardening_checks "$pid"
	mount_checks
	run_hooks started
	journal_checks
	run_hooks before-restart
	inside systemctl restart "$unit"
	check "systemctl restart $unit" $? "$(inside systemctl status --no-pager "$unit" 2>&1 | tail -n 8)"
	pid2=$(main_pid)
	[ "${pid2:-0}" != 0 ] && [ "$pid2" != "$pid" ] && inside systemctl is-active -q "$unit"
	check "the restart made a new daemon ($pid, then ${pid2:-none}) and the unit is active" $? \
		"$(inside systemctl is-active "$unit")"
	inside grep -q " $mnt .* - fuse.mafsbxfs " /proc/self/mountinfo && [ -n "$sbx" ] &&
		[ "$(inside cat "$mnt/$sbx/work/unit.txt")" = under-systemd ]
	check "after the restart the mount is back and shows the sandbox's file" $? "$(inside ls -a "$mnt" 2>&1)"
	run_hooks after-restart
	[ -n "$sbx" ] && inside rmdir "$mnt/$sbx"
	inside systemctl stop "$unit"
	! inside grep -q " $mnt .* - fuse.mafsbxfs " /proc/self/mountinfo && ! inside systemctl is-active -q "$unit"
	check "systemctl stop unmounts $mnt" $? "$(inside grep " $mnt " /proc/self/mountinfo)"
}
