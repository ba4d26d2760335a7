"""`make bench-virtual`: the FTP programs in virtual time against real time, through the harness.

The experiment experiments/bench-virtual.toml (three E1 paths, loss 0, 0.03 and 0.10, tcp and
sctp-ms) runs once with KERNEL=uml and once with KERNEL=uml-virtual, path by path, from empty
result directories, so the wall times are those of fresh runs. Compared side by side for every
point: transfer times (means and 90% Student-t intervals, which should overlap; Welch's test),
the links' ping RTT before the runs, and the wall-time speed-up per path.

    python3 -m experiments.harness.virtual_bench [--workers N] [--e1] [--out FILE]

--e1 also runs one repetition of the full E1 matrix (experiments/multistream.toml) in virtual
time and reports its measured wall time, with the real time the same runs would take: their
transfer times (virtual time is what real time would be) plus the real-time mode's measured
cost per run and per batch outside the transfers."""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from scipy import stats as scipy_stats

from . import spec
from .coordinator import Harness, PointState
from .ledger import RESULTS_ROOT, Ledger
from .spec import Experiment, Repetitions
from .stats import interval

BENCH_EXPERIMENT = "bench-virtual"
DEFAULT_OUTPUT = RESULTS_ROOT / "bench-virtual.json"
WORK_ROOT = RESULTS_ROOT / "bench-virtual"
MODES = (("real", "uml"), ("virtual", "uml-virtual"))


def fresh_ledger(name: str) -> Ledger:
    ledger = Ledger(WORK_ROOT / name)
    shutil.rmtree(ledger.root, ignore_errors=True)  # a benchmark times fresh runs only
    return ledger


def run_fresh(experiment: Experiment, kernel: str, workers: int, name: str) -> dict[str, Any]:
    ledger = fresh_ledger(name)
    harness = Harness(experiment, workers, kernel, ledger)
    started = time.monotonic()
    harness.run()
    wall = time.monotonic() - started
    meta = json.loads((ledger.root / "meta.json").read_text())
    return {"wall_s": wall, "states": harness.states(), "ledger": ledger, "meta": meta}


def summary(samples: list[float], confidence: float) -> dict[str, Any]:
    ci = interval(samples, confidence)
    return {"n": ci.n, "mean": ci.mean, "sd": ci.sd,
            "ci": [ci.mean - ci.half_width, ci.mean + ci.half_width], "values": samples}


def welch_p(a: list[float], b: list[float]) -> float | None:
    if len(a) < 2 or len(b) < 2 or (max(a) == min(a) and max(b) == min(b)):
        return None
    return float(scipy_stats.ttest_ind(a, b, equal_var=False).pvalue)


def compare_point(real: PointState, virtual: PointState, confidence: float) -> dict[str, Any]:
    r, v = summary(real.samples, confidence), summary(virtual.samples, confidence)
    overlap = bool(r["n"] and v["n"] and r["ci"][0] <= v["ci"][1] and v["ci"][0] <= r["ci"][1])
    return {**real.point.as_row(), "point": real.point.key, "real_s": r, "virtual_s": v,
            "ci_overlap": overlap, "welch_p": welch_p(real.samples, virtual.samples),
            "difference_pct": 100 * (v["mean"] - r["mean"]) / r["mean"] if r["n"] and v["n"]
            else None,
            "failed": {"real": real.failures, "virtual": virtual.failures}}


def link_rtts(meta: dict[str, Any]) -> dict[str, Any]:
    checks = meta.get("link_checks", [])
    return {"configured_ms": checks[0]["rtt_configured_ms"] if checks else None,
            "avg_ms": [c["avg_ms"] for c in checks], "min_ms": [c["min_ms"] for c in checks]}


def bench_paths(experiment: Experiment, workers: int) -> list[dict[str, Any]]:
    """Each path on its own, real then virtual: the speed-up depends on the link rate."""
    rows = []
    for path in experiment.paths:
        one = replace(experiment, paths=(path,))
        runs = {label: run_fresh(one, kernel, workers, f"{label}-{path.name}")
                for label, kernel in MODES}
        confidence = experiment.repetitions.confidence
        points = [compare_point(runs["real"]["states"][key], runs["virtual"]["states"][key],
                                confidence) for key in runs["real"]["states"]]
        rows.append({
            "path": path.name, "rate_bps": path.rate_bps, "delay_s": path.delay_s,
            "wall_s": {label: runs[label]["wall_s"] for label, _ in MODES},
            "speedup": runs["real"]["wall_s"] / runs["virtual"]["wall_s"],
            "ping_rtt": {label: link_rtts(runs[label]["meta"]) for label, _ in MODES},
            "backend": {label: runs[label]["meta"]["backend"] for label, _ in MODES},
            "clock": {label: runs[label]["meta"].get("clock") for label, _ in MODES},
            "kernel": {label: runs[label]["meta"].get("kernel_release") for label, _ in MODES},
            "real_overhead": overhead_per_run(runs["real"]["ledger"]),
            "load_average": os.getloadavg(),
            "points": points})
        print(format_path(rows[-1]), flush=True)
    return rows


