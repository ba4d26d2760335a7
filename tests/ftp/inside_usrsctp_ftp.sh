#!/bin/bash
# Runs INSIDE the pinned kernel (see test_usrsctp_ftp.py): FTP over SCTP inside UDP (RFC 6951)
# across a veth, one mget of the same files per SCTP variant and data mode, in three pairings,
# each captured apart: ftpc on usrsctp against ftpd on the kernel's SCTP (client.pcap), ftpc on
# the kernel's against ftpd on usrsctp (kclient.pcap), both on usrsctp (both.pcap). Everything
# is left in $WORK.
#   BIN=DIR WORK=DIR bash inside_usrsctp_ftp.sh
set -euo pipefail
: "${BIN:?}" "${WORK:?}"
KERNEL_UDP_PORT=9899     # the kernel's SCTP over UDP (net.sctp.udp_port)
USRSCTP_UDP_PORT=9900    # usrsctp's beside it, where the kernel sends (net.sctp.encap_port)
BOTH_CLIENT_UDP_PORT=9902  # the usrsctp client's when the server is usrsctp too
SERVER=10.9.0.2
ip netns add cl
ip netns add sv
ip link add cl0 netns cl type veth peer sv0 netns sv
ip -n cl addr add 10.9.0.1/24 dev cl0
ip -n sv addr add $SERVER/24 dev sv0
LINK_MTU=1548            # the testbed's links' (topology/), above usrsctp's own 1,500
for ns in cl sv; do
    ip -n "$ns" link set lo up
    ip -n "$ns" link set "${ns}0" mtu $LINK_MTU up
done
for ns in cl sv; do
    ip netns exec "$ns" sysctl -q -w net.sctp.udp_port=$KERNEL_UDP_PORT \
        net.sctp.encap_port=$USRSCTP_UDP_PORT
    # the kernel's SCTP over UDP builds GSO packets usrsctp cannot take (PROGRAMS.md)
    ip netns exec "$ns" ethtool -K "${ns}0" gso off tx-sctp-segmentation off
done
mkdir -p "$WORK/root"
head -c 10000 /dev/urandom > "$WORK/root/small.bin"
head -c 200000 /dev/urandom > "$WORK/root/medium.bin"
head -c 1000000 /dev/urandom > "$WORK/root/large.bin"
ip netns exec sv "$BIN/ftpd" --root "$WORK/root" --sctp $SERVER:21 --tcp $SERVER:21 \
    --log "$WORK/ftpd.log" --data-timeout 30 --idle-timeout 30 --run-as root \
    > "$WORK/ftpd.out" 2>&1 &
server=$!
capture() {  # FILE: start capturing on the client's link
    capturing_to=$WORK/$1
    ip netns exec cl tcpdump -i cl0 -n -s 0 -U -w "$capturing_to" \
        2>> "$WORK/tcpdump.err" &
    capturing=$!
    sleep 1
}
stop_capture() {  # once the file has stopped growing: on SIGINT tcpdump drops what it has
    # not read yet (a loaded CI run lost the last 238 packets, a session's end among them)
    local last=-1 size _
    for _ in $(seq 40); do
        sleep 0.5
        size=$(stat -c %s "$capturing_to")
        [ "$size" = "$last" ] && break
        last=$size
    done
    kill -INT $capturing
    wait $capturing || true
}
session() {  # NAME PORT VARIANT [OPTIONS...]: one mget of every file from the server's PORT
    local name=$1 port=$2 variant=$3
    shift 3
    mkdir -p "$WORK/$name"
    set +e
    ip netns exec cl timeout 60 "$BIN/ftpc" --variant "$variant" --out "$WORK/$name" \
        --timeout 20 "$@" $SERVER:"$port" mget '*' > "$WORK/$name.events" 2> "$WORK/$name.err"
    echo $? > "$WORK/$name.rc"
    set -e
}
# the client's options on usrsctp towards a server on the kernel's SCTP
on_usrsctp=(--sctp-stack usrsctp --sctp-udp-port "$USRSCTP_UDP_PORT"
            --sctp-peer-udp-port "$KERNEL_UDP_PORT")
capture client.pcap
session naive-passive 21 sctp-naive "${on_usrsctp[@]}"
session naive-active 21 sctp-naive --active "${on_usrsctp[@]}"
session ms 21 sctp-ms "${on_usrsctp[@]}"
session ms-cp 21 sctp-ms-cp "${on_usrsctp[@]}"
stop_capture
# each association's end reached by the server first, and the client's lost: every packet
# acknowledged at once by the client, its SHUTDOWN held back 300 ms and the server's SHUTDOWN
# COMPLETE dropped (a chunk's type at byte 40 of the IP packet: IP 20, UDP 8, SCTP's common
# header 12), so the server's SHUTDOWN crosses it, the server ends each association, and the
# client's goes on until its SHUTDOWN reaches a server that no longer knows it (lostend.pcap)
chunk_filter() {  # NAMESPACE DEVICE UDP_SOURCE_PORT CHUNK_TYPE ACTION...
    local ns=$1 dev=$2 port=$3 type=$4
    shift 4
    ip netns exec "$ns" tc filter add dev "$dev" parent 1: protocol ip u32 \
        match ip protocol 17 0xff match u16 "$port" 0xffff at 20 match u8 "$type" 0xff at 40 "$@"
}
ip netns exec cl tc qdisc add dev cl0 root handle 1: prio
ip netns exec cl tc qdisc add dev cl0 parent 1:3 handle 30: netem delay 300ms
chunk_filter cl cl0 $USRSCTP_UDP_PORT 7 flowid 1:3
ip netns exec sv tc qdisc add dev sv0 root handle 1: prio
chunk_filter sv sv0 $KERNEL_UDP_PORT 14 action drop
capture lostend.pcap
session naive-lost-end 21 sctp-naive "${on_usrsctp[@]}" \
    --usrsctp-sysctl=sctp_sack_freq_default=1
stop_capture
ip netns exec cl tc qdisc del dev cl0 root
ip netns exec sv tc qdisc del dev sv0 root
kill -TERM $server
wait $server || true

# ftpd on usrsctp: one session at a time in its own process, on the UDP port the kernel sends
# to; each association, and active mode's data, goes to the UDP port its client speaks from
ip netns exec sv "$BIN/ftpd" --root "$WORK/root" --sctp $SERVER:2121 --tcp $SERVER:2121 \
    --sctp-stack usrsctp --sctp-udp-port $USRSCTP_UDP_PORT --log "$WORK/ftpd-usrsctp.log" \
    --data-timeout 30 --idle-timeout 30 --run-as root > "$WORK/ftpd-usrsctp.out" 2>&1 &
server=$!
capture kclient.pcap
session srv-naive-passive 2121 sctp-naive
session srv-naive-active 2121 sctp-naive --active
session srv-ms 2121 sctp-ms
session srv-ms-cp 2121 sctp-ms-cp
stop_capture
capture both.pcap
both=(--sctp-stack usrsctp --sctp-udp-port "$BOTH_CLIENT_UDP_PORT"
      --sctp-peer-udp-port "$USRSCTP_UDP_PORT")
session both-naive 2121 sctp-naive "${both[@]}"
session both-ms-cp 2121 sctp-ms-cp "${both[@]}"
stop_capture
kill -TERM $server
wait $server || true
