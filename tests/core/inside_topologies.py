"""Runs inside the pinned kernel: brings up path, dualpath and dumbbell, exercises them, and
writes what it observed as JSON for the host-side tests to judge.

    python3 tests/core/inside_topologies.py OUT.json"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path as FsPath
from typing import Any

from topology.fidelity import probes, schedule_probe
from topology.net import fades, shaping
from topology.net.dualpath import DualPath
from topology.net.dumbbell import Dumbbell
from topology.net.path import SERVER_IP, PathTopology
from topology.params import LinkShape, Queue

PYTHON = "/usr/bin/python3"
TRANSFER = str(FsPath(__file__).with_name("transfer.py"))
SCRATCH = FsPath(tempfile.mkdtemp(prefix="inside-topologies-"))


def transfer(client, server, proto: str, address: str, port: int, size: int,
             interval: float = 0.0, chunk: int = 16_384, during=None) -> dict[str, Any]:
    ready = SCRATCH / f"ready-{proto}-{port}"
    listener = server.popen([PYTHON, TRANSFER, "serve", proto, "0.0.0.0", str(port),
                             "--ready", str(ready)])
    deadline = time.monotonic() + 30
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    sender = client.popen([PYTHON, TRANSFER, "send", proto, address, str(port), "--bytes",
                           str(size), "--interval", str(interval), "--chunk", str(chunk)])
    if during:
        during()
    sent_out, sent_err = sender.communicate(timeout=180)
    got_out, got_err = listener.communicate(timeout=180)
    return {"sent": json.loads(sent_out or b"{}"), "received": json.loads(got_out or b"{}"),
            "errors": (sent_err + got_err).decode()}


def offloads(topology) -> dict[str, dict[str, str]]:
    wanted = ("tcp-segmentation-offload", "generic-segmentation-offload",
              "generic-receive-offload", "tx-sctp-segmentation")
    seen = {}
    for node in topology.net.hosts:
        for intf in node.intfList():
            if intf.name == "lo":
                continue
            text = node.cmd(f"ethtool -k {intf.name}")
            seen[intf.name] = {k: re.search(rf"{k}: (\w+)", text).group(1) for k in wanted}
    return seen


def qdiscs(node, dev: str) -> str:
    return node.cmd(f"tc qdisc show dev {dev}")


def exercise_path(out: dict[str, Any]) -> None:
    shape = LinkShape(1e6, 0.020, 0.0, Queue(50, "packets"))
    with PathTopology(shape) as path:
        client, server, router = path.client, path.server, path.node("router")
        out["path_build_s"] = path.timings_s["build"]
        out["offloads"] = offloads(path)
        out["client_qdisc"] = qdiscs(client, "client-eth0")
        out["server_qdisc"] = qdiscs(server, "server-eth0")
        out["router_qdisc_up"] = qdiscs(router, "router-eth1")
        out["tcp_transfer"] = transfer(client, server, "tcp", SERVER_IP, 6001, 300_000)
        out["sctp_transfer"] = transfer(client, server, "sctp", SERVER_IP, 6002, 300_000)
        out["rtt_20ms"] = probes.ping(client, SERVER_IP, 10, 0.2)
        out["tcp_goodput_1mbit"] = probes.goodput(client, server, SERVER_IP, "tcp", 5, 1)
        out["sctp_goodput_1mbit"] = probes.goodput(client, server, SERVER_IP, "sctp", 5, 1)

        path.set_both(shape.with_changes(delay_s=0.050, rate_bps=2e6))
        out["reconfigure_s"] = path.timings_s["reconfigure"]
        out["router_qdisc_after_change"] = qdiscs(router, "router-eth1")
        out["rtt_50ms"] = probes.ping(client, SERVER_IP, 10, 0.2)
        out["tcp_goodput_2mbit"] = probes.goodput(client, server, SERVER_IP, "tcp", 5, 1)

        path.set_both(shape.with_changes(delay_s=0.002, rate_bps=3e6, loss=0.2))
        out["loss_20pct"] = probes.udp_loss(client, server, SERVER_IP, 2000, 100, 1000.0)
        out["counters_tc"] = counters_by_tc(path)
        out["counters_netlink"] = path.queue_counters()
        path.set_link("up", shape.with_changes(delay_s=0.002, rate_bps=3e6, loss=0.2,
                                               loss_burst=4.0))
        out["router_qdisc_bursts"] = qdiscs(router, "router-eth1")
        out["loss_20pct_bursts_of_4"] = probes.udp_loss(client, server, SERVER_IP, 4000, 100,
                                                        1000.0)

        path.set_both(shape.with_changes(delay_s=0.002, rate_bps=3e6))
        running = path.schedule(fades.changes(["up"], 0.2, 0.020, 30.0, "inside"))
        try:
            out["loss_20pct_in_fades_of_20ms"] = probes.udp_loss(client, server, SERVER_IP,
                                                                 8000, 100, 1000.0)
        finally:
            out["fades_record"] = running.stop()

        path.set_both(shape.with_changes(delay_s=0.010, rate_bps=10e6))
        out["schedule_landing"] = schedule_probe.landing(path, "up", 1.0, 0.040)
        out["router_qdisc_after_schedule"] = qdiscs(router, "router-eth1")

        path.set_link("up", shape.with_changes(queue=Queue(20, "packets")))
        out["router_qdisc_20p"] = qdiscs(router, "router-eth1")
        path.set_link("up", shape.with_changes(queue=Queue(100_000, "bytes")))
        out["router_qdisc_100kb"] = qdiscs(router, "router-eth1")
        path.set_link("up", shape.with_changes(rate_bps=None))
        out["router_qdisc_unlimited"] = qdiscs(router, "router-eth1")


def counters_by_tc(topology) -> dict[str, dict[str, int]]:
    """The queue counters as `tc -s -j qdisc show` prints them: what the netlink reading
    (Topology.queue_counters) must agree with."""
    out = {}
    for direction, egress in topology.egress.items():
        qdiscs = json.loads(egress.node.cmd(f"tc -s -j qdisc show dev {egress.dev}"))
        out[direction] = shaping.counters(qdiscs)
    return out


def tx_bytes(router, dev: str) -> int:
    return int(router.cmd(f"cat /sys/class/net/{dev}/statistics/tx_bytes").strip())


def exercise_dualpath(out: dict[str, Any]) -> None:
    shape = LinkShape(2e6, 0.010, 0.0, Queue(100, "packets"))
    with DualPath(shape) as dual:
        client, server = dual.node("client"), dual.node("server")
        for node in (client, server):
            node.cmd("sysctl -q -w net.sctp.rto_initial=300 net.sctp.rto_min=100 "
                     "net.sctp.rto_max=1000 net.sctp.path_max_retrans=2 "
                     "net.sctp.hb_interval=500")
        out["dual_ping_path1"] = probes.ping(client, "10.1.2.1", 3, 0.2)
        out["dual_ping_path2"] = probes.ping(client, "10.2.2.1", 3, 0.2)
        router2 = dual.node("router2")
        before = tx_bytes(router2, "router2-eth1")

        def fail_path1() -> None:
            time.sleep(2.0)
            dual.path_down(1)
            out["path1_down_at"] = time.monotonic()

        out["failover_transfer"] = transfer(client, server, "sctp", "10.1.2.1", 6003, 60_000,
                                            interval=0.1, chunk=1000, during=fail_path1)
        out["path2_bytes_during_failover"] = tx_bytes(router2, "router2-eth1") - before
        lost = client.popen(["ping", "-c", "2", "-W", "1", "10.1.2.1"])
        lost.communicate(timeout=30)
        out["ping_path1_while_down_rc"] = lost.returncode
        dual.path_up(1)
        out["dual_ping_path1_after_up"] = probes.ping(client, "10.1.2.1", 3, 0.2)


def exercise_dumbbell(out: dict[str, Any]) -> None:
    access = LinkShape(10e6, 0.002, 0.0, Queue(100, "packets"))
    bottleneck = LinkShape(2e6, 0.030, 0.0, Queue(10, "packets"))
    with Dumbbell(2, access, bottleneck) as bell:
        out["dumbbell_nodes"] = sorted(h.name for h in bell.net.hosts)
        out["dumbbell_rtt"] = {
            f"s{i}->d{i}": probes.ping(bell.node(f"s{i}"), Dumbbell.address(f"d{i}"), 5, 0.2)
            for i in (1, 2)}
        out["dumbbell_egress"] = sorted(bell.egress)


def main(result_file: str) -> int:
    out: dict[str, Any] = {}
    for exercise in (exercise_path, exercise_dualpath, exercise_dumbbell):
        started = time.monotonic()
        try:
            exercise(out)
        except Exception as error:  # recorded, judged on the host
            out[f"{exercise.__name__}_error"] = repr(error)
        out[f"{exercise.__name__}_s"] = time.monotonic() - started
        print(f"{exercise.__name__} done", file=sys.stderr, flush=True)
    out["namespaces_left"] = subprocess.run(["ip", "netns", "list"], capture_output=True,
                                            text=True).stdout
    out["mnexec_left"] = subprocess.run(["pgrep", "-f", "mininet:"], capture_output=True,
                                        text=True).stdout
    FsPath(result_file).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
