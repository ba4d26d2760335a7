"""Runs inside the kernel (virtual or real time): shapes `path` as asked, measures ping RTT,
where a scheduled delay change lands, and TCP and SCTP goodput with bulk_probe, writes what it
saw as JSON.

    python3 tests/virtual/inside_virtual.py OUT.json RATE_BPS DELAY_S"""
from __future__ import annotations

import json
import sys

from topology.fidelity import bulk, probes, schedule_probe
from topology.kernel import metadata
from topology.net.path import SERVER_IP, PathTopology
from topology.params import LinkShape, Queue


def main(out_file: str, rate_bps: str, delay_s: str) -> int:
    shape = LinkShape(float(rate_bps), float(delay_s), 0.0, Queue(500_000, "bytes"))
    out = {"metadata": metadata.collect()}
    with PathTopology(shape) as path:
        out["rtt"] = probes.ping(path.client, SERVER_IP, 20, 0.2)
        out["schedule_landing"] = schedule_probe.landing(path, "up", 1.0,
                                                         shape.delay_s + 0.030)
        for proto in ("tcp", "sctp"):
            out[proto] = bulk.goodput(path.client, path.server, SERVER_IP, proto, 10, 3,
                                      shape.rate_bps)
    with open(out_file, "w") as f:
        json.dump(out, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
