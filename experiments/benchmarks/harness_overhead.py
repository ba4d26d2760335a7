"""`make bench-harness` (testbed bench harness): how much of a batch's wall time goes to the
harness rather than to
transfers, for the smoke experiment and for 100 runs of a one-second transfer, and the speed-up
of two workers over one (on the one-second runs, whose work is the same in both). Prints a
table and writes results/bench-harness.json.

Overhead share = 1 - (sum of the client sessions' wall times) / (workers x experiment wall
time): everything else is boot, topology, link changes, program and capture start and stop,
file checks and pcap analysis."""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from statistics import fmean
from typing import Any

from experiments import spec
from experiments.onhost import wall_profile
from experiments.onhost.coordinator import Harness
from experiments.onhost.ledger import Ledger
from topology.kernel.base import REPO_ROOT

OUTPUT = REPO_ROOT / "results" / "bench-harness.json"
ONE_SECOND = """
name = "one-second"
description = "100 runs of one file that takes about a second on the LAN path"
[network]
queue = "500KB"
[[network.paths]]
name = "lan"
rate = "3Mbit"
delay = "1ms"
[matrix]
loss = [0.0]
file_sizes = ["340K"]
files = 1
variants = ["tcp"]
[repetitions]
min = {runs}
max = {runs}
"""


def measure(experiment: spec.Experiment, workers: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-harness-") as scratch:
        ledger = Ledger.for_experiment(experiment.name, Path(scratch))
        started = time.monotonic()
        Harness(experiment, workers=workers, ledger=ledger).run()
        wall = time.monotonic() - started
        records = list(ledger.finished().values())
        profile = wall_profile.profile(ledger.work)
    sessions = sum(r.get("client_wall_s", 0.0) for r in records)
    phases: dict[str, list[float]] = {}
    for record in records:
        for phase, seconds in record.get("phases_s", {}).items():
            phases.setdefault(phase, []).append(seconds)
    return {"experiment": experiment.name, "workers": workers, "runs": len(records),
            "wall_s": wall, "client_sessions_s": sessions,
            "overhead_share": 1 - sessions / (workers * wall),
            "mean_phase_s": {k: fmean(v) for k, v in phases.items()},
            "wall_profile": profile.as_dict(), "_profile": profile}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="testbed bench harness", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="example:\n  testbed bench harness --runs 20")
    parser.add_argument("--runs", type=int, default=100, help="runs of the one-second transfer")
    parser.add_argument("--out", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    smoke = spec.load("smoke")
    with tempfile.TemporaryDirectory() as scratch:
        one_second_file = Path(scratch, "one-second.toml")
        one_second_file.write_text(ONE_SECOND.format(runs=args.runs))
        one_second = spec.load(str(one_second_file))
        results = [measure(smoke, 2), measure(one_second, 1), measure(one_second, 2)]
    speedup = results[1]["wall_s"] / results[2]["wall_s"]
    report = {"results": results, "parallel_speedup_2_over_1": speedup,
              "target_overhead_share": 0.10}
    profiles = [r.pop("_profile") for r in results]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"{'experiment':<12} {'workers':>7} {'runs':>5} {'wall s':>8} {'sessions s':>11} "
          f"{'overhead':>9}")
    for r in results:
        print(f"{r['experiment']:<12} {r['workers']:>7} {r['runs']:>5} {r['wall_s']:>8.1f} "
              f"{r['client_sessions_s']:>11.1f} {100 * r['overhead_share']:>8.1f}%")
    print(f"parallel speed-up, 2 workers over 1 ({args.runs} one-second runs): {speedup:.2f}x")
    for r in results:
        phases = ", ".join(f"{k} {v:.2f}" for k, v in r["mean_phase_s"].items())
        print(f"mean seconds per run ({r['experiment']}, {r['workers']} workers): {phases}")
    for r, profile in zip(results, profiles, strict=True):
        print(f"\nwall-time profile: {r['experiment']}, {r['workers']} workers")
        for line in wall_profile.table(profile):
            print(line)
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
