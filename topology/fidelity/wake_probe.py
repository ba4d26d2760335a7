"""Runs inside a kernel: on a client-router-server path with a pure delay (no rate limit), pings
across it at each given one-way delay and prints, as JSON, by how much the mean round trip
exceeds twice the delay (microseconds). Each round trip idles twice for the delay, so on a
real-time kernel the excess is two wake-ups' latency (host timer and signal path) plus the
forwarding work; the wall-cpu clock's calibration (topology/kernel/wake_latency.py) compares it
with the charged clock's.

    python3 -m topology.fidelity.wake_probe DELAY_S:COUNT ..."""
from __future__ import annotations

import json
import sys

from topology.net.path import SERVER_IP, PathTopology
from topology.params import LinkShape

from . import probes

# a round trip's idle gaps are the delay itself only if echoes do not overlap
SPACING_S = 0.02


def excess_us(path: PathTopology, delay_s: float, count: int) -> float:
    path.set_both(LinkShape(delay_s=delay_s))
    rtt = probes.ping(path.client, SERVER_IP, count, 2 * delay_s + SPACING_S)
    if rtt["received"] != count:
        raise probes.ProbeError(f"{count - rtt['received']} of {count} echoes lost at "
                                f"{delay_s * 1e3:g} ms")
    return (rtt["avg_ms"] - 2e3 * delay_s) * 1e3


def main(specs: list[str]) -> int:
    measured = {}
    with PathTopology(LinkShape()) as path:
        for spec in specs:
            delay, _, count = spec.partition(":")
            measured[delay] = excess_us(path, float(delay), int(count))
    json.dump(measured, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
