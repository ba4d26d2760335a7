"""Runs INSIDE the pinned kernel (see test_kernel.py): bulkflow over the testbed's dumbbell and
beside iperf3, leaving everything in $WORK for the host side to judge.

    SHAPED_BIN=DIR COMPARE_BIN=DIR WORK=DIR /usr/bin/python3 tests/bulkflow/kernel_job.py

1. The dumbbell with one pair: bottleneck 2 Mbit/s, 20 ms one way, 1% loss, 30-packet queue;
   every interface's MTU 1540 so that a packet can carry 1488 bytes of payload. Flows of
   FLOW_S seconds one after another, each captured on the receiver's interface: TCP and SCTP
   with --maxseg (1500 / 1488) and SO_RCVBUF 65536, with and without --no-delayed-ack, and
   TCP with the route attribute `quickack 1` at the receiver.
2. One unshaped veth between two namespaces (real time): iperf3 and bulkflow in turn, TCP and
   SCTP (64 KiB messages, as iperf3 writes them), REPS times; then an SCTP receiver killed
   mid-flow.

Only the dumbbell and LinkShape come from the testbed; the rest is Mininet's node API and ip."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from topology.params import LinkShape

SHAPED_BIN = Path(os.environ["SHAPED_BIN"]).resolve()
COMPARE_BIN = Path(os.environ["COMPARE_BIN"]).resolve()
WORK = Path(os.environ["WORK"]).resolve()
FLOW_S = float(os.environ.get("FLOW_S", "10"))
COMPARE_S = float(os.environ.get("COMPARE_S", "3"))
REPS = int(os.environ.get("REPS", "3"))
MTU = 1540
PORT = 5001
SHM = Path("/dev/shm")
job: dict = {"flows": {}, "compare": {}, "timings_s": {}}

# name, protocol, receiver options, sender options (shaped part)
SHAPED_FLOWS = [
    ("tcp-nodelack", "tcp", ["--no-delayed-ack"], ["--maxseg", 1500]),
    ("sctp-nodelack", "sctp", ["--no-delayed-ack"], ["--maxseg", 1488]),
    ("tcp-delack", "tcp", [], ["--maxseg", 1500]),
    ("sctp-delack", "sctp", [], ["--maxseg", 1488]),
]


def dumbbell(access: LinkShape, bottleneck: LinkShape):
    """The testbed's dumbbell with one pair, as a context manager, at an MTU that carries
    1488-byte payloads (the rate limiter's burst sized for it)."""
    from topology.net import build

    return build({"kind": "dumbbell", "pairs": 1, "mtu": MTU,
                  "links": {"s1-up": access.to_dict(), "bottleneck-up": bottleneck.to_dict()}})


def all_nodes(start) -> list:
    """Every node reachable from start over links (hosts and routers, whatever their names)."""
    seen, todo = {start.name: start}, [start]
    while todo:
        node = todo.pop()
        for intf in node.intfList():
            link = getattr(intf, "link", None)
            if link is None:
                continue
            other = link.intf2 if link.intf1 is intf else link.intf1
            if other.node.name not in seen:
                seen[other.node.name] = other.node
                todo.append(other.node)
    return list(seen.values())


def sh(node, command: str) -> str:
    out = node.cmd(f"{command}; echo __rc=$?")
    text, _, rc = out.rpartition("__rc=")
    if rc.strip() != "0":
        raise RuntimeError(f"{node.name}: `{command}` failed: {text.strip()}")
    return text


def set_mtu(nodes, mtu: int) -> dict[str, int]:
    """MTU of every interface on the path (set, then read back)."""
    seen = {}
    for node in nodes:
        for intf in node.intfList():
            if intf.name != "lo":
                sh(node, f"ip link set dev {intf.name} mtu {mtu}")
                seen[f"{node.name}:{intf.name}"] = int(
                    sh(node, f"cat /sys/class/net/{intf.name}/mtu").strip())
    return seen


def wait_for(path: Path, text: str, timeout: float = 20) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text(errors="replace"):
            return True
        time.sleep(0.05)
    return False


class Capture:
    """tcpdump of whole packets on one interface, to a tmpfs, then moved to WORK."""

    def __init__(self, node, intf: str, name: str) -> None:
        self.tmp, self.name = SHM / f"{name}.pcap", name
        self.err = WORK / f"{name}.tcpdump"
        with open(self.err, "w") as err:
            self.proc = node.popen(["tcpdump", "-i", intf, "-s", "0", "-B", "16384",
                                    "--immediate-mode", "-w", str(self.tmp)],
                                   stdout=subprocess.DEVNULL, stderr=err)
        if not wait_for(self.err, "listening on"):
            raise RuntimeError(f"tcpdump did not start: {self.err.read_text()}")

    def stop(self) -> None:
        last = -1
        for _ in range(50):  # tcpdump lags under UML: stop once the file stops growing
            time.sleep(0.2)
            size = self.tmp.stat().st_size if self.tmp.exists() else 0
            if size == last:
                break
            last = size
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(30)
        shutil.move(str(self.tmp), str(WORK / f"{self.name}.pcap"))


def popen_logged(node, argv: list, name: str):
    with open(WORK / f"{name}.jsonl", "w") as out, open(WORK / f"{name}.err", "w") as err:
        return node.popen([str(a) for a in argv], stdout=out, stderr=err)


def run_pair(src, dst, name: str, bindir: Path, recv_args: list, send_args: list,
             timeout: float, kill_receiver_after: float | None = None) -> dict:
    recv = popen_logged(dst, [bindir / "bulkflow", "recv", *recv_args], f"{name}-recv")
    if not wait_for(WORK / f"{name}-recv.jsonl", '"event":"ready"'):
        recv.kill()
        raise RuntimeError(f"{name}: receiver not ready: {(WORK / f'{name}-recv.err').read_text()}")
    started = time.monotonic()
    send = popen_logged(src, [bindir / "bulkflow", "send", *send_args], f"{name}-send")
    try:
        if kill_receiver_after is not None:
            # counted from the association, not the sender's start: a sender slow to start on
            # a busy machine would otherwise find no receiver and fail with nothing sent
            wait_for(WORK / f"{name}-send.jsonl", '"event":"connected"')
            time.sleep(kill_receiver_after)
            recv.kill()
        send_rc = send.wait(timeout)
        recv_rc = recv.wait(30)
    finally:
        for p in (send, recv):
            if p.poll() is None:
                p.kill()
                p.wait()
    return {"send_rc": send_rc, "recv_rc": recv_rc, "wall_s": time.monotonic() - started}


def shaped_flow(net, name: str, proto: str, rargs: list, sargs: list) -> None:
    src, dst = net.node("s1"), net.node("d1")
    daddr = net.address("d1")
    cap = Capture(dst, dst.defaultIntf().name, name)
    try:
        job["flows"][name] = run_pair(
            src, dst, name, SHAPED_BIN,
            ["--proto", proto, "--listen", f"{daddr}:{PORT}", "--rcvbuf", 65536,
             "--stall-timeout", 30, *rargs],
            ["--proto", proto, "--to", f"{daddr}:{PORT}", "--duration", FLOW_S,
             "--stall-timeout", 30, "--drain-timeout", 60, *sargs],
            timeout=FLOW_S + 90)
    finally:
        cap.stop()


def shaped_part() -> None:
    started = time.monotonic()
    access = LinkShape.parse()
    bottleneck = LinkShape.parse("2Mbit", "20ms", "1%", "30p")
    with dumbbell(access, bottleneck) as net:
        job["timings_s"]["dumbbell_build"] = time.monotonic() - started
        src, dst = net.node("s1"), net.node("d1")
        job["addresses"] = {"s1": net.address("s1"), "d1": net.address("d1")}
        job["mtu"] = set_mtu(all_nodes(src), MTU)
        for name, proto, rargs, sargs in SHAPED_FLOWS:
            shaped_flow(net, name, proto, rargs, sargs)
        # Linux acknowledges every TCP segment only with the route attribute quickack.
        gateway = sh(dst, "ip route show default").split()[2]
        sh(dst, f"ip route change default via {gateway} quickack 1")
        job["route_quickack"] = sh(dst, "ip route show default").strip()
        shaped_flow(net, "tcp-routequickack", "tcp", [], ["--maxseg", 1500])
    job["timings_s"]["shaped"] = time.monotonic() - started


class Netns:
    """A namespace made with ip netns; popen runs a command inside it (as a Mininet node's)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def popen(self, argv, **kw) -> subprocess.Popen:
        return subprocess.Popen(["ip", "netns", "exec", self.name, *map(str, argv)], **kw)

    def run(self, argv, timeout=120) -> subprocess.CompletedProcess:
        return subprocess.run(["ip", "netns", "exec", self.name, *map(str, argv)],
                              capture_output=True, text=True, timeout=timeout)


def veth_pair() -> tuple[Netns, Netns]:
    commands = [["netns", "add", "bfc"], ["netns", "add", "bfs"],
                ["link", "add", "vc", "type", "veth", "peer", "name", "vs"],
                ["link", "set", "vc", "netns", "bfc"], ["link", "set", "vs", "netns", "bfs"],
                ["-n", "bfc", "addr", "add", "10.9.0.1/24", "dev", "vc"],
                ["-n", "bfs", "addr", "add", "10.9.0.2/24", "dev", "vs"],
                ["-n", "bfc", "link", "set", "lo", "up"], ["-n", "bfs", "link", "set", "lo", "up"],
                ["-n", "bfc", "link", "set", "vc", "up"], ["-n", "bfs", "link", "set", "vs", "up"]]
    for c in commands:
        subprocess.run(["ip", *c], check=True, capture_output=True)
    return Netns("bfc"), Netns("bfs")


def iperf3(cli: Netns, srv: Netns, proto: str, size: str, name: str) -> None:
    server = srv.popen(["iperf3", "-s", "-1", "-B", "10.9.0.2"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    flag = ["--sctp"] if proto == "sctp" else []
    r = cli.run(["iperf3", "-c", "10.9.0.2", *flag, "-n", size, "-J"])
    (WORK / f"{name}.json").write_text(r.stdout)
    server.wait(30)


def compare_part() -> None:
    started = time.monotonic()
    cli, srv = veth_pair()
    sizes = {"tcp": "1000M", "sctp": "200M"}
    # iperf3 writes 128 KiB (TCP) and 64 KiB messages (SCTP); bulkflow the same.
    write = {"tcp": [], "sctp": ["--write-size", 65536]}
    for rep in range(REPS):
        for proto in ("tcp", "sctp"):
            iperf3(cli, srv, proto, sizes[proto], f"iperf3-{proto}-{rep}")
            name = f"bulk-{proto}-{rep}"
            job["compare"][name] = run_pair(
                cli, srv, name, COMPARE_BIN,
                ["--proto", proto, "--listen", "10.9.0.2:5201"],
                ["--proto", proto, "--to", "10.9.0.2:5201", "--duration", COMPARE_S,
                 *write[proto]], timeout=COMPARE_S + 60)
    # An association whose receiver dies with data unread: its kernel sends ABORT.
    job["compare"]["sctp-abort"] = run_pair(
        cli, srv, "sctp-abort", SHAPED_BIN, ["--proto", "sctp", "--listen", "10.9.0.2:5202"],
        ["--proto", "sctp", "--to", "10.9.0.2:5202", "--duration", 10], timeout=60,
        kill_receiver_after=1.0)
    job["timings_s"]["compare"] = time.monotonic() - started


def main() -> int:
    job["kernel"] = os.uname().release
    job["sysctl"] = {k: subprocess.run(["sysctl", "-n", k], capture_output=True,
                                       text=True).stdout.strip()
                     for k in ("net.ipv4.tcp_congestion_control", "net.ipv4.tcp_sack",
                               "net.ipv4.tcp_adv_win_scale", "net.ipv4.tcp_rmem",
                               "net.sctp.sctp_rmem", "net.sctp.sctp_wmem")}
    status = 0
    try:
        shaped_part()
        compare_part()
    except Exception as exc:  # the host side fails the test with this
        job["exception"] = repr(exc)
        status = 1
    (WORK / "job.json").write_text(json.dumps(job, indent=1))
    return status


if __name__ == "__main__":
    sys.exit(main())
