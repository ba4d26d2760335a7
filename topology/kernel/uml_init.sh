#!/bin/sh
# PID 1 of the pinned kernel. The host filesystem is our root (hostfs), so the job script, its
# output and everything it writes live in the host directory TESTBED_SCRATCH. The kernel is
# always halted at the end, whatever the job did, so the host process exits.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8

scratch="$TESTBED_SCRATCH"
date +%s.%N > "$scratch/init-started"

# Private /run, /dev and /dev/shm: the host's are visible through hostfs and must not be
# shared between instances (network namespaces are named under /run/netns).
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t tmpfs -o mode=755 tmpfs /run
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts -o ptmxmode=666,gid=5,mode=620 devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
hostname "${TESTBED_HOSTNAME:-testbed}"
uname -r > "$scratch/kernel-release"
ip link set lo up

if ! modprobe -a ${TESTBED_MODULES:-sctp sch_netem sch_htb veth} 2> "$scratch/modprobe.err"; then
  echo "pinned kernel: modprobe failed: $(cat "$scratch/modprobe.err"); run 'make setup'" > "$scratch/stderr"
  echo 125 > "$scratch/status"
  halt -f
fi

date +%s.%N > "$scratch/job-started"
/bin/sh "$scratch/job.sh" < /dev/null > "$scratch/stdout" 2> "$scratch/stderr"
echo $? > "$scratch/status.tmp" && mv "$scratch/status.tmp" "$scratch/status"
halt -f
