#!/bin/bash
# Runs INSIDE the pinned kernel (see test_usrsctp_ftp.py): ftpc on usrsctp (--sctp-stack
# usrsctp) against ftpd on the kernel's SCTP over UDP encapsulation across a veth, one mget of
# the same files per SCTP variant and data mode; everything is left in $WORK.
#   BIN=DIR WORK=DIR bash inside_usrsctp_ftp.sh
set -euo pipefail
: "${BIN:?}" "${WORK:?}"
KERNEL_UDP_PORT=9899     # the kernel's SCTP over UDP (net.sctp.udp_port)
USRSCTP_UDP_PORT=9900    # usrsctp's beside it, where the kernel sends (net.sctp.encap_port)
SERVER=10.9.0.2
ip netns add cl
ip netns add sv
ip link add cl0 netns cl type veth peer sv0 netns sv
ip -n cl addr add 10.9.0.1/24 dev cl0
ip -n sv addr add $SERVER/24 dev sv0
for ns in cl sv; do
    ip -n "$ns" link set lo up
    ip -n "$ns" link set "${ns}0" up
done
ip netns exec sv sysctl -q -w net.sctp.udp_port=$KERNEL_UDP_PORT \
    net.sctp.encap_port=$USRSCTP_UDP_PORT
# the kernel's SCTP over UDP builds GSO packets usrsctp cannot take (PROGRAMS.md)
ip netns exec sv ethtool -K sv0 gso off tx-sctp-segmentation off
mkdir -p "$WORK/root"
head -c 10000 /dev/urandom > "$WORK/root/small.bin"
head -c 200000 /dev/urandom > "$WORK/root/medium.bin"
head -c 1000000 /dev/urandom > "$WORK/root/large.bin"
ip netns exec sv "$BIN/ftpd" --root "$WORK/root" --sctp $SERVER:21 --tcp $SERVER:21 \
    --log "$WORK/ftpd.log" --data-timeout 30 --idle-timeout 30 --run-as root \
    > "$WORK/ftpd.out" 2>&1 &
server=$!
ip netns exec cl tcpdump -i cl0 -n -s 0 -U -w "$WORK/client.pcap" 2> "$WORK/tcpdump.err" &
capture=$!
sleep 1
session() {  # NAME VARIANT [OPTIONS...]: one mget of every file
    local name=$1 variant=$2
    shift 2
    mkdir -p "$WORK/$name"
    set +e
    ip netns exec cl timeout 60 "$BIN/ftpc" --variant "$variant" --out "$WORK/$name" \
        --timeout 20 --sctp-stack usrsctp --sctp-udp-port $USRSCTP_UDP_PORT \
        --sctp-peer-udp-port $KERNEL_UDP_PORT "$@" $SERVER:21 mget '*' \
        > "$WORK/$name.events" 2> "$WORK/$name.err"
    echo $? > "$WORK/$name.rc"
    set -e
}
session naive-passive sctp-naive
session naive-active sctp-naive --active
session ms sctp-ms
session ms-cp sctp-ms-cp
sleep 1
kill -INT $capture
wait $capture || true
kill -TERM $server
wait $server || true
