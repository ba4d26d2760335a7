"""Inside the kernel under test (real or virtual time), for `make bench-virtual`: build `path`
once with one E1 link, measure its fidelity (ping RTT, TCP and SCTP goodput with bulk_probe),
then for each loss ratio run the plan's transfers several times, recording each one's duration
on the kernel's clock and on the host's wall clock, and write everything as JSON.

    python3 -m topology.fidelity.virtual_workload PLAN.json RESULT.json

Inside a time-travel kernel every clock is virtual, so wall time is stamped by the host: the
workload creates numbered marker files in the host directory TESTBED_WALL_MARKS and the host
notes when each appears (virtual_bench.WallMarks); the rows carry the markers' numbers."""
from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ..kernel import metadata
from ..net.path import SERVER_IP, PathTopology
from ..params import LinkShape, Queue
from . import bulk, probes

MARKS = os.environ.get("TESTBED_WALL_MARKS") or tempfile.mkdtemp(prefix="wall-marks-", dir="/tmp")
_marks = iter(range(1_000_000))


def mark() -> int:
    """A numbered marker for the host to stamp with its wall clock."""
    number = next(_marks)
    open(os.path.join(MARKS, f"{number:06d}"), "w").close()
    return number


def marks(**named: int) -> dict[str, str]:
    return {name: f"{number:06d}" for name, number in named.items()}


def fidelity(path: PathTopology, plan: dict[str, Any], shape: LinkShape) -> dict[str, Any]:
    probe = plan["fidelity"]
    result: dict[str, Any] = {"rtt": probes.ping(path.client, SERVER_IP, probe["ping_count"],
                                                 probe["ping_interval_s"])}
    for protocol in ("tcp", "sctp"):
        result[protocol] = bulk.goodput(path.client, path.server, SERVER_IP, protocol,
                                        probe["goodput_s"], probe["omit_s"], shape.rate_bps)
        print(f"  fidelity {protocol}: {result[protocol]['bps'] / 1e6:.4f} Mbit/s",
              file=sys.stderr, flush=True)
    return result


def transfers(path: PathTopology, plan: dict[str, Any], shape: LinkShape) -> list[dict[str, Any]]:
    rows = []
    for loss in plan["losses"]:
        path.set_both(shape.with_changes(loss=loss))
        for rep in range(plan["reps"]):
            for work in plan["workloads"]:
                before, kernel_before = mark(), time.monotonic()
                report = bulk.transfer(path.client, path.server, SERVER_IP, work["protocol"],
                                       work["size"], connections=work["connections"],
                                       mark=os.path.join(MARKS, f"transfer{before:06d}"))
                after, kernel_after = mark(), time.monotonic()
                rows.append({"loss": loss, "rep": rep, "workload": work["name"],
                             "transfer_s": report["total_s"],
                             "call_kernel_s": kernel_after - kernel_before,
                             "marks": [f"{before:06d}", f"{after:06d}"],
                             "transfer_marks": [f"transfer{before:06d}-start",
                                                f"transfer{before:06d}-end"]})
                print(f"  {plan['path']} loss {loss:g} rep {rep} {work['name']}: "
                      f"{report['total_s']:.3f} s", file=sys.stderr, flush=True)
    return rows


def main(plan_file: str, result_file: str) -> int:
    plan = json.loads(Path(plan_file).read_text())
    shape = LinkShape(plan["rate_bps"], plan["delay_s"], 0.0, Queue(plan["queue_bytes"], "bytes"))
    started_kernel = time.monotonic()
    result: dict[str, Any] = {"path": plan["path"]}
    start = mark()
    with PathTopology(shape) as path:
        topology_up = mark()
        result["fidelity"] = fidelity(path, plan, shape)
        fidelity_done = mark()
        result["transfers"] = transfers(path, plan, shape)
    result["marks"] = marks(start=start, topology_up=topology_up, fidelity_done=fidelity_done,
                            end=mark())
    result["job_kernel_s"] = time.monotonic() - started_kernel
    result["metadata"] = metadata.collect()
    with open(result_file, "w") as out:
        json.dump(result, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
