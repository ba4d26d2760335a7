"""`make bench-virtual`: the FTP programs in virtual time against real time, through the harness.

The experiment experiments/bench-virtual.toml (three E1 paths, loss 0, 0.03 and 0.10, tcp and
sctp-ms) runs in three clocks: real time, virtual time as shipped (KERNEL=uml-virtual,
time-travel=wall-cpu) and virtual time with free computing (time-travel=inf-cpu). Real time runs
the same kernel build as virtual time (KERNEL=uml-built), so the comparison changes the clock
alone; --real-kernel uml compares with Debian's prebuilt User-Mode Linux instead (another patch
level of 6.1: the kernel then differs too). Path by path,
it runs in batches: each batch runs every point a few times in each clock, from empty result
directories and freshly booted kernels, and the batches alternate the clocks, so slow drifts of
the host fall on every clock alike.

Why batches: a real-time kernel's transfer times shift from one boot to the next by more than
its runs vary within one boot (at loss 0 the shift is a few milliseconds, the spread within a
batch a fraction of that), so an interval from one batch's runs claims a precision real time
does not have: two real-time batches then "differ". The intervals compared here are built from
the batch means (Student t with batches - 1 degrees of freedom), which carry that shift; the
report also gives, for each point, a one-way ANOVA across the real-time batches (the size of the
shift) and the run-level intervals.

Compared side by side for every point: transfer times (means and 90% intervals, which should
overlap; Welch's test on the batch means), the links' ping RTT before the runs, and the
wall-time speed-up per path.

    testbed bench virtual-clock [--workers N] [--batches B] [--e1] [--real-kernel uml-built|uml]
                                [--out FILE]

--e1 also runs one repetition of the full E1 matrix (experiments/multistream.toml) in virtual
time and reports its measured wall time, with the real time the same runs would take: their
transfer times (virtual time is what real time would be) plus the real-time mode's measured
cost per run and per batch outside the transfers."""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import statistics
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from experiments import spec
from experiments.onhost import wall_profile
from experiments.onhost.coordinator import Harness, PointState
from experiments.onhost.ledger import RESULTS_ROOT, Ledger
from experiments.spec import Experiment
from topology.kernel import wake_latency
from topology.kernel.uml_virtual import virtual_kernel

from ..stats import anova_p, interval, welch_p

BENCH_EXPERIMENT = "bench-virtual"
DEFAULT_OUTPUT = RESULTS_ROOT / "bench-virtual.json"
WORK_ROOT = RESULTS_ROOT / "bench-virtual"
# label: (backend, time-travel mode)
CLOCKS = {"real": ("uml-built", None), "virtual": ("uml-virtual", "wall-cpu"),
          "inf-cpu": ("uml-virtual", "inf-cpu")}
COMPARED = ("virtual", "inf-cpu")  # each against real
REAL_KERNELS = ("uml-built", "uml")  # the project's build (the default), Debian's
DEFAULT_BATCHES = 3


@contextlib.contextmanager
def time_travel(mode: str | None) -> Iterator[None]:
    """The harness opens its backends in worker threads: the mode travels in the environment."""
    saved = os.environ.get("TESTBED_TIME_TRAVEL")
    if mode:
        os.environ["TESTBED_TIME_TRAVEL"] = mode
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("TESTBED_TIME_TRAVEL", None)
        else:
            os.environ["TESTBED_TIME_TRAVEL"] = saved


def fresh_ledger(name: str) -> Ledger:
    ledger = Ledger(WORK_ROOT / name)
    shutil.rmtree(ledger.root, ignore_errors=True)  # a benchmark times fresh runs only
    return ledger


def run_fresh(experiment: Experiment, clock: str, workers: int, name: str,
              real_kernel: str = CLOCKS["real"][0]) -> dict[str, Any]:
    kernel, mode = CLOCKS[clock]
    if clock == "real":
        kernel = real_kernel
    ledger = fresh_ledger(name)
    with time_travel(mode):
        harness = Harness(experiment, workers, kernel, ledger)
        started = time.monotonic()
        harness.run()
        wall = time.monotonic() - started
    meta = json.loads((ledger.root / "meta.json").read_text())
    return {"wall_s": wall, "states": harness.states(), "ledger": ledger, "meta": meta}


