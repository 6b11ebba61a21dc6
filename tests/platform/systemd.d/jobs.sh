# tests/platform/systemd.d/jobs.sh: a hook of the systemd stage
# (tests/platform/systemd.sh): a detached job survives `systemctl restart`
# of the unit (doc/protocol.md "Jobs that outlive the daemon"), and the
# unit's KillMode=process is what makes it so.
#   before-restart: a job is detached that prints a numbered line every
#     0.2 s for 6 s, then 320 KiB of binary output (made in the guest, kept
#     in /tmp/sdjob.bin there), and exits 7; it still runs when the stage
#     restarts the unit
#   after-restart: its monitor is still there (or the job finished),
#     execs/ID/ is listed again, wait returns exit 7, status says exited 7,
#     and stdout is byte-exact (md5 against the same output made in the
#     guest); then, with a drop-in KillMode=control-group, a second job's
#     monitor dies in a restart and the job comes back lost (or absent):
#     the setting is what keeps the jobs
# shellcheck shell=bash disable=SC2154,SC2016

sdjob_lines=30
sdjob_blob=327680
sdjob_xid=''
sdjob_mon=''

# sdjob_request JSON: a .ctl/exec request through the mount, from a process
# outside the unit; prints the reply
sdjob_request() {
	inside sh -c 'exec 3<>"$1/.ctl/exec" && printf "%s" "$2" >&3 && cat <&3' sh "$mnt" "$1"
}

# sdjob_detach COMMAND: a detached exec in $sbx; prints its ID
sdjob_detach() {
	local reply
	reply=$(sdjob_request "{\"sandbox\": \"$sbx\", \"detach\": true, \"command\": \"$1\"}")
	printf '%s' "$reply" | sed -n 's/.*"exec": *"\([0-9a-f]*\)".*/\1/p'
}

# sdjob_monitor XID: the PID of the job's monitor (mafsbxfs --job-monitor .../XID) in the container
sdjob_monitor() {
	inside sh -c 'for p in /proc/[0-9]*; do
		tr "\0" " " <"$p/cmdline" 2>/dev/null | grep -q -- "--job-monitor .*/$1 \$" && echo "${p#/proc/}"
	done' sh "$1"
}

# sdjob_field XID FIELD: a member of the job's status, as its JSON text
sdjob_field() {
	inside cat "$mnt/$sbx/execs/$1/status" 2>/dev/null | sed -n "s/.*\"$2\": *\([^,}]*\).*/\1/p"
}

sdjob_before() {
	local lines="i=1; while [ \$i -le $sdjob_lines ]; do echo sd line \$i; i=\$((i+1)); sleep 0.2; done"
	[ -n "$sbx" ] || { check "a detached job before the restart" 1 "no sandbox was acquired"; return; }
	sdjob_xid=$(sdjob_detach "head -c $sdjob_blob /dev/urandom >/tmp/sdjob.bin; $lines; cat /tmp/sdjob.bin; exit 7")
	sleep 1
	sdjob_mon=$(sdjob_monitor "$sdjob_xid")
	[ -n "$sdjob_xid" ] && [ -n "$sdjob_mon" ] && [ "$(sdjob_field "$sdjob_xid" running)" = true ]
	check "a detached job runs under its monitor before the restart" $? \
		"exec ${sdjob_xid:-none}, status $(inside cat "$mnt/$sbx/execs/$sdjob_xid/status" 2>&1)"
}

# The job of sdjob_before after the stage's restart.
sdjob_after() {
	[ -n "$sdjob_xid" ] || return 0
	local x=$mnt/$sbx/execs/$sdjob_xid w want got
	[ -n "$sdjob_mon" ] && { [ "$(sdjob_monitor "$sdjob_xid")" = "$sdjob_mon" ] || [ "$(sdjob_field "$sdjob_xid" state)" = '"exited"' ]; }
	check "the job's monitor outlived systemctl restart (KillMode=process)" $? "monitor ${sdjob_mon:-none} is gone"
	inside test -d "$x"
	check "execs/$sdjob_xid/ is listed again after the restart" $? "$(inside ls "$mnt/$sbx/execs" 2>&1 | paste -sd' ')"
	w=$(inside timeout 60 cat "$x/wait")
	grep -q '"exit_code": *7[,}]' <<<"$w"
	check "wait of the adopted job returns exit 7" $? "$(head -c 300 <<<"$w")"
	[ "$(sdjob_field "$sdjob_xid" state)" = '"exited"' ] && [ "$(sdjob_field "$sdjob_xid" exit_code)" = 7 ]
	check "status of the adopted job says exited, 7" $? "$(inside cat "$x/status" 2>&1)"
	want=$(sdjob_request "{\"sandbox\": \"$sbx\", \"command\": \"{ i=1; while [ \$i -le $sdjob_lines ]; do echo sd line \$i; i=\$((i+1)); done; cat /tmp/sdjob.bin; } | md5sum\"}" |
		sed -n 's/.*"stdout": *"\([0-9a-f]\{32\}\).*/\1/p')
	got=$(inside md5sum "$x/stdout" | cut -c1-32)
	[ -n "$want" ] && [ "$got" = "$want" ]
	check "the adopted job's stdout is byte-exact ($sdjob_lines lines and $sdjob_blob bytes, md5 made in the guest)" $? \
		"md5 $got through the mount, ${want:-none} in the guest; $(inside grep -a -c '^sd line' "$x/stdout") lines"
	sdjob_killmode_matters
}

# The same with the unit's default KillMode=control-group (a drop-in): the
# restart kills the monitor, and the job comes back lost, or not at all.
sdjob_killmode_matters() {
	local dir=/etc/systemd/system/$unit.d xid mon st
	inside mkdir -p "$dir" &&
		printf '[Service]\nKillMode=control-group\n' | docker exec -i "$ctr" sh -c "cat > $dir/sdjob-killmode.conf" &&
		inside systemctl daemon-reload
	xid=$(sdjob_detach "echo before; sleep 5; echo after; exit 7")
	sleep 0.5
	mon=$(sdjob_monitor "$xid")
	inside systemctl restart "$unit"
	inside rm -f "$dir/sdjob-killmode.conf"
	inside systemctl daemon-reload
	st=$(sdjob_field "$xid" state)
	[ -n "$xid" ] && [ -n "$mon" ] && ! inside test -d "/proc/$mon" &&
		{ [ "$st" = '"lost"' ] || { [ -z "$st" ] && inside test -d "$mnt/$sbx/execs" && ! inside test -e "$mnt/$sbx/execs/$xid"; }; }
	check "with KillMode=control-group a restart kills the monitor and the job is lost" $? \
		"exec ${xid:-none}, monitor ${mon:-none} $(inside test -d "/proc/$mon" && echo alive), state '${st}'"
	log "with KillMode=control-group the job came back ${st:-absent}"
}

systemd_hook before-restart sdjob_before
systemd_hook after-restart sdjob_after
