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

# TESTBED_MODULES=none: a kernel with everything built in (the time-travel kernel). The list
# is split into module names on purpose.
# shellcheck disable=SC2086
if [ "${TESTBED_MODULES:-}" != none ] &&
   ! modprobe -a ${TESTBED_MODULES:-sctp sch_netem sch_htb veth} 2> "$scratch/modprobe.err"; then
  echo "pinned kernel: modprobe failed: $(cat "$scratch/modprobe.err"); run 'make setup'" > "$scratch/stderr"
  echo 125 > "$scratch/status"
  halt -f
fi

# Virtual time: a heartbeat tells the host how far the kernel's clock has got (its watchdog
# tells a frozen clock from a slow job), and the clock leaves 0 before the job starts (iputils
# ping misreads its first intervals right after boot); in virtual time both cost nothing.
if [ -n "${TESTBED_HEARTBEAT:-}" ]; then
  bash "$TESTBED_HEARTBEAT" "$scratch" < /dev/null > /dev/null 2>&1 &
fi
[ -z "${TESTBED_SETTLE_S:-}" ] || sleep "$TESTBED_SETTLE_S"

date +%s.%N > "$scratch/job-started"
read -r uptime _ < /proc/uptime && echo "$uptime" > "$scratch/job-started-uptime"
/bin/sh "$scratch/job.sh" < /dev/null > "$scratch/stdout" 2> "$scratch/stderr"
status=$?
read -r uptime _ < /proc/uptime && echo "$uptime" > "$scratch/job-ended-uptime"
echo $status > "$scratch/status.tmp" && mv "$scratch/status.tmp" "$scratch/status"
halt -f
