"""Runs inside the project's kernel: one transfer per setting of each era switch
(topology/kernel/timetravel/patches/0003-era-switches.patch, 0004 and 0005), captured at the
sender, for tests/core/test_era_switches.py to judge from the pcaps.

    python3 tests/core/inside_era_switches.py OUT_DIR

Each case gets three fresh namespaces in a line: the sender's, where the switch is set; a
router's, whose egress to the receiver is the bottleneck (so that acks come back spaced, one
clock tick of the path each) and whose ingress drops every Nth packet of the transfer (gact's
deterministic mode), or for the T3 and again cases the first two copies of chosen chunks: a loss the
sender cannot see locally, at a place that does not depend on timing; and the receiver's,
whose egress delays the acks by RTT_MS. Then the era stack's route metrics (initial window,
RTO floor) put on the sender's routes and taken off again, as runs of two stacks meet them,
with a transfer each. OUT_DIR gets <case>.pcap and cases.json
(each case's settings as read back from /proc/sys, the routes, and the bytes received)."""
from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from topology.net.base import OFFLOADS_OFF

PYTHON = "/usr/bin/python3"
SENDER_IP, RECEIVER_IP, PORT = "10.9.1.1", "10.9.2.2", 5001
ROUTER_IPS = ("10.9.1.254", "10.9.2.254")
RTT_MS = 50
TCP_BASE = {"net.ipv4.tcp_congestion_control": "reno", "net.ipv4.tcp_sack": "0",
            "net.ipv4.tcp_no_metrics_save": "1", "net.ipv4.tcp_frto": "0",
            "net.ipv4.tcp_wmem": "4096 1048576 4194304"}
# the receiver's window never limits the sender: what the tests see is cwnd alone
RECEIVER = {"net.ipv4.tcp_rmem": "4096 1048576 4194304"}

# RTO.Min = RTO.Max = RTO.Initial: every T3 runs exactly 1 s, so its expiry shows its start
FIXED_RTO = {"net.sctp.rto_initial": "1000", "net.sctp.rto_min": "1000",
             "net.sctp.rto_max": "1000"}

# case: (transport, sender sysctls, drop every Nth packet or 0, bottleneck, what is sent).
# The abc cases lose every second ack instead (ACK_DROPS): each ack that arrives covers two
# segments whatever the receiver's delayed-ack policy, which is what byte counting is about.
CASES: dict[str, tuple[str, dict[str, str], int, str, str]] = {
    "lt-on": ("tcp", {"net.ipv4.tcp_limited_transmit": "1"}, 100, "10mbit", "bulk:380000"),
    "lt-off": ("tcp", {"net.ipv4.tcp_limited_transmit": "0"}, 100, "10mbit", "bulk:380000"),
    "prr-on": ("tcp", {"net.ipv4.tcp_prr": "1"}, 100, "10mbit", "bulk:380000"),
    "prr-off": ("tcp", {"net.ipv4.tcp_prr": "0"}, 100, "10mbit", "bulk:380000"),
    "abc-on": ("tcp", {"net.ipv4.tcp_abc": "1"}, 0, "100mbit", "bulk:1500000"),
    "abc-off": ("tcp", {"net.ipv4.tcp_abc": "0"}, 0, "100mbit", "bulk:1500000"),
    "frtx-3": ("sctp", {"net.sctp.fast_rtx_threshold": "3"}, 100, "10mbit", "chunks:300"),
    "frtx-4": ("sctp", {"net.sctp.fast_rtx_threshold": "4"}, 100, "10mbit", "chunks:300"),
    "burst-restore": ("sctp", {"net.sctp.max_burst_clamps_cwnd": "0"}, 0, "100mbit",
                      "bursts:300,100,100"),
    "burst-clamp": ("sctp", {"net.sctp.max_burst_clamps_cwnd": "1"}, 0, "100mbit",
                    "bursts:300,100,100"),
    "t3-keep": ("sctp", {"net.sctp.fast_rtx_restarts_t3": "0", **FIXED_RTO}, 0, "200kbit",
                "chunks:600"),
    "t3-restart": ("sctp", {"net.sctp.fast_rtx_restarts_t3": "1", **FIXED_RTO}, 0, "200kbit",
                   "chunks:600"),
    "again-never": ("sctp", {"net.sctp.fast_rtx_strikes_again": "0", **FIXED_RTO}, 0,
                    "10mbit", "chunks:600"),
    "again-later": ("sctp", {"net.sctp.fast_rtx_strikes_again": "1", **FIXED_RTO}, 0,
                    "10mbit", "chunks:600"),
}
ACK_DROPS = {"abc-on": 2, "abc-off": 2}
# The T3 cases lose the first two copies of every chunk whose TSN ends in this byte: the first
# is fast-retransmitted (where the flight allows it), that copy is lost too, and T3 sends the
# third. The initial TSN is random, so which chunks those are is too: 600 chunks hold two or
# three, at least one far enough in for a fast retransmit. At 200 kbit/s the SACKs that report
# the hole come 58 ms apart, so a T3 left running and one restarted expire 116 ms or more apart.
# The again cases lose the same copies on a faster path with the stack's own receive window
# (about 75 chunks; its queue at 10 Mbit/s is 90 ms, far under the 1 s RTO). Once a loss has
# lowered cwnd, cwnd and not the window bounds the flight, so new chunks follow a fast
# retransmission while it is outstanding, and their SACKs are those that may strike it again.
# A chunk lost while the window is full has none and waits for T3 on either setting; the
# tests judge the chunks that had them.
TWICE_LOST_TSN_BYTE = {"t3-keep": 0x80, "t3-restart": 0x80, "again-never": 0x80,
                       "again-later": 0x80}
