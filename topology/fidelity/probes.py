"""Measurements taken on a running topology: RTT by ping, goodput by iperf3, one-way loss by a
counted UDP stream. Each returns plain numbers; nothing here knows what was configured."""
from __future__ import annotations

import json
import re
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from mininet.node import Node

PYTHON = "/usr/bin/python3"
IPERF_PORT = 5201
PROBE_PORT = 5300
# iperf3 over SCTP reads whole messages: one message per full packet (the 1452-byte DATA chunk
# payload of a 1500-byte packet) keeps the per-second counts fine-grained on slow links.
SCTP_MESSAGE = 1452

_RTT = re.compile(r"= ([\d.]+)/([\d.]+)/([\d.]+)/([\d.]+) ms")
_COUNTS = re.compile(r"(\d+) packets transmitted, (\d+) received")


class ProbeError(RuntimeError):
    pass


def ping(client: Node, address: str, count: int = 20, interval_s: float = 0.2) -> dict[str, float]:
    """RTT statistics in milliseconds; the first echo, which pays for ARP, is not counted."""
    client.popen(["ping", "-c", "1", "-W", "5", address]).communicate(timeout=15)
    out = _checked(client, ["ping", "-q", "-c", str(count), "-i", str(interval_s), address],
                   timeout=count * interval_s + 30)
    rtt, counts = _RTT.search(out), _COUNTS.search(out)
    if not rtt or not counts:
        raise ProbeError(f"cannot read ping's summary:\n{out}")
    return {"min_ms": float(rtt.group(1)), "avg_ms": float(rtt.group(2)),
            "max_ms": float(rtt.group(3)), "mdev_ms": float(rtt.group(4)),
            "sent": int(counts.group(1)), "received": int(counts.group(2))}


def goodput(client: Node, server: Node, address: str, protocol: str, seconds: float,
            omit_s: float) -> dict[str, Any]:
    """Goodput of one bulk flow from server to client (the direction of an FTP download),
    counted by the receiver over whole one-second intervals after slow start: iperf3's own
    end-of-test sums mix the two ends' clocks and under-count on long paths."""
    listener = server.popen(["iperf3", "-s", "-1", "-B", address, "-p", str(IPERF_PORT)])
    try:
        argv = ["iperf3", "-c", address, "-p", str(IPERF_PORT), "-J", "-R", "-i", "1",
                "-t", str(seconds), "-O", str(omit_s)]
        if protocol == "sctp":
            argv += ["--sctp", "-l", str(SCTP_MESSAGE)]
        report = _iperf_client(client, argv, timeout=seconds + omit_s + 60)
    finally:
        _stop(listener)
    steady = [i["sum"] for i in report["intervals"] if not i["sum"].get("omitted")]
    steady = [s for s in steady if s["seconds"] > 0.99][:-1] or steady
    received = sum(s["bytes"] for s in steady)
    duration = sum(s["seconds"] for s in steady)
    if not duration:
        raise ProbeError("iperf3 reported no steady-state interval")
    return {"bps": 8 * received / duration, "bytes": int(received), "seconds": duration,
            "intervals": len(steady)}


def _iperf_client(client: Node, argv: list[str], timeout: float) -> dict[str, Any]:
    """iperf3's client, retried while its server is still starting."""
    deadline = time.monotonic() + 20
    while True:
        proc = client.popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = proc.communicate(timeout=timeout)
        report = json.loads(out.decode() or "{}")
        error = report.get("error", "") or err.decode().strip()
        if proc.returncode == 0 and not error:
            return report
        if "connect" not in error or time.monotonic() > deadline:
            raise ProbeError(f"iperf3 failed: {error}")
        time.sleep(0.2)


def udp_loss(client: Node, server: Node, address: str, count: int, payload: int,
             rate_pps: float) -> dict[str, int]:
    """Datagrams sent client -> server, how many distinct ones arrived, in how many runs of
    consecutive numbers the others were lost, and how many the server's own stack dropped
    (which would be counted as link loss if not reported)."""
    drops_before = udp_receive_drops(server)
    with tempfile.TemporaryDirectory(prefix="udp-probe-") as scratch:
        ready = Path(scratch, "ready")
        receiver = server.popen([PYTHON, "-m", "topology.fidelity.udp_probe", "receive",
                                 address, str(PROBE_PORT), "--count", str(count),
                                 "--ready-file", str(ready)])
        try:
            deadline = time.monotonic() + 30
            while not ready.exists():
                if time.monotonic() > deadline or receiver.poll() is not None:
                    raise ProbeError("the UDP receiver did not start")
                time.sleep(0.05)
            sent = json.loads(_checked(client, [
                PYTHON, "-m", "topology.fidelity.udp_probe", "send", address, str(PROBE_PORT),
                "--count", str(count), "--payload", str(payload), "--rate-pps", str(rate_pps)],
                timeout=count / rate_pps + 60))
            out, err = receiver.communicate(timeout=120)
        finally:
            _stop(receiver)
    if receiver.returncode != 0:
        raise ProbeError(f"the UDP receiver failed: {err.decode().strip()}")
    got = json.loads(out.decode())
    return {"sent": int(sent["sent"]), "received": int(got["received"]),
            "loss_runs": int(got["loss_runs"]),
            "receiver_drops": udp_receive_drops(server) - drops_before}


def udp_receive_drops(node: Node) -> int:
    """UDP datagrams the node's stack dropped for want of buffer space (RcvbufErrors)."""
    lines = [line.split() for line in node.cmd("cat /proc/net/snmp").splitlines()
             if line.startswith("Udp:")]
    header, values = lines[0], lines[1]
    return int(values[header.index("RcvbufErrors")])


def _checked(node: Node, argv: list[str], timeout: float) -> str:
    proc = node.popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop(proc)
        raise ProbeError(f"{argv[0]} ran past {timeout:.0f} s") from None
    if proc.returncode != 0:
        raise ProbeError(f"{' '.join(argv)} failed: {err.decode().strip() or out.decode()}")
    return out.decode()


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
