#!/bin/bash
# Runs INSIDE the pinned kernel (see test_usrsctp_encapsulation.py): usrsctp's tsctp sends to
# bulkflow's SCTP receiver, the kernel's SCTP, and then bulkflow's sender to tsctp's receiver,
# over UDP encapsulation (RFC 6951), across a veth between two namespaces (tx: usrsctp, rx:
# the kernel's SCTP); everything is left in $WORK for the host side to judge.
#   BIN=DIR WORK=DIR MESSAGES=N LENGTH=BYTES bash inside_usrsctp_encapsulation.sh
set -euo pipefail
: "${BIN:?}" "${WORK:?}" "${MESSAGES:?}" "${LENGTH:?}"
KERNEL_UDP_PORT=9899     # where the receiver's kernel takes SCTP over UDP (net.sctp.udp_port)
USRSCTP_UDP_PORT=9900    # tsctp's own UDP port, to which the kernel encapsulates its answers
PORT=5001
ip netns add tx
ip netns add rx
ip link add tx0 netns tx type veth peer rx0 netns rx
ip -n tx addr add 10.7.0.1/24 dev tx0
ip -n rx addr add 10.7.0.2/24 dev rx0
for ns in tx rx; do ip -n $ns link set lo up; done
ip -n tx link set tx0 up
ip -n rx link set rx0 up
ip netns exec rx sysctl -q -w net.sctp.udp_port=$KERNEL_UDP_PORT \
    net.sctp.encap_port=$USRSCTP_UDP_PORT
ip netns exec rx sysctl -n net.sctp.udp_port net.sctp.encap_port > "$WORK/sysctls"
ip netns exec tx tcpdump -i tx0 -n -s 0 -U -w "$WORK/flow.pcap" 2> "$WORK/tcpdump.err" &
capture=$!
ip netns exec rx "$BIN/bulkflow" recv --proto sctp --listen 10.7.0.2:$PORT \
    --accept-timeout 30 --stall-timeout 20 > "$WORK/recv.jsonl" 2> "$WORK/recv.err" &
receiver=$!
sleep 1
# tsctp prints usrsctp's debug lines; only its exit status is judged
set +e
ip netns exec tx timeout 60 /usr/lib/usrsctp/tsctp -U $KERNEL_UDP_PORT -E $USRSCTP_UDP_PORT \
    -n "$MESSAGES" -l "$LENGTH" -p $PORT 10.7.0.2 > "$WORK/tsctp.out" 2>&1
echo $? > "$WORK/tsctp.rc"
wait $receiver
echo $? > "$WORK/recv.rc"
set -e

# the other way: the kernel's SCTP sends to usrsctp's, which acknowledges what it received;
# once with the veth's offloads as they come (GSO on) and once with GSO off on the kernel's
# side, each judged from its own counters (PROGRAMS.md: SCTP over UDP and GSO)
sctp_counters() { ip netns exec rx cat /proc/net/sctp/snmp; ip -n rx -s -j link show rx0; }
phase() {   # name port
    local name=$1 port=$2
    ip netns exec rx ethtool -k rx0 > "$WORK/$name.offloads"
    sctp_counters > "$WORK/$name.before"
    ip netns exec tx tcpdump -i tx0 -n -s 0 -U -w "$WORK/$name.pcap" 2> "$WORK/$name.tcpdump.err" &
    local phase_capture=$!
    ip netns exec tx /usr/lib/usrsctp/tsctp -E $USRSCTP_UDP_PORT -p "$port" \
        > "$WORK/$name.tsctp-recv.out" 2>&1 &
    local usrsctp_receiver=$!
    sleep 1
    set +e
    ip netns exec rx "$BIN/bulkflow" send --proto sctp --to "10.7.0.1:$port" --duration 2 \
        --stall-timeout 20 --drain-timeout 30 > "$WORK/$name.send.jsonl" 2> "$WORK/$name.send.err"
    echo $? > "$WORK/$name.send.rc"
    set -e
    # tsctp prints its count once the association has ended: wait for it (10 s at most)
    for _ in $(seq 100); do
        grep -q '^[0-9]*, [0-9]*, ' "$WORK/$name.tsctp-recv.out" && break
        sleep 0.1
    done
    kill $usrsctp_receiver
    wait $usrsctp_receiver || true
    sctp_counters > "$WORK/$name.after"
    sleep 1
    kill -INT $phase_capture
    wait $phase_capture || true
}
phase gso $((PORT + 1))
ip netns exec rx ethtool -K rx0 gso off tx-sctp-segmentation off
phase nogso $((PORT + 2))
sleep 1
kill -INT $capture
wait $capture || true
