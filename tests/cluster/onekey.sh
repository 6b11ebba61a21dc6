#!/usr/bin/env bash
# onekey.sh: two mounts, each over another manager of the swarm (as two
# machines would mount it), acquire the same keys at the same moment: each
# key makes one service (the manager's name uniqueness is the lock), both
# mounts answer with its name, at most one of them says it created it, and
# what one mount writes the other reads. Nothing is left on any node.
. "$(dirname "$0")/testlib.sh"
require_env
nets_mark
MA=$T/a
MB=$T/b
mount_cluster "$MA"
PA=$DAEMON_PID
PLANE=local mount_fs "$MB" -o cluster=swarm -H "${CLUSTER_URLS[2]}"
PB=$DAEMON_PID

KEYS=5
pids=()
for r in $(seq 1 "$KEYS"); do
	(acquire "$MA" "same$r" a k && printf '%s %s\n' "$SBX" "$(jget "$CTL_REPLY" state)" >"$T/a.$r") &
	pids+=($!)
	(acquire "$MB" "same$r" a k && printf '%s %s\n' "$SBX" "$(jget "$CTL_REPLY" state)" >"$T/b.$r") &
	pids+=($!)
done
wait_pids 300 "${pids[@]}"
for r in $(seq 1 "$KEYS"); do
	[ -s "$T/a.$r" ] && [ -s "$T/b.$r" ] || fail "an acquire of key $r failed"
	read -r na sa <"$T/a.$r"
	read -r nb sb <"$T/b.$r"
	log "key $r: mount A $na ($sa), mount B $nb ($sb)"
	expect_eq "$nb" "$na" "both mounts name one sandbox for key $r"
	[ "$sa" = created ] && [ "$sb" = created ] && fail "both mounts say they created $na"
	expect_eq "$(docker service ls -q --filter "name=$na" | wc -l)" 1 "services named $na"
done
expect_eq "$(scope_services)" "$KEYS" "one service per key"

read -r N _ <"$T/a.1"
echo "from A" >"$MA/$N/work/shared.txt" || fail "write through mount A"
expect_eq "$(cat "$MB/$N/work/shared.txt")" "from A" "mount B reads what mount A wrote"
run_exec "$MB" "$N" "cat shared.txt"
expect_eq "$(jget "$CTL_REPLY" stdout)" "from A" "an exec through mount B sees it"

for r in $(seq 1 "$KEYS"); do
	read -r n _ <"$T/a.$r"
	rmdir "$MA/$n" || fail "dispose $n"
done
nothing_left "after the disposals"
expect_eq "$(ls "$MB" | grep -c '^maf-sandbox-docker-')" 0 "mount B lists none after A disposed them"
umount_fs "$MA" "$PA"
umount_fs "$MB" "$PB"
log "ok"
