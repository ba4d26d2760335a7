#!/bin/sh
# Runs INSIDE the pinned kernel (started by bench_ftp.py).  Unshaped veth
# between namespaces cli (10.0.0.1) and srv (10.0.0.2).  Files live on a
# tmpfs; ftpc discards what it receives (--out /dev/null) as iperf3 does.
# Variables: BIN WORK BULK_MB REPS.
set -u
uname -r > "$WORK/kernel-release"
sysctl net.ipv4.tcp_congestion_control net.ipv4.tcp_sack net.core.wmem_default \
    net.core.rmem_default net.sctp.rto_min net.sctp.rto_initial net.sctp.sctp_wmem \
    net.sctp.sctp_rmem > "$WORK/sysctl.txt" 2>&1
ip netns add cli && ip netns add srv || exit 10
ip link add vc type veth peer name vs || exit 11
ip link set vc netns cli && ip link set vs netns srv || exit 12
ip -n cli addr add 10.0.0.1/24 dev vc && ip -n srv addr add 10.0.0.2/24 dev vs
for n in cli srv; do ip -n $n link set lo up; done
ip -n cli link set vc up && ip -n srv link set vs up || exit 13
C="ip netns exec cli"
S="ip netns exec srv"
R=/dev/shm/root
mkdir -p $R/small
head -c $((BULK_MB * 1048576)) /dev/urandom > $R/bulk.bin
i=0
while [ $i -lt 100 ]; do head -c 10240 /dev/urandom > $R/small/f$i.dat; i=$((i + 1)); done

$S "$BIN/ftpd" --root $R --tcp 10.0.0.2:21 --sctp 10.0.0.2:21 --log /dev/shm/ftpd.log \
    > /dev/shm/ftpd.out 2>&1 &
FTPD=$!
until grep -q ready /dev/shm/ftpd.out 2>/dev/null; do sleep 0.1; done

# Each repetition runs iperf3 (bytes-capped, TCP and SCTP) and then every
# variant back to back, so a change of load on the host hits both alike.
r=0
while [ $r -lt $REPS ]; do
  for proto in tcp sctp; do
    flag=""; [ $proto = sctp ] && flag="--sctp"
    $S iperf3 -s -1 -B 10.0.0.2 > /dev/null 2>&1 &
    SRV=$!
    sleep 0.3
    $C iperf3 -c 10.0.0.2 $flag -n ${BULK_MB}M -J > "$WORK/iperf3-$proto-$r.json" 2>&1
    wait $SRV
  done
  for v in tcp sctp-naive sctp-ms sctp-ms-cp; do
    $C "$BIN/ftpc" --variant $v --out /dev/null 10.0.0.2:21 get bulk.bin \
        > "$WORK/bulk-$v-$r.jsonl" 2>> "$WORK/errors.txt"
    $C "$BIN/ftpc" --variant $v --out /dev/null 10.0.0.2:21 mget 'small/*.dat' \
        > "$WORK/mget-$v-$r.jsonl" 2>> "$WORK/errors.txt"
  done
  r=$((r + 1))
done
kill $FTPD
wait $FTPD
exit 0