CHUNK = 1400          # one SCTP message, one DATA chunk, one packet
# ... and their receiver's window holds 8 chunks (SO_RCVBUF: Linux's SCTP advertises half the
# doubled buffer), so the bottleneck's queue never holds more than 0.5 s of them, under the 1 s
# RTO: a copy that passes arrives before T3 fires again. With the default 104 KB window the queue
# grew to 4 s, the third copy arrived after T3 had sent a fourth and fifth, and the drop filter's
# count (every third match passes) no longer lined up with the next chosen chunk (one CI run).
RECEIVE_BUFFER = {"t3-keep": 8 * CHUNK, "t3-restart": 8 * CHUNK}
PAUSE_S = 1.0         # between bursts: every chunk acknowledged; far under hb_interval (30 s)

RECEIVE = ("import socket, sys\n"
           "kind = socket.IPPROTO_SCTP if sys.argv[1] == 'sctp' else 0\n"
           "s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, kind)\n"
           "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
           "if int(sys.argv[4]):\n"
           "    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, int(sys.argv[4]))\n"
           "s.bind((sys.argv[2], int(sys.argv[3]))); s.listen(1)\n"
           "print('ready', flush=True)\n"
           "c, _ = s.accept(); total = 0\n"
           "while True:\n"
           "    data = c.recv(65536)\n"
           "    if not data: break\n"
           "    total += len(data)\n"
           "print(total, flush=True)\n")
SEND = ("import socket, sys, time\n"
        "kind = socket.IPPROTO_SCTP if sys.argv[1] == 'sctp' else 0\n"
        "s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, kind)\n"
        "s.connect((sys.argv[2], int(sys.argv[3])))\n"
        "shape, _, counts = sys.argv[4].partition(':')\n"
        f"chunk = b'x' * {CHUNK}\n"
        "if shape == 'bulk':\n"
        "    s.sendall(b'x' * int(counts))\n"
        "else:\n"
        "    for i, count in enumerate(int(n) for n in counts.split(',')):\n"
        f"        if i: time.sleep({PAUSE_S})\n"
        "        for _ in range(count): s.sendall(chunk)\n"
        "s.close()\n")


