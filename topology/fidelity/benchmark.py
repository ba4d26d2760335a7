"""`make fidelity`: build `path` for the E1 links inside the chosen kernel, measure RTT, goodput,
loss and the testbed's own timings, print a table and write results/fidelity.json."""
from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ..kernel import open_backend
from ..kernel.base import REPO_ROOT
from . import cases, targets

DEFAULT_OUTPUT = REPO_ROOT / "results" / "fidelity.json"


def run(kernel: str | None = None, output: Path = DEFAULT_OUTPUT,
        quick: bool = False) -> dict[str, Any]:
    backend = open_backend(kernel)
    planned = cases.cases(quick)
    with tempfile.TemporaryDirectory(prefix="fidelity-", dir="/tmp") as scratch:
        plan_file, raw_file = Path(scratch, "plan.json"), Path(scratch, "raw.json")
        plan_file.write_text(json.dumps({"cases": planned}))
        print(f"fidelity: {len(planned)} link settings on the {backend.name} backend "
              f"(about {_estimate_s(planned) / 60:.0f} min)", file=sys.stderr, flush=True)
        started = time.time()
        result = backend.run(["/usr/bin/python3", "-m", "topology.fidelity.measure",
                              str(plan_file), str(raw_file)], stream=True).check()
        raw = json.loads(raw_file.read_text())
    output.parent.mkdir(parents=True, exist_ok=True)
    # The measurements are kept even if judging them fails.
    output.with_suffix(".raw.json").write_text(json.dumps(raw, indent=2) + "\n")
    timestamps = raw["metadata"]["sysctls"].get("net.ipv4.tcp_timestamps", "1") != "0"
    items = []
    for case in planned:
        items += targets.link_items(case, raw["cases"][case["name"]], timestamps)
    if raw["metadata"].get("clock", "real") == "real":
        items += targets.timing_items(raw, result.timings_s.get("launch_to_job"))
    else:  # timings taken inside are on the virtual clock: only the host's wall time counts
        items.append(targets.item("all", "wall_s", "s", None, result.timings_s["total"], None,
                                  clock=raw["metadata"]["clock"]))
    report = {"items": items, "metadata": raw["metadata"], "quick": quick,
              "wall_s": time.time() - started, "cases": planned}
    output.write_text(json.dumps(report, indent=2) + "\n")
    print(format_table(items))
    print(f"\nwritten to {output}")
    return report


def _estimate_s(cases: list[dict[str, Any]]) -> float:
    total = 15.0
    for case in cases:
        for probe in case["probes"]:
            if probe["kind"] == "rtt":
                total += probe["count"] * probe["interval_s"] + 1
            elif probe["kind"] == "schedule":
                total += 2 * probe["at_s"] + 2
            elif probe["kind"] == "loss":
                total += probe["count"] / probe["rate_pps"] + 3
            else:
                total += probe["seconds"] + probe["omit_s"] + 4
    return total


def format_table(items: list[dict[str, Any]]) -> str:
    header = f"{'path':<16} {'metric':<22} {'configured':>12} {'measured':>12} {'error':>9}  target"
    rows = [header, "-" * len(header)]
    for it in items:
        configured = "-" if it["configured"] is None else f"{it['configured']:.4g}"
        error = "-" if it["error_rel"] is None else f"{100 * it['error_rel']:+.2f}%"
        verdict = {True: "met", False: "MISSED", None: ""}[it["within_target"]]
        rows.append(f"{it['path']:<16} {it['metric'] + ' [' + it['unit'] + ']':<22} "
                    f"{configured:>12} {it['measured']:>12.4g} {error:>9}  {verdict}")
    return "\n".join(rows)