def batch_summary(batches: list[list[float]], confidence: float) -> dict[str, Any]:
    """The interval of the mean from the batch means; run-level figures beside it."""
    means = [statistics.fmean(b) for b in batches if b]
    runs = [x for b in batches for x in b]
    row: dict[str, Any] = {"n_runs": len(runs), "n_batches": len(means),
                           "mean": statistics.fmean(means) if means else None, "ci": None,
                           "batch_means": means, "sd_between_batches": None, "sd_runs": None,
                           "ci_runs": None, "values": batches}
    if len(means) > 1:
        by_batch = interval(means, confidence)
        row["ci"] = [by_batch.mean - by_batch.half_width, by_batch.mean + by_batch.half_width]
        row["sd_between_batches"] = by_batch.sd
    if len(runs) > 1:
        by_run = interval(runs, confidence)
        row["ci_runs"] = [by_run.mean - by_run.half_width, by_run.mean + by_run.half_width]
        row["sd_runs"] = by_run.sd
    return row


def overlap(a: list[float] | None, b: list[float] | None) -> bool:
    return bool(a and b and a[0] <= b[1] and b[0] <= a[1])


def compare_point(samples: dict[str, list[list[float]]], failures: dict[str, int],
                  point: dict[str, Any], confidence: float) -> dict[str, Any]:
    summaries = {clock: batch_summary(samples[clock], confidence) for clock in CLOCKS}
    real = summaries["real"]
    row: dict[str, Any] = {**point, **{f"{clock}_s": summaries[clock] for clock in CLOCKS},
                           "real_batch_effect_p": anova_p(samples["real"]),
                           "failed": failures}
    for clock in COMPARED:
        other = summaries[clock]
        row[clock] = {
            "ci_overlap": overlap(real["ci"], other["ci"]),
            "run_ci_overlap": overlap(real["ci_runs"], other["ci_runs"]),
            "welch_p_batch_means": welch_p(real["batch_means"], other["batch_means"]),
            "difference_pct": 100 * (other["mean"] - real["mean"]) / real["mean"]
            if real["mean"] and other["mean"] is not None else None}
    return row


def link_rtts(metas: list[dict[str, Any]]) -> dict[str, Any]:
    checks = [c for meta in metas for c in meta.get("link_checks", [])]
    return {"configured_ms": checks[0]["rtt_configured_ms"] if checks else None,
            "avg_ms": [c["avg_ms"] for c in checks], "min_ms": [c["min_ms"] for c in checks]}


def bench_paths(experiment: Experiment, workers: int, batches: int, real_kernel: str
                ) -> list[dict[str, Any]]:
    """Each path on its own (the speed-up depends on the link rate), in batches that alternate
    the clocks."""
    rows = []
    for path in experiment.network.entries:
        one = replace(experiment, network=replace(experiment.network, entries=(path,)))
        runs: dict[str, list[dict[str, Any]]] = {clock: [] for clock in CLOCKS}
        for batch in range(1, batches + 1):
            for clock in CLOCKS:
                runs[clock].append(run_fresh(one, clock, workers, f"{clock}-{path.name}-b{batch}",
                                             real_kernel))
        confidence = experiment.repetitions.confidence
        keys = list(runs["real"][0]["states"])
        points = []
        for key in keys:
            states = {clock: [r["states"][key] for r in runs[clock]] for clock in CLOCKS}
            first: PointState = states["real"][0]
            points.append(compare_point(
                {clock: [s.samples for s in states[clock]] for clock in CLOCKS},
                {clock: sum(s.failures for s in states[clock]) for clock in CLOCKS},
                {**first.point.as_row(), "point": key}, confidence))
        wall = {clock: sum(r["wall_s"] for r in runs[clock]) for clock in CLOCKS}
        rows.append({
            "path": path.name, "rate_bps": path.rate_bps, "delay_s": path.delay_s,
            "batches": batches, "wall_s": wall,
            "speedup": {clock: wall["real"] / wall[clock] for clock in COMPARED},
            "ping_rtt": {clock: link_rtts([r["meta"] for r in runs[clock]]) for clock in CLOCKS},
            "backend": {clock: runs[clock][0]["meta"]["backend"] for clock in CLOCKS},
            "clock": {clock: runs[clock][0]["meta"].get("clock") for clock in CLOCKS},
            "kernel": {clock: runs[clock][0]["meta"].get("kernel_release") for clock in CLOCKS},
            "wake_latency_ns": {clock: runs[clock][0]["meta"].get("wake_latency_ns")
                                for clock in CLOCKS},
            "real_overhead": overhead_per_run([r["ledger"] for r in runs["real"]]),
            "load_average": os.getloadavg(),
            "points": points})
        print(format_path(rows[-1]), flush=True)
    return rows


