"""`make bench-virtual-links`: virtual time (KERNEL=uml-virtual) against real time (KERNEL=uml)
on the three E1 paths. For each path one kernel of each kind builds `path` (500 KB router queue),
measures its fidelity (ping RTT, TCP and SCTP goodput with bulk_probe) and, for loss 0, 0.03
and 0.10, runs the same transfers several times (virtual_workload). Compared side by side:
transfer times (means, 90% Student-t intervals, which must overlap), fidelity, wall-time
speed-up; and the projected wall time of one repetition of the full E1 matrix in each mode.

The workload is kernel-level: bulk_probe downloads of E1 sizes (many 10 KiB files over fresh TCP
connections one after the other, 1 MiB over TCP, 200 KiB over SCTP). `make bench-virtual`
compares the FTP programs themselves, through the harness.

    testbed bench virtual-links [--reps N] [--quick] [--out FILE]

Scheduling on 2 cores: the real-time satellite job (the longest, nearly idle) runs in one lane;
the other real-time jobs, then the virtual ones one at a time, run in the other, so a virtual
kernel never shares the machine with another busy kernel."""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from topology.fidelity.cases import E1_PATHS
from topology.fidelity.targets import payload_per_frame
from topology.kernel import open_backend
from topology.kernel.base import REPO_ROOT
from topology.params import ETHERNET_FRAME_MAX

from ..stats import interval

DEFAULT_OUTPUT = REPO_ROOT / "results" / "bench-virtual-links.json"
LOSSES = (0.0, 0.03, 0.10)
E1_LOSSES = (0.0, 0.01, 0.03, 0.06, 0.10)
E1_SIZES = (10 * 1024, 50 * 1024, 200 * 1024, 500 * 1024, 1024 * 1024)
E1_FILES, E1_VARIANTS = 100, 4
QUEUE_BYTES = 500_000
CONFIDENCE = 0.90
SMALL_FILES = 20
WORKLOAD_NOTE = ("kernel-level workload: bulk_probe.py (Python) downloads server->client; "
                 "`make bench-virtual` measures the FTP programs")


def workloads(quick: bool) -> list[dict[str, Any]]:
    small = 5 if quick else SMALL_FILES
    big = 256 * 1024 if quick else 1024 * 1024
    return [
        {"name": f"tcp-{small}x10KiB", "protocol": "tcp", "size": 10 * 1024, "connections": small},
        {"name": f"tcp-{big // 1024}KiB", "protocol": "tcp", "size": big, "connections": 1},
        {"name": "sctp-200KiB", "protocol": "sctp", "size": 200 * 1024, "connections": 1},
    ]


def path_plan(name: str, reps: int, quick: bool) -> dict[str, Any]:
    rate, delay = E1_PATHS[name]
    goodput_s = {"lan": 8, "coast": 10, "satellite": 20}[name] * (0.4 if quick else 1.0)
    omit_s = {"lan": 2, "coast": 3, "satellite": 5}[name] * (0.4 if quick else 1.0)
    return {"path": name, "rate_bps": rate, "delay_s": delay, "queue_bytes": QUEUE_BYTES,
            "losses": list(LOSSES), "reps": reps, "workloads": workloads(quick),
            "fidelity": {"ping_count": 10 if quick else 20, "ping_interval_s": 0.2,
                         "goodput_s": goodput_s, "omit_s": omit_s}}


class WallMarks(threading.Thread):
    """Stamps the marker files a job creates in `directory` with the host's wall clock, within
    a few milliseconds (a scan every 2 ms)."""

    def __init__(self, directory: Path) -> None:
        super().__init__(daemon=True)
        self.directory, self.seen = directory, {}
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            now = time.time()
            for entry in os.scandir(self.directory):
                self.seen.setdefault(entry.name, now)
            self.done.wait(0.002)

    def stop(self) -> dict[str, float]:
        self.done.set()
        self.join()
        return self.seen


