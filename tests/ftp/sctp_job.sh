#!/bin/sh
# Runs INSIDE the pinned kernel (see test_sctp_kernel.py).  Two network
# namespaces joined by a veth pair: cli (10.0.0.1, vc) and srv (10.0.0.2, vs).
# ftpd serves $WORK/root over TCP and SCTP; ftpc runs every variant, each
# run captured with tcpdump on the client side.  Everything lands in $WORK
# for the host side to check (checksums, tshark).  Variables: BIN WORK.
set -u
cd "$WORK"
log() { echo "$*" >> "$WORK/job.log"; }

ip netns add cli && ip netns add srv || exit 10
ip link add vc type veth peer name vs || exit 11
ip link set vc netns cli && ip link set vs netns srv || exit 12
ip -n cli addr add 10.0.0.1/24 dev vc && ip -n srv addr add 10.0.0.2/24 dev vs
for n in cli srv; do ip -n $n link set lo up; done
ip -n cli link set vc up && ip -n srv link set vs up || exit 13
# Wire-sized frames in the pcaps (no TSO/GSO super-frames).
ip netns exec cli ethtool -K vc tso off gso off gro off tx-sctp-segmentation off > /dev/null 2>&1
ip netns exec srv ethtool -K vs tso off gso off gro off tx-sctp-segmentation off > /dev/null 2>&1
C="ip netns exec cli"
S="ip netns exec srv"
# Short SCTP timers so that lost handshakes under 10% loss cost little.
KNOBS="--sctp-rto-min 100 --sctp-rto-initial 300 --sctp-rto-max 2000"

$S "$BIN/ftpd" --root "$WORK/root" --tcp 10.0.0.2:21 --sctp 10.0.0.2:21 \
    --log "$WORK/ftpd.log" --allow-upload --idle-timeout 300 --data-timeout 60 $KNOBS \
    > "$WORK/ftpd.out" 2> "$WORK/ftpd.err" &
FTPD=$!
i=0
until grep -q ready "$WORK/ftpd.out" 2>/dev/null; do
  i=$((i + 1)); [ $i -gt 100 ] && { log "ftpd did not start"; exit 14; }
  sleep 0.1
done
ls /proc/$FTPD/fd | wc -l > "$WORK/ftpd-fds-before"

# tcpdump writes to a tmpfs (cheap inside UML) with a 16 MB ring, then the
# pcap moves to $WORK; its drop counters are kept and checked by the tests.
capture_start() {  # $1: pcap name
  rm -f "$WORK/$1.tcpdump"
  $C tcpdump -i vc -s 0 -B 16384 --immediate-mode -w "/dev/shm/$1.pcap" > /dev/null 2> "$WORK/$1.tcpdump" &
  TCPDUMP=$!
  i=0
  until grep -q "listening on" "$WORK/$1.tcpdump" 2>/dev/null; do
    i=$((i + 1)); [ $i -gt 100 ] && break
    sleep 0.05
  done
}
capture_stop() {  # tcpdump lags under UML: stop only when the pcap stops growing
  last=-1; i=0
  while [ $i -lt 100 ]; do
    sleep 0.2
    size=$(stat -c %s "/dev/shm/$name.pcap" 2>/dev/null || echo 0)
    [ "$size" = "$last" ] && break
    last=$size; i=$((i + 1))
  done
  kill -INT $TCPDUMP; wait $TCPDUMP
  mv "/dev/shm/$name.pcap" "$WORK/$name.pcap"
}

run() {  # $1: run name, $2: variant, rest: ftpc commands
  name=$1; v=$2; shift 2
  mkdir -p "$WORK/dl-$name"
  capture_start "$name"
  $C timeout 300 "$BIN/ftpc" --variant "$v" ${EXTRA:-} --timeout 60 $KNOBS --out "$WORK/dl-$name" \
      10.0.0.2:21 "$@" > "$WORK/ev-$name.jsonl" 2> "$WORK/err-$name.txt"
  echo $? > "$WORK/rc-$name"
  capture_stop
  log "run $name done rc=$(cat "$WORK/rc-$name")"
}

for v in tcp sctp-naive sctp-ms sctp-ms-cp; do
  run "small-$v" $v mget 'small/*.dat'
  run "big-$v" $v mget 'big/*.bin'
done

# Active mode over SCTP, uploads on stream 1 / data associations, and an
# empty listing (a 150 announcing 0 bytes, no message on stream 1).
EXTRA=--active run "active-sctp-naive" sctp-naive mget 'big/*.bin'
run "put-sctp-ms" sctp-ms put "$WORK/upload-ms.bin" ls empty
run "put-sctp-naive" sctp-naive put "$WORK/upload-naive.bin" ls empty

# 10% loss in both directions.
$S tc qdisc add dev vs root netem loss 10%
$C tc qdisc add dev vc root netem loss 10%
for v in tcp sctp-naive sctp-ms sctp-ms-cp; do
  run "loss-$v" $v mget 'loss/*'
done
$S tc qdisc del dev vs root
$C tc qdisc del dev vc root

# Associations aborted mid-file.  (a) by the server: the file shrinks under
# it, it cannot send the announced byte count and aborts; (b) by the
# client: killed with unread data, its kernel sends ABORT.
$S tc qdisc add dev vs root netem rate 40mbit
for v in sctp-naive sctp-ms; do
  cp "$WORK/root/abort/huge.bin.orig" "$WORK/root/abort/huge.bin"
  mkdir -p "$WORK/dl-abort-$v"
  name="abort-$v"
  capture_start "abort-$v"
  $C "$BIN/ftpc" --variant $v --timeout 30 --out "$WORK/dl-abort-$v" 10.0.0.2:21 \
      get abort/huge.bin > "$WORK/ev-abort-$v.jsonl" 2> "$WORK/err-abort-$v.txt" &
  CL=$!
  sleep 1
  truncate -s 1000000 "$WORK/root/abort/huge.bin"
  wait $CL
  echo $? > "$WORK/rc-abort-$v"
  capture_stop

  cp "$WORK/root/abort/huge.bin.orig" "$WORK/root/abort/huge.bin"
  mkdir -p "$WORK/dl-kill-$v"
  $C "$BIN/ftpc" --variant $v --timeout 30 --out "$WORK/dl-kill-$v" 10.0.0.2:21 \
      get abort/huge.bin > /dev/null 2>&1 &
  CL=$!
  sleep 1
  kill -9 $CL
  wait $CL
  echo $? > "$WORK/rc-kill-$v"
done
$S tc qdisc del dev vs root
sleep 0.5
# The server still serves, and its main process holds no extra descriptors.
run "after-sctp-ms-cp" sctp-ms-cp mget 'big/*.bin'
run "after-sctp-naive" sctp-naive mget 'big/*.bin'
sleep 0.5
ls /proc/$FTPD/fd | wc -l > "$WORK/ftpd-fds-after"
kill -0 $FTPD && echo alive > "$WORK/ftpd-alive"
kill -TERM $FTPD
wait $FTPD
echo $? > "$WORK/ftpd-rc"
log "job end"
exit 0