def overhead_per_run(ledgers: list[Ledger]) -> dict[str, float]:
    """Mean wall seconds per run spent outside the client session (links, sysctls, server and
    capture start, verification, stop), from the runs' own phase timings."""
    outside = [sum(v for k, v in record.get("phases_s", {}).items() if k != "client")
               for ledger in ledgers for record in ledger.finished().values()]
    return {"outside_client_s": sum(outside) / len(outside) if outside else math.nan,
            "runs": len(outside)}


def e1_one_repetition(workers: int, real_overhead_s: float, boot_s: float) -> dict[str, Any]:
    experiment = spec.load("multistream")
    once = replace(experiment, repetitions=replace(experiment.repetitions, min=1, max=1))
    result = run_fresh(once, "virtual", workers, "e1-virtual")
    records = result["ledger"].finished()
    # a run stopped at its limit would have taken at least that long in real time too
    sessions = [r.get("client_wall_s") or experiment.run_timeout_s for r in records.values()]
    failed = sorted(k for k, r in records.items() if r["status"] != "ok")
    boots = boot_s * len(experiment.network.entries)
    real_serial = sum(sessions) + len(records) * real_overhead_s + boots
    profile = wall_profile.profile(result["ledger"].work)
    return {"runs": len(records), "failed": failed, "clock": result["meta"].get("clock"),
            "wall_profile": profile.as_dict(),
            "wall_profile_table": list(wall_profile.table(profile)),
            "virtual_wall_s": result["wall_s"], "workers": workers,
            "sessions_virtual_s": sum(sessions),
            "real_projected_serial_s": real_serial,
            "real_projected_workers_s": real_serial / workers,
            "speedup": real_serial / workers / result["wall_s"]}


def format_interval(summary: dict[str, Any]) -> str:
    if summary["mean"] is None:
        return "no samples"
    if summary["ci"] is None:
        return f"{summary['mean']:.3f}"
    return f"{summary['mean']:.3f} [{summary['ci'][0]:.3f},{summary['ci'][1]:.3f}]"


def format_path(row: dict[str, Any]) -> str:
    wall = row["wall_s"]
    lines = [f"\n{row['path']} ({row['rate_bps'] / 1e6:g} Mbit/s, {1e3 * row['delay_s']:g} ms), "
             f"{row['batches']} batches: wall {wall['real']:.0f} s real-time, "
             f"{wall['virtual']:.0f} s virtual (speed-up {row['speedup']['virtual']:.1f}x), "
             f"{wall['inf-cpu']:.0f} s inf-cpu ({row['speedup']['inf-cpu']:.1f}x)",
             f"  ping RTT ms (configured {row['ping_rtt']['real']['configured_ms']}): " + ", ".join(
                 f"{clock} {row['ping_rtt'][clock]['avg_ms']}" for clock in CLOCKS),
             f"  {'loss':>5} {'variant':<8}{'real s (90% CI)':>28}{'virtual s (90% CI)':>28}"
             f"{'diff':>8}  overlap{'inf-cpu s':>12}{'diff':>8}  overlap  real batch ANOVA p"]
    for p in row["points"]:
        cells = []
        for clock in COMPARED:
            diff = p[clock]["difference_pct"]
            cells.append(("-" if diff is None else f"{diff:+.2f}%",
                          "yes" if p[clock]["ci_overlap"] else "NO"))
        anova = "-" if p["real_batch_effect_p"] is None else f"{p['real_batch_effect_p']:.3f}"
        lines.append(f"  {p['loss']:>5.2f} {p['variant']:<8}{format_interval(p['real_s']):>28}"
                     f"{format_interval(p['virtual_s']):>28}{cells[0][0]:>8}  {cells[0][1]:<7}"
                     f"{(p['inf-cpu_s']['mean'] or math.nan):>12.3f}{cells[1][0]:>8}  "
                     f"{cells[1][1]:<7}  {anova}")
    return "\n".join(lines)