def run_job(kernel: str, plan: dict[str, Any], scratch: Path) -> dict[str, Any]:
    name = f"{plan['path']}-{kernel}"
    marks_dir, plan_file, out_file = scratch / f"marks-{name}", scratch / f"{name}.plan.json", \
        scratch / f"{name}.json"
    marks_dir.mkdir()
    plan_file.write_text(json.dumps(plan))
    watcher = WallMarks(marks_dir)
    watcher.start()
    started = time.time()
    print(f"bench-virtual: {name} started", file=sys.stderr, flush=True)
    try:
        result = open_backend(kernel).run(
            ["/usr/bin/python3", "-m", "topology.fidelity.virtual_workload", str(plan_file),
             str(out_file)], env={"TESTBED_WALL_MARKS": str(marks_dir)}).check()
    finally:
        stamps = watcher.stop()
    job = json.loads(out_file.read_text())
    job.update(kernel=kernel, clock=result.clock, kernel_release=result.kernel_release,
               wall_s=time.time() - started, timings_s=result.timings_s)
    job["job_wall_s"] = stamps[job["marks"]["end"]] - stamps[job["marks"]["start"]]
    job["topology_wall_s"] = stamps[job["marks"]["topology_up"]] - stamps[job["marks"]["start"]]
    for row in job["transfers"]:
        row["call_wall_s"] = stamps[row["marks"][1]] - stamps[row["marks"][0]]
        start, end = row["transfer_marks"]
        row["transfer_wall_s"] = stamps[end] - stamps[start]
    print(f"bench-virtual: {name} done in {job['wall_s']:.0f} s of wall time "
          f"({job['job_kernel_s']:.0f} s on its clock)", file=sys.stderr, flush=True)
    return job


def run_jobs(paths: list[str], reps: int, quick: bool) -> dict[str, dict[str, Any]]:
    plans = {name: path_plan(name, reps, quick) for name in paths}
    slow = "satellite" if "satellite" in paths else paths[-1]
    lanes = [[("uml", slow)],
             [("uml", p) for p in paths if p != slow] + [("uml-virtual", p) for p in paths]]
    jobs: dict[str, dict[str, Any]] = {}
    errors: list[BaseException] = []
    with tempfile.TemporaryDirectory(prefix="bench-virtual-", dir="/tmp") as scratch:
        def lane(work: list[tuple[str, str]]) -> None:
            for kernel, name in work:
                if errors:
                    return
                try:
                    jobs[f"{name}/{kernel}"] = run_job(kernel, plans[name], Path(scratch))
                except BaseException as error:  # reported below, after the other lane ends
                    errors.append(error)
                    return

        threads = [threading.Thread(target=lane, args=(work,)) for work in lanes]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    if errors:
        raise errors[0]
    return jobs


# -- statistics ------------------------------------------------------------------------------
def summary(values: list[float]) -> dict[str, Any]:
    ci = interval(values, CONFIDENCE)
    sd = ci.sd if math.isfinite(ci.sd) else 0.0
    return {"n": ci.n, "mean": ci.mean, "sd": sd,
            "ci90": [ci.mean - ci.half_width, ci.mean + ci.half_width], "values": values}


