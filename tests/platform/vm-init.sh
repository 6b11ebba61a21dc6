#!/bin/sh
# tests/platform/vm-init.sh: run as PID 1's program by the VM of
# tests/platform/cgroupv2.sh (its /sbin/mafsbx-vm-init mounts this tree, the
# VM's second disk, at /root/mafsbxfs and execs this). The least that makes a
# system docker runs on, with cgroup v2 only: no v1 hierarchy is mounted.
# Then tests/platform/vm-inside.sh, its output on the serial console and in
# the 9p share "out" (log, rc), and power off.
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts 2>/dev/null ||
	{ mkdir -p /dev/pts && mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts; }
mkdir -p /dev/shm /mnt/out
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup
hostname mafsbx-cgv2
ip link set lo up
for m in 9pnet_virtio 9p fuse overlay br_netfilter veth bridge nf_tables; do modprobe "$m"; done
mount -t 9p -o trans=virtio,version=9p2000.L,msize=1048576 out /mnt/out
echo "vm-init: up after $(cut -d' ' -f1 /proc/uptime) s"
cd /root/mafsbxfs && { bash tests/platform/vm-inside.sh 2>&1; echo $? >/tmp/vm-inside.status; } | tee /mnt/out/log
# vm-inside.sh writes rc itself; without it, say how it ended (a signal is
# 128+N) and keep the kernel's last words (the OOM killer, a hung task)
st=$(cat /tmp/vm-inside.status 2>/dev/null || echo unknown)
if [ ! -f /mnt/out/rc ]; then
	echo "vm-init: vm-inside.sh ended with status $st without writing its status" | tee -a /mnt/out/log
	echo 99 >/mnt/out/rc
fi
dmesg | tail -n 80 >/mnt/out/kernel.log 2>&1
sync
echo o >/proc/sysrq-trigger
sleep 60
