#!/bin/bash
# Runs INSIDE the pinned kernel (see test_usrsctp_bulkflow.py): bulkflow on usrsctp
# (--sctp-stack usrsctp) against bulkflow on the kernel's SCTP, both ways, and against itself,
# each flow 2 s, over UDP encapsulation across veths, and usrsctp to itself for 4 s through
# a 3 Mbit/s netem link (E1's LAN), where the window holds data back; everything is left in
# $WORK.
#   BIN=DIR WORK=DIR bash inside_usrsctp_bulkflow.sh
set -euo pipefail
: "${BIN:?}" "${WORK:?}"
KERNEL_UDP_PORT=9899     # the kernel's SCTP over UDP (net.sctp.udp_port)
USRSCTP_UDP_PORT=9900    # usrsctp's beside it, where the kernel sends (net.sctp.encap_port)
pair() {  # NS_A NS_B SUBNET: a veth between two new namespaces, 10.SUBNET.0.1 and .2
    ip netns add "$1"
    ip netns add "$2"
    ip link add "${1}0" netns "$1" type veth peer "${2}0" netns "$2"
    ip -n "$1" addr add "10.$3.0.1/24" dev "${1}0"
    ip -n "$2" addr add "10.$3.0.2/24" dev "${2}0"
    for ns in "$1" "$2"; do
        ip -n "$ns" link set lo up
        ip -n "$ns" link set "${ns}0" up
    done
}
pair us ks 7     # usrsctp's end (us) and the kernel's (ks)
pair ua ub 8     # usrsctp at both ends
pair uc ud 9     # usrsctp at both ends, shaped: 3 Mbit/s and 1 ms from uc
ip netns exec uc tc qdisc add dev uc0 root netem delay 1ms rate 3mbit limit 700
ip netns exec ks sysctl -q -w net.sctp.udp_port=$KERNEL_UDP_PORT \
    net.sctp.encap_port=$USRSCTP_UDP_PORT
# the kernel's SCTP over UDP builds GSO packets usrsctp cannot take (PROGRAMS.md)
ip netns exec ks ethtool -K ks0 gso off tx-sctp-segmentation off
ip netns exec us tcpdump -i us0 -n -s 0 -U -w "$WORK/kernel.pcap" 2> "$WORK/tcpdump1.err" &
capture1=$!
ip netns exec ua tcpdump -i ua0 -n -s 0 -U -w "$WORK/usrsctp.pcap" 2> "$WORK/tcpdump2.err" &
capture2=$!
ip netns exec uc tcpdump -i uc0 -n -s 0 -U -w "$WORK/shaped.pcap" 2> "$WORK/tcpdump3.err" &
capture3=$!
sleep 1
FLOW=(--duration 2 --stall-timeout 20 --drain-timeout 20)
flow() {  # NAME RECV_NS SEND_NS PORT "RECV_OPTIONS" "SEND_OPTIONS"
    local name=$1 addr
    addr=$(ip -n "$2" -4 -o addr show | awk '$2 != "lo" {print $4}' | cut -d/ -f1)
    # shellcheck disable=SC2086
    ip netns exec "$2" timeout 60 "$BIN/bulkflow" recv --proto sctp --listen "$addr:$4" \
        --accept-timeout 20 --stall-timeout 20 $5 > "$WORK/$name.recv" 2> "$WORK/$name.recv.err" &
    local receiver=$!
    sleep 0.5
    set +e
    # shellcheck disable=SC2086
    ip netns exec "$3" timeout 60 "$BIN/bulkflow" send --proto sctp --to "$addr:$4" "${FLOW[@]}" \
        $6 > "$WORK/$name.send" 2> "$WORK/$name.send.err"
    echo $? > "$WORK/$name.send.rc"
    wait $receiver
    echo $? > "$WORK/$name.recv.rc"
    set -e
}
USRSCTP="--sctp-stack usrsctp --sctp-udp-port $USRSCTP_UDP_PORT"
flow usrsctp-to-kernel ks us 5001 "" "$USRSCTP --sctp-peer-udp-port $KERNEL_UDP_PORT"
flow kernel-to-usrsctp us ks 5002 "$USRSCTP" ""
flow usrsctp-to-usrsctp ub ua 5003 "--sctp-stack usrsctp" "--sctp-stack usrsctp"
FLOW=(--duration 4 --stall-timeout 20 --drain-timeout 20)
flow usrsctp-shaped ud uc 5004 "--sctp-stack usrsctp" "--sctp-stack usrsctp"
sleep 1
kill -INT $capture1 $capture2 $capture3
wait $capture1 $capture2 $capture3 || true