def overlap(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a["ci90"][0] <= b["ci90"][1] and b["ci90"][0] <= a["ci90"][1]


def compare(jobs: dict[str, dict[str, Any]], paths: list[str]) -> list[dict[str, Any]]:
    rows = []
    for name in paths:
        real, virtual = jobs[f"{name}/uml"], jobs[f"{name}/uml-virtual"]
        cells = [(loss, w["name"]) for loss in LOSSES for w in real["plan_workloads"]]
        for loss, work in cells:
            def pick(job: dict[str, Any], key: str, loss: float = loss,
                     work: str = work) -> list[float]:
                return [t[key] for t in job["transfers"]
                        if t["loss"] == loss and t["workload"] == work]

            r, v = summary(pick(real, "transfer_s")), summary(pick(virtual, "transfer_s"))
            r_wall = summary(pick(real, "call_wall_s"))
            v_wall = summary(pick(virtual, "call_wall_s"))
            r_tw = summary(pick(real, "transfer_wall_s"))
            v_tw = summary(pick(virtual, "transfer_wall_s"))
            rows.append({"path": name, "loss": loss, "workload": work,
                         "real_transfer_s": r, "virtual_transfer_s": v,
                         "ci90_overlap": overlap(r, v),
                         "real_wall_s": r_wall["mean"], "virtual_wall_s": v_wall["mean"],
                         "real_transfer_wall_s": r_tw["mean"],
                         "virtual_transfer_wall_s": v_tw["mean"],
                         "speedup_transfer": r_tw["mean"] / v_tw["mean"],
                         "speedup_with_process_starts": r_wall["mean"] / v_wall["mean"]})
    return rows


def fidelity_rows(jobs: dict[str, dict[str, Any]], paths: list[str]) -> list[dict[str, Any]]:
    rows = []
    for name in paths:
        rate, delay = E1_PATHS[name]
        sysctls = jobs[f"{name}/uml"]["metadata"]["sysctls"]
        timestamps = sysctls.get("net.ipv4.tcp_timestamps") != "0"
        per_frame = rate / ETHERNET_FRAME_MAX / 1e6
        expected = {"rtt_ms": 2e3 * delay,
                    "tcp_mbps": per_frame * payload_per_frame("tcp", timestamps),
                    "sctp_mbps": per_frame * payload_per_frame("sctp", timestamps)}
        row: dict[str, Any] = {"path": name, "expected": expected}
        for kernel, label in (("uml", "real"), ("uml-virtual", "virtual")):
            f = jobs[f"{name}/{kernel}"]["fidelity"]
            row[label] = {"rtt_ms": f["rtt"]["avg_ms"], "rtt_mdev_ms": f["rtt"]["mdev_ms"],
                          "tcp_mbps": f["tcp"]["bps"] / 1e6, "sctp_mbps": f["sctp"]["bps"] / 1e6}
        rows.append(row)
    return rows


def per_file_times(job: dict[str, Any], loss: float, key: str) -> tuple[float, float, int, int]:
    """Mean time per file of the small-file workload and of the big one at one loss ratio."""
    tcp = [w for w in job["plan_workloads"] if w["protocol"] == "tcp"]
    small, big = min(tcp, key=lambda w: w["size"]), max(tcp, key=lambda w: w["size"])
    def mean(work: dict[str, Any]) -> float:
        values = [t[key] for t in job["transfers"]
                  if t["loss"] == loss and t["workload"] == work["name"]]
        return sum(values) / len(values) / work["connections"]
    return mean(small), mean(big), small["size"], big["size"]


def projection(jobs: dict[str, dict[str, Any]], paths: list[str]) -> dict[str, Any]:
    """One repetition of E1 (3 paths x 5 loss x 5 sizes x 100 files x 4 variants), serially and
    on 2 workers: a file's time is linear in its size, fitted per path and loss ratio through
    the measured 10 KiB and 1 MiB per-file times (real time: the kernel clock; virtual: the
    host's wall time of the transfers); loss 0.01 and 0.06 interpolated linearly."""
    out: dict[str, Any] = {"assumptions": (
        "each of the 4 variants costs what a download of each file over a fresh TCP "
        "connection costs (sctp-ms reuses one association: cheaper); per file time linear in "
        "size through the measured 10 KiB and largest TCP sizes; loss 0.01 and 0.06 "
        "interpolated; boot and topology set-up once per path; 2 workers = one kernel per core")}
    for mode, kernel, key in (("real", "uml", "transfer_s"),
                              ("virtual", "uml-virtual", "transfer_wall_s")):
        total, by_path = 0.0, {}
        for name in paths:
            job = jobs[f"{name}/{kernel}"]
            fits = {}
            for loss in LOSSES:
                t_small, t_big, s_small, s_big = per_file_times(job, loss, key)
                slope = (t_big - t_small) / (s_big - s_small)
                fits[loss] = (t_small - slope * s_small, slope)
            seconds = job["topology_wall_s"]
            for loss in E1_LOSSES:
                lo = max(known for known in LOSSES if known <= loss)
                hi = min(known for known in LOSSES if known >= loss)
                w = 0.0 if hi == lo else (loss - lo) / (hi - lo)
                for size in E1_SIZES:
                    per_file = [(1 - w) * (fits[lo][0] + fits[lo][1] * size)
                                + w * (fits[hi][0] + fits[hi][1] * size)]
                    seconds += per_file[0] * E1_FILES * E1_VARIANTS
            by_path[name] = seconds
            total += seconds
        out[mode] = {"serial_h": total / 3600, "two_workers_h": total / 3600 / 2,
                     "by_path_h": {k: v / 3600 for k, v in by_path.items()}}
    out["speedup"] = out["real"]["serial_h"] / out["virtual"]["serial_h"]
    return out


# -- report ------------------------------------------------------------------------------------
def format_report(report: dict[str, Any]) -> str:
    lines = [f"bench-virtual: real time (uml) vs virtual time (uml-virtual, time-travel=inf-cpu); "
             f"{report['reps']} repetitions per point", f"workload: {WORKLOAD_NOTE}", ""]
    head = (f"{'path':<10}{'loss':>5}  {'workload':<14}{'real s (90% CI)':>26}"
            f"{'virtual s (90% CI)':>26}  {'overlap':<8}{'speed-up':>9}")
    lines += [head, "-" * len(head)]
    for row in report["transfers"]:
        r, v = row["real_transfer_s"], row["virtual_transfer_s"]
        fmt = lambda s: f"{s['mean']:.3f} [{s['ci90'][0]:.3f},{s['ci90'][1]:.3f}]"  # noqa: E731
        lines.append(f"{row['path']:<10}{row['loss']:>5.2f}  {row['workload']:<14}{fmt(r):>26}"
                     f"{fmt(v):>26}  {'yes' if row['ci90_overlap'] else 'NO':<8}"
                     f"{row['speedup_transfer']:>8.1f}x")
    lines += ["", "speed-up: host wall time of the transfers in real time / in virtual time", ""]
    head = f"{'path':<10}{'':<9}{'RTT ms':>10}{'TCP Mbit/s':>12}{'SCTP Mbit/s':>13}"
    lines += [head, "-" * len(head)]
    for row in report["fidelity"]:
        for label in ("expected", "real", "virtual"):
            f = row[label]
            lines.append(f"{row['path']:<10}{label:<9}{f['rtt_ms']:>10.3f}{f['tcp_mbps']:>12.4f}"
                         f"{f['sctp_mbps']:>13.4f}")
    lines += ["", f"{'path':<10}{'job wall real s':>16}{'job wall virtual s':>20}{'speed-up':>10}"]
    for name, job in report["jobs_summary"].items():
        lines.append(f"{name:<10}{job['real_wall_s']:>16.1f}{job['virtual_wall_s']:>20.1f}"
                     f"{job['speedup']:>9.1f}x")
    p = report["e1_projection"]
    lines += ["", "projected wall time of one E1 repetition (3 paths x 5 loss x 5 sizes x 100 files"
              " x 4 variants) on this machine:",
              f"  real time:    {p['real']['serial_h']:.1f} h serial, "
              f"{p['real']['two_workers_h']:.1f} h on 2 workers",
              f"  virtual time: {p['virtual']['serial_h']:.2f} h serial, "
              f"{p['virtual']['two_workers_h']:.2f} h on 2 workers  (speed-up {p['speedup']:.1f}x)",
              "  by path, virtual serial: " + ", ".join(
                  f"{k} {v:.2f} h" for k, v in p['virtual']['by_path_h'].items()),
              f"  assumptions: {p['assumptions']}"]
    verdict = all(row["ci90_overlap"] for row in report["transfers"])
    lines += ["", "every point's real and virtual 90% intervals overlap: "
              + ("yes" if verdict else "NO")]
    return "\n".join(lines)


def run(reps: int = 5, quick: bool = False, output: Path = DEFAULT_OUTPUT,
        paths: list[str] | None = None) -> dict[str, Any]:
    paths = paths or list(E1_PATHS)
    started = time.time()
    jobs = run_jobs(paths, reps, quick)
    for name in paths:
        for kernel in ("uml", "uml-virtual"):
            jobs[f"{name}/{kernel}"]["plan_workloads"] = workloads(quick)
    report = {
        "reps": reps, "quick": quick, "workload_note": WORKLOAD_NOTE, "confidence": CONFIDENCE,
        "losses": list(LOSSES), "queue_bytes": QUEUE_BYTES,
        "transfers": compare(jobs, paths),
        "fidelity": fidelity_rows(jobs, paths),
        "jobs_summary": {name: {
            "real_wall_s": jobs[f"{name}/uml"]["job_wall_s"],
            "virtual_wall_s": jobs[f"{name}/uml-virtual"]["job_wall_s"],
            "virtual_kernel_s": jobs[f"{name}/uml-virtual"]["job_kernel_s"],
            "speedup": jobs[f"{name}/uml"]["job_wall_s"]
            / jobs[f"{name}/uml-virtual"]["job_wall_s"]}
            for name in paths},
        "e1_projection": projection(jobs, paths),
        "all_overlap": None,
        "bench_wall_s": None,
        "metadata": {kernel: jobs[f"{paths[0]}/{kernel}"]["metadata"]
                     for kernel in ("uml", "uml-virtual")},
        "jobs": jobs,
    }
    report["all_overlap"] = all(row["ci90_overlap"] for row in report["transfers"])
    report["bench_wall_s"] = time.time() - started
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=2) + "\n")
    print(format_report(report))
    print(f"\nwritten to {output} ({report['bench_wall_s'] / 60:.0f} min)")
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="testbed bench virtual-links",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="example:\n  testbed bench virtual-links --reps 5")
    parser.add_argument("--reps", type=int, default=5, help="repetitions per point (default 5)")
    parser.add_argument("--quick", action="store_true", help="smaller transfers (for tests)")
    parser.add_argument("--paths", nargs="+", choices=list(E1_PATHS), default=None)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args(argv)
    if args.reps < 2:
        parser.error("--reps must be at least 2 (a confidence interval needs two)")
    run(args.reps, args.quick, args.out, args.paths)
    return 0


if __name__ == "__main__":
    sys.exit(main())
