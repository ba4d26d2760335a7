"""Inside the kernel under test: build `path` once, walk through the plan's cases by changing
the links in place, and write every raw measurement (and the kernel's metadata) as JSON.

    python3 -m topology.fidelity.measure PLAN.json RESULT.json"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

_started = time.monotonic()
from ..kernel import metadata  # noqa: E402
from ..net.path import SERVER_IP, PathTopology  # noqa: E402
from ..params import LinkShape  # noqa: E402
from . import bulk, probes, schedule_probe  # noqa: E402

_imported = time.monotonic()


def goodput_tool() -> str:
    """iperf3 in real time; in virtual time bulk_probe, which blocks where iperf3 polls.
    TESTBED_GOODPUT_PROBE=iperf3|bulk_probe chooses explicitly."""
    chosen = os.environ.get("TESTBED_GOODPUT_PROBE")
    if chosen:
        if chosen not in ("iperf3", "bulk_probe"):
            raise ValueError(f"TESTBED_GOODPUT_PROBE must be iperf3 or bulk_probe, not {chosen!r}")
        return chosen
    return "iperf3" if metadata.clock() == "real" else "bulk_probe"


def run_case(path: PathTopology, case: dict[str, Any]) -> dict[str, Any]:
    shape = LinkShape.from_dict(case["shape"])
    started = time.monotonic()
    path.set_both(shape)
    result: dict[str, Any] = {"reconfigure_s": time.monotonic() - started}
    client, server = path.client, path.server
    for probe in case["probes"]:
        kind = probe["kind"]
        if kind == "rtt":
            result["rtt"] = probes.ping(client, SERVER_IP, probe["count"], probe["interval_s"])
        elif kind in ("tcp", "sctp") and goodput_tool() == "bulk_probe" and shape.rate_bps:
            result[kind] = bulk.goodput(client, server, SERVER_IP, kind, probe["seconds"],
                                        probe["omit_s"], shape.rate_bps)
        elif kind in ("tcp", "sctp"):
            result[kind] = probes.goodput(client, server, SERVER_IP, kind, probe["seconds"],
                                          probe["omit_s"])
        elif kind == "schedule":
            result["schedule"] = schedule_probe.landing(path, "up", probe["at_s"],
                                                        shape.delay_s + probe["step_s"])
        elif kind == "loss":
            result["loss"] = probes.udp_loss(client, server, SERVER_IP, probe["count"],
                                             probe["payload"], probe["rate_pps"])
        else:
            raise ValueError(f"unknown probe {kind!r}")
        print(f"  {case['name']}: {kind} done", file=sys.stderr, flush=True)
    return result


def main(plan_file: str, result_file: str) -> int:
    plan = json.loads(Path(plan_file).read_text())
    cases = plan["cases"]
    first = LinkShape.from_dict(cases[0]["shape"])
    results: dict[str, Any] = {"import_s": _imported - _started, "cases": {}}
    path = PathTopology(first)
    path.start()
    try:
        results["build_s"] = path.timings_s["build"]
        for case in cases:
            results["cases"][case["name"]] = run_case(path, case)
    finally:
        path.stop()
    results["teardown_s"] = path.timings_s.get("teardown")
    results["metadata"] = metadata.collect()
    with open(result_file, "w") as out:
        json.dump(results, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
