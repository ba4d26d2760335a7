#!/bin/sh
# Runs INSIDE the pinned kernel (see test_bind.py).  The client namespace
# has two networks, like an emulated node: the experiment link vc (10.0.0.1,
# plus a second address 10.0.0.11) and a management link mc (192.168.0.1).
# ftpd listens on 10.0.0.2 only.  Each run is captured on both client links.
# Variables: BINS (build directories), WORK.
set -u
cd "$WORK"
log() { echo "$*" >> "$WORK/job.log"; }

ip netns add cli && ip netns add srv || exit 10
ip link add vc type veth peer name vs || exit 11
ip link add mc type veth peer name ms || exit 11
ip link set vc netns cli && ip link set vs netns srv || exit 12
ip link set mc netns cli && ip link set ms netns srv || exit 12
ip -n cli addr add 10.0.0.1/24 dev vc && ip -n cli addr add 10.0.0.11/24 dev vc &&
  ip -n srv addr add 10.0.0.2/24 dev vs || exit 13
ip -n cli addr add 192.168.0.1/24 dev mc && ip -n srv addr add 192.168.0.2/24 dev ms || exit 13
for n in cli srv; do
  ip -n $n link set lo up
  ip netns exec $n sysctl -q -w net.ipv6.conf.all.disable_ipv6=1
done
for l in "cli vc" "cli mc" "srv vs" "srv ms"; do
  set -- $l
  ip -n "$1" link set "$2" up || exit 14
  ip netns exec "$1" ethtool -K "$2" tso off gso off gro off tx-sctp-segmentation off > /dev/null 2>&1
done
C="ip netns exec cli"
S="ip netns exec srv"

capture() {  # $1: pcap, $2: interface; sets PIDS
  $C tcpdump -i "$2" -n -s 0 --immediate-mode -U -w "$1" > /dev/null 2> "$1.tcpdump" &
  PIDS="$PIDS $!"
  i=0
  until grep -q "listening on" "$1.tcpdump" 2>/dev/null; do
    i=$((i + 1)); [ $i -gt 100 ] && break
    sleep 0.05
  done
}

run() {  # $1: run name, $2: variant, rest: ftpc options
  name=$1; v=$2; shift 2
  mkdir -p "$WORK/dl-$name"
  PIDS=""
  capture "$WORK/$name.exp.pcap" vc
  capture "$WORK/$name.mgmt.pcap" mc
  $C timeout 120 "$BIN/ftpc" --variant "$v" "$@" --timeout 30 --out "$WORK/dl-$name" \
      10.0.0.2:21 mget '*' > "$WORK/ev-$name.jsonl" 2> "$WORK/err-$name.txt"
  echo $? > "$WORK/rc-$name"
  sleep 1
  kill -INT $PIDS; wait $PIDS
  log "run $name rc=$(cat "$WORK/rc-$name")"
}

for BIN in $BINS; do
  b=$(basename "$BIN")
  $S "$BIN/ftpd" --root "$WORK/root" --tcp 10.0.0.2:21 --sctp 10.0.0.2:21 \
      --log "$WORK/ftpd-$b.log" > "$WORK/ftpd-$b.out" 2> "$WORK/ftpd-$b.err" &
  FTPD=$!
  i=0
  until grep -q ready "$WORK/ftpd-$b.out" 2>/dev/null; do
    i=$((i + 1)); [ $i -gt 100 ] && { log "ftpd did not start"; exit 15; }
    sleep 0.1
  done
  run "$b-unbound-sctp-naive" sctp-naive
  run "$b-bound-sctp-naive" sctp-naive --bind 10.0.0.11
  run "$b-bound-sctp-ms" sctp-ms --bind 10.0.0.11
  run "$b-bound-tcp" tcp --bind 10.0.0.11
  run "$b-bound-active-tcp" tcp --active --bind 10.0.0.11
  run "$b-bound-active-sctp-naive" sctp-naive --active --bind 10.0.0.11
  kill -TERM $FTPD
  wait $FTPD
done
log "job end"
exit 0