def overhead_per_run(ledger: Ledger) -> dict[str, float]:
    """Mean wall seconds per run spent outside the client session (links, sysctls, server and
    capture start, verification, stop), from the runs' own phase timings."""
    outside = [sum(v for k, v in record.get("phases_s", {}).items() if k != "client")
               for record in ledger.finished().values()]
    return {"outside_client_s": sum(outside) / len(outside) if outside else math.nan,
            "runs": len(outside)}


def e1_one_repetition(workers: int, real_overhead_s: float, boot_s: float) -> dict[str, Any]:
    experiment = spec.load("multistream")
    once = replace(experiment, repetitions=Repetitions(1, 1, experiment.repetitions.target_half_width,
                                                       experiment.repetitions.confidence))
    result = run_fresh(once, "uml-virtual", workers, "e1-virtual")
    records = result["ledger"].finished()
    # a run stopped at its limit would have taken at least that long in real time too
    sessions = [r.get("client_wall_s") or experiment.run_timeout_s for r in records.values()]
    failed = sorted(k for k, r in records.items() if r["status"] != "ok")
    real_serial = sum(sessions) + len(records) * real_overhead_s + boot_s * len(experiment.paths)
    return {"runs": len(records), "failed": failed,
            "virtual_wall_s": result["wall_s"], "workers": workers,
            "sessions_virtual_s": sum(sessions),
            "real_projected_serial_s": real_serial,
            "real_projected_workers_s": real_serial / workers,
            "speedup": real_serial / workers / result["wall_s"]}


def format_path(row: dict[str, Any]) -> str:
    lines = [f"\n{row['path']} ({row['rate_bps'] / 1e6:g} Mbit/s, {1e3 * row['delay_s']:g} ms): "
             f"wall {row['wall_s']['real']:.0f} s real-time vs {row['wall_s']['virtual']:.0f} s "
             f"virtual-time, speed-up {row['speedup']:.1f}x",
             f"  ping RTT ms (configured {row['ping_rtt']['real']['configured_ms']}): real "
             f"{row['ping_rtt']['real']['avg_ms']}, virtual {row['ping_rtt']['virtual']['avg_ms']}",
             f"  {'loss':>5} {'variant':<8}{'real s (90% CI)':>28}{'virtual s (90% CI)':>28}"
             f"{'diff':>8}{'Welch p':>9}  overlap"]
    for p in row["points"]:
        fmt = lambda s: (f"{s['mean']:.3f} [{s['ci'][0]:.3f},{s['ci'][1]:.3f}]"  # noqa: E731
                         if s["n"] else "no samples")
        welch = "-" if p["welch_p"] is None else f"{p['welch_p']:.3f}"
        diff = "-" if p["difference_pct"] is None else f"{p['difference_pct']:+.1f}%"
        lines.append(f"  {p['loss']:>5.2f} {p['variant']:<8}{fmt(p['real_s']):>28}"
                     f"{fmt(p['virtual_s']):>28}{diff:>8}{welch:>9}  "
                     f"{'yes' if p['ci_overlap'] else 'NO'}")
    return "\n".join(lines)


def run(workers: int, with_e1: bool, output: Path) -> dict[str, Any]:
    started = time.monotonic()
    experiment = spec.load(BENCH_EXPERIMENT)
    paths = bench_paths(experiment, workers)
    points = [p for row in paths for p in row["points"]]
    report: dict[str, Any] = {
        "experiment": str(experiment.file), "workers": workers,
        "confidence": experiment.repetitions.confidence, "paths": paths,
        "points_overlapping": sum(p["ci_overlap"] for p in points), "points": len(points),
        "all_overlap": all(p["ci_overlap"] for p in points),
        # real-time runs suffer from a busy host (the kernels' processing waits for a core)
        "load_average_at_end": os.getloadavg()}
    if with_e1:
        runs = sum(row["real_overhead"]["runs"] for row in paths)
        overhead = sum(row["real_overhead"]["outside_client_s"] * row["real_overhead"]["runs"]
                       for row in paths) / max(1, runs)
        report["e1"] = e1_one_repetition(workers, overhead, boot_s=15.0)
    report["bench_wall_s"] = time.monotonic() - started
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=1) + "\n")
    print(f"\n{report['points_overlapping']} of {report['points']} points: real and virtual "
          f"{experiment.repetitions.confidence:.0%} intervals overlap")
    if with_e1:
        e1 = report["e1"]
        print(f"E1, one repetition ({e1['runs']} runs, {len(e1['failed'])} failed) on {workers} "
              f"workers: {e1['virtual_wall_s'] / 3600:.2f} h in virtual time; the same runs in "
              f"real time: {e1['real_projected_workers_s'] / 3600:.1f} h "
              f"(speed-up {e1['speedup']:.0f}x)")
    print(f"written to {output}")
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m experiments.harness.virtual_bench",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--e1", action="store_true",
                        help="also time one repetition of the full E1 matrix in virtual time")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args(argv)
    run(args.workers, args.e1, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