def run(workers: int, batches: int, with_e1: bool, output: Path,
        real_kernel: str = CLOCKS["real"][0]) -> dict[str, Any]:
    started = time.monotonic()
    experiment = spec.load(BENCH_EXPERIMENT)
    reps = experiment.repetitions
    per_batch = max(2, math.ceil(reps.min / batches))
    batched = replace(experiment, repetitions=replace(reps, min=per_batch, max=per_batch))
    paths = bench_paths(batched, workers, batches, real_kernel)
    points = [p for row in paths for p in row["points"]]
    report: dict[str, Any] = {
        "experiment": str(experiment.file), "workers": workers, "batches": batches,
        "real_kernel": real_kernel,
        "runs_per_batch": per_batch, "confidence": reps.confidence,
        "interval": "Student t over the batch means (batches - 1 degrees of freedom)",
        "paths": paths, "points": len(points),
        **{f"{clock}_points_overlapping": sum(p[clock]["ci_overlap"] for p in points)
           for clock in COMPARED},
        "all_overlap": all(p["virtual"]["ci_overlap"] for p in points),
        "real_batch_effect_points": sum((p["real_batch_effect_p"] or 1) < 0.05 for p in points),
        # real-time runs suffer from a busy host (the kernels' processing waits for a core)
        "load_average_at_end": os.getloadavg(),
        "wake_latency_calibration": wake_latency.cached_record(virtual_kernel())}
    if with_e1:
        runs = sum(row["real_overhead"]["runs"] for row in paths)
        overhead = sum(row["real_overhead"]["outside_client_s"] * row["real_overhead"]["runs"]
                       for row in paths) / max(1, runs)
        report["e1"] = e1_one_repetition(workers, overhead, boot_s=15.0)
    report["bench_wall_s"] = time.monotonic() - started
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=1) + "\n")
    print(f"\n{len(points)} points, {batches} batches of {per_batch} runs per clock: the 90% "
          f"intervals of real and virtual time (wall-cpu) overlap on "
          f"{report['virtual_points_overlapping']}, of real and inf-cpu on "
          f"{report['inf-cpu_points_overlapping']}; real-time batches differ (ANOVA p < 0.05) on "
          f"{report['real_batch_effect_points']}")
    if with_e1:
        e1 = report["e1"]
        print(f"E1, one repetition ({e1['runs']} runs, {len(e1['failed'])} failed) on {workers} "
              f"workers: {e1['virtual_wall_s'] / 3600:.2f} h in virtual time; the same runs in "
              f"real time: {e1['real_projected_workers_s'] / 3600:.1f} h "
              f"(speed-up {e1['speedup']:.0f}x)")
        print("E1's wall-time profile (virtual clock):")
        for line in e1["wall_profile_table"]:
            print(f"  {line}")
    print(f"written to {output}")
    return report


EXAMPLE = "example:\n  testbed bench virtual-clock --e1 --workers 2"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="testbed bench virtual-clock",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=EXAMPLE)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batches", type=int, default=DEFAULT_BATCHES,
                        help="independent batches per clock (at least 2)")
    parser.add_argument("--e1", action="store_true",
                        help="also time one repetition of the full E1 matrix in virtual time")
    parser.add_argument("--real-kernel", choices=REAL_KERNELS, default=REAL_KERNELS[0],
                        help="the real-time kernel: the project's build (as virtual time "
                             "boots) or Debian's User-Mode Linux")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args(argv)
    if args.batches < 2:
        parser.error("--batches must be at least 2: the interval is built from batch means")
    run(args.workers, args.batches, args.e1, args.out, args.real_kernel)
    return 0


if __name__ == "__main__":
    sys.exit(main())