def sh(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout


def set_sysctls(ns: str, values: dict[str, str]) -> dict[str, str]:
    for name, value in values.items():
        sh("ip", "netns", "exec", ns, "sysctl", "-q", "-w", f"{name}={value}")
    return {name: sh("ip", "netns", "exec", ns, "sysctl", "-n", name).strip()
            for name in values}


def pair(case: str, drop_every: int, transport: str, rate: str) -> tuple[str, str]:
    """sender -- router -- receiver: the router's egress to the receiver is the bottleneck
    (`rate`), its ingress from the sender drops; the receiver's egress delays the acks."""
    index = list(CASES).index(case) if case in CASES else len(CASES)
    sender, router, receiver = f"era-s{index}", f"era-g{index}", f"era-r{index}"
    for ns in (sender, router, receiver):
        sh("ip", "netns", "add", ns)
        sh("ip", "-n", ns, "link", "set", "lo", "up")
    sh("ip", "link", "add", "s0", "netns", sender, "type", "veth", "peer", "g1", "netns", router)
    sh("ip", "link", "add", "g2", "netns", router, "type", "veth", "peer", "r0",
       "netns", receiver)
    for ns, dev, ip in ((sender, "s0", SENDER_IP), (router, "g1", ROUTER_IPS[0]),
                        (router, "g2", ROUTER_IPS[1]), (receiver, "r0", RECEIVER_IP)):
        sh("ip", "-n", ns, "addr", "add", f"{ip}/24", "dev", dev)
        sh("ip", "netns", "exec", ns, "ethtool", "-K", dev, *OFFLOADS_OFF)
        sh("ip", "-n", ns, "link", "set", dev, "up")
    sh("ip", "-n", sender, "route", "add", "default", "via", ROUTER_IPS[0])
    sh("ip", "-n", receiver, "route", "add", "default", "via", ROUTER_IPS[1])
    set_sysctls(router, {"net.ipv4.ip_forward": "1"})
    sh("ip", "netns", "exec", router, "tc", "qdisc", "add", "dev", "g2", "root", "netem",
       "rate", rate, "limit", "100000")
    sh("ip", "netns", "exec", receiver, "tc", "qdisc", "add", "dev", "r0", "root", "netem",
       "delay", f"{RTT_MS}ms", "limit", "100000")
    protocol = "132" if transport == "sctp" else "6"
    if drop_every:
        drop(router, "g1", protocol, "dport", drop_every)
    if ACK_DROPS.get(case):
        drop(router, "g2", protocol, "sport", ACK_DROPS[case])
    if case in TWICE_LOST_TSN_BYTE:
        drop_twice(router, "g1", TWICE_LOST_TSN_BYTE[case])
    return sender, receiver


def drop(router: str, device: str, protocol: str, port_field: str, every: int) -> None:
    """Every `every`-th packet of the transfer that enters the router on `device` is lost."""
    sh("ip", "netns", "exec", router, "tc", "qdisc", "add", "dev", device, "ingress")
    sh("ip", "netns", "exec", router, "tc", "filter", "add", "dev", device, "parent", "ffff:",
       "protocol", "ip", "prio", "1", "u32", "match", "ip", "protocol", protocol, "0xff",
       "match", "ip", port_field, str(PORT), "0xffff",
       "action", "gact", "ok", "random", "determ", "drop", str(every))


def drop_twice(router: str, device: str, tsn_byte: int) -> None:
    """The first two copies of each DATA chunk whose TSN ends in `tsn_byte` are lost: every
    third packet that matches passes (one chunk per packet; IP header 20 bytes, SCTP common
    header 12, the first chunk's type at 32 and its TSN's last byte at 39)."""
    sh("ip", "netns", "exec", router, "tc", "qdisc", "add", "dev", device, "ingress")
    sh("ip", "netns", "exec", router, "tc", "filter", "add", "dev", device, "parent", "ffff:",
       "protocol", "ip", "prio", "1", "u32", "match", "ip", "protocol", "132", "0xff",
       "match", "ip", "dport", str(PORT), "0xffff", "match", "u8", "0", "0xff", "at", "32",
       "match", "u8", str(tsn_byte), "0xff", "at", "39",
       "action", "gact", "drop", "random", "determ", "ok", "3")


def transfer(sender: str, receiver: str, transport: str, shape: str, pcap: Path,
             receive_buffer: int = 0) -> tuple[int, int]:
    """One transfer of `shape`, captured at the sender into `pcap`, to a receiver with
    `receive_buffer` as its SO_RCVBUF (0: the stack's default): (bytes the receiver got,
    packets tcpdump's buffer dropped)."""
    capture = subprocess.Popen(["ip", "netns", "exec", sender, "tcpdump", "-i", "s0", "-s", "0",
                                "-U", "-n", "-w", str(pcap), transport],
                               stderr=subprocess.PIPE, text=True)
    capture.stderr.readline()                       # "listening on s0 ..."
    listener = subprocess.Popen(["ip", "netns", "exec", receiver, PYTHON, "-c", RECEIVE,
                                 transport, RECEIVER_IP, str(PORT), str(receive_buffer)],
                                stdout=subprocess.PIPE, text=True)
    assert listener.stdout.readline().strip() == "ready"
    sh("ip", "netns", "exec", sender, PYTHON, "-c", SEND, transport, RECEIVER_IP, str(PORT),
       shape)
    received = int(listener.communicate(timeout=120)[0].strip())
    return received, stop(capture)


def stop(capture: subprocess.Popen) -> int:
    """Stop tcpdump once it has caught up (it may lag the transfer); what its kernel buffer
    dropped, as it reports on its way out."""
    time.sleep(1.0)
    capture.send_signal(signal.SIGINT)
    _, err = capture.communicate(timeout=60)
    found = re.search(r"(\d+) packets? dropped by kernel", err)
    if found is None:
        raise RuntimeError(f"tcpdump said no drop count: {err}")
    return int(found.group(1))


def delete(sender: str, receiver: str) -> None:
    for ns in (sender, sender.replace("era-s", "era-g"), receiver):
        subprocess.run(["ip", "netns", "delete", ns], capture_output=True)


def run_case(case: str, out: Path) -> dict:
    transport, switches, drop_every, rate, shape = CASES[case]
    sender, receiver = pair(case, drop_every, transport, rate)
    try:
        settings = set_sysctls(sender, {**(TCP_BASE if transport == "tcp" else {}),
                                        **switches})
        set_sysctls(receiver, RECEIVER)
        pcap, receive_buffer = out / f"{case}.pcap", RECEIVE_BUFFER.get(case, 0)
        received, dropped = transfer(sender, receiver, transport, shape, pcap, receive_buffer)
        return {"capture_dropped": dropped, "transport": transport, "settings": settings,
                "drop_every": drop_every, "rate": rate, "shape": shape, "received": received,
                "receive_buffer": receive_buffer}
    finally:
        delete(sender, receiver)


class NamespaceNode:
    """What kernel_batch.apply_route_metrics asks of a node: a name and a shell in it."""

    def __init__(self, namespace: str) -> None:
        self.name = namespace

    def cmd(self, script: str) -> str:
        return subprocess.run(["ip", "netns", "exec", self.name, "sh", "-c", script],
                              capture_output=True, text=True).stdout


def route_cases(out: Path) -> dict:
    """The era stack's route metrics on, then off again, on one pair of namespaces (as a
    kernel's later run of another stack finds them): one transfer and the routes each."""
    from experiments.inkernel.kernel_batch import apply_route_metrics
    from experiments.stacks import STACKS
    sender, receiver = pair("route-era", 0, "tcp", "10mbit")
    node = NamespaceNode(sender)
    seen = {}
    try:
        set_sysctls(sender, TCP_BASE)
        set_sysctls(receiver, RECEIVER)
        for case, stack in (("route-era", "freebsd-4.6"), ("route-linux", "linux")):
            apply_route_metrics(node, STACKS[stack].route_metrics())
            pcap = out / f"{case}.pcap"
            received, dropped = transfer(sender, receiver, "tcp", "bulk:100000", pcap)
            seen[case] = {"capture_dropped": dropped, "transport": "tcp", "stack": stack,
                          "received": received, "shape": "bulk:100000", "settings": {},
                          "routes": sh("ip", "-n", sender, "-4", "route", "show")}
    finally:
        delete(sender, receiver)
    return seen


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    seen = {case: run_case(case, out) for case in CASES}
    seen.update(route_cases(out))
    (out / "cases.json").write_text(json.dumps(seen, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
