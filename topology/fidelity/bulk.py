"""Bulk transfers between two nodes with bulk_probe.py: goodput without iperf3 (it runs in
virtual time) and sequences of fresh connections (a stand-in for FTP's data connections)."""
from __future__ import annotations

import json
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from mininet.node import Node

from .probes import PYTHON, ProbeError, _stop

BULK_PORT = 5400


def transfer(client: Node, server: Node, address: str, protocol: str, size: int,
             connections: int = 1, omit_s: float = 0.0, interval_s: float = 1.0,
             port: int = BULK_PORT, timeout_s: float = 3600.0,
             mark: str | None = None) -> dict[str, Any]:
    """`connections` sequential downloads of `size` bytes each, server -> client; what the
    client counted (see bulk_probe.fetch; `mark` is its --mark)."""
    with tempfile.TemporaryDirectory(prefix="bulk-probe-") as scratch:
        ready = Path(scratch, "ready")
        sender = server.popen([PYTHON, "-m", "topology.fidelity.bulk_probe", "serve", protocol,
                               address, str(port), "--bytes", str(size),
                               "--connections", str(connections), "--ready-file", str(ready)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 60
            while not ready.exists():
                if time.monotonic() > deadline or sender.poll() is not None:
                    raise ProbeError("the bulk sender did not start: "
                                     + sender.communicate()[1].decode().strip())
                time.sleep(0.05)
            receiver = client.popen([PYTHON, "-m", "topology.fidelity.bulk_probe", "fetch",
                                     protocol, address, str(port), "--connections",
                                     str(connections), "--omit-s", str(omit_s),
                                     "--interval-s", str(interval_s),
                                     *(["--mark", mark] if mark else [])],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            try:
                out, err = receiver.communicate(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                raise ProbeError(f"the bulk transfer ran past {timeout_s:.0f} s") from None
            finally:
                _stop(receiver)
            if receiver.returncode != 0:
                raise ProbeError(f"the bulk receiver failed: {err.decode().strip()}")
            sender.wait(timeout=60)
        finally:
            _stop(sender)
    report = json.loads(out.decode())
    if report["bytes"] != size * connections:
        raise ProbeError(f"the bulk transfer moved {report['bytes']} bytes of "
                         f"{size * connections}")
    return report


def goodput(client: Node, server: Node, address: str, protocol: str, seconds: float,
            omit_s: float, rate_bps: float) -> dict[str, Any]:
    """Goodput of one bulk flow from server to client, as probes.goodput measures it with
    iperf3, but capped by bytes: enough for omit_s of slow start plus `seconds` at the rate."""
    size = int(rate_bps / 8 * (omit_s + seconds))
    report = transfer(client, server, address, protocol, size, omit_s=omit_s)
    steady = report["goodput"]
    if not steady:
        raise ProbeError("the bulk transfer ended before its steady state")
    return {"bps": steady["bps"], "bytes": steady["bytes"], "seconds": steady["seconds"],
            "intervals": len(report["interval_bytes"]), "tool": "bulk_probe",
            "total_s": report["total_s"]}
