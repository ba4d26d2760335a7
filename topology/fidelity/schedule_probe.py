"""Does a scheduled link change land at its instant? A ping every few milliseconds crosses a
path whose up direction's delay grows at a planned instant; the echo requests sent before the
change come back with the old round trip and those after with the new one, so the change fell
between the last old and the first new request's sending. Compared with when the schedule wrote
the change (its own record) and when it was due."""
from __future__ import annotations

import re
from typing import Any

from topology.net.base import Topology
from topology.net.schedule import Change

from .probes import ProbeError

_ECHO = re.compile(r"^\[(\d+\.\d+)\] .*icmp_seq=(\d+) .*time=([\d.]+) ms", re.M)


def landing(net: Topology, link: str, at_s: float = 1.0, new_delay_s: float = 0.040,
            interval_s: float = 0.005, span_s: float = 2.0) -> dict[str, Any]:
    """Where the change of `link`'s delay to `new_delay_s` at `at_s` landed, in seconds from
    the schedule's start: `lag_s` (written after it was due), `landed_after_s` and
    `landed_before_s` (the bracketing requests' sending, from the pinged round trips), and
    `error_s`, how far outside that bracket the written instant lies (0 inside it)."""
    old = net.egress[link].shape
    if new_delay_s <= old.delay_s + 0.005:
        raise ProbeError("the new delay must exceed the old by more than 5 ms to be seen")
    if link not in net.probe_route():
        raise ProbeError(f"the probe's pings do not cross {link!r}")
    node, address = net.probe_pair()
    client = net.node(node)
    client.popen(["ping", "-c", "1", "-W", "5", address]).communicate(timeout=15)
    # the schedule first: starting its applier costs computing, which on a virtual clock
    # would show in the round trips of pings already under way
    running = net.schedule([Change(at_s, link, {"delay_s": new_delay_s})])
    pinging = client.popen(["ping", "-D", "-n", "-i", f"{interval_s}", "-c",
                            str(round(span_s / interval_s)), address])
    try:
        out, err = pinging.communicate(timeout=span_s + 30)
    finally:
        record = running.stop()
    if pinging.returncode != 0 or not record["applied"]:
        raise ProbeError(f"ping failed or the change was never made: {err.decode()} {record}")
    echoes = sorted((int(seq), float(t) - float(rtt) / 1000 - record["start_epoch"],
                     float(rtt) / 1000) for t, seq, rtt in _ECHO.findall(out.decode()))
    rest = sum(net.egress[d].shape.delay_s for d in net.probe_route() if d != link)
    threshold = (old.delay_s + new_delay_s) / 2 + rest
    before = [sent for _, sent, rtt in echoes if rtt < threshold]
    after = [sent for _, sent, rtt in echoes if rtt >= threshold]
    if not before or not after:
        raise ProbeError(f"the pings do not straddle the change: {len(before)} before, "
                         f"{len(after)} after")
    written = record["applied"][0]["applied_s"]
    after_s, before_s = max(s for s in before if s < min(after)), min(after)
    return {"due_s": at_s, "written_s": written, "lag_s": written - at_s,
            "landed_after_s": after_s, "landed_before_s": before_s,
            "error_s": max(0.0, after_s - written, written - before_s),
            "echoes": len(echoes), "out_of_order": sum(1 for s in before if s > min(after))}
