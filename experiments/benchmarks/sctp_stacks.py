"""`testbed bench sctp-stacks` (make bench-sctp-stacks): the kernel's SCTP (Linux 6.1) and
usrsctp (FreeBSD's SCTP in user space, inside UDP) on the same shaped paths, side by side in
one run. Prints a table and writes results/bench-sctp-stacks.json.

On E1's three paths (3 Mbit/s 1 ms, 1 Mbit/s 35 ms, 256 kbit/s 125 ms, each way; a 500 KB
router queue), at loss 0 and 3% each way, in virtual time (KERNEL=uml-virtual: the satellite
path's seconds cost no wall time): the bulk goodput of bulkflow on each stack and of usrsctp's
`tsctp` into bulkflow's usrsctp receiver (the reference sender), and the per-file time of
ftpc/ftpd's mget of small files by SCTP variant on each stack, TCP beside them
(sctp_stacks_job.py). Ratios are taken within a repetition, then their median. On the
project's kernel a fourth sender, the kernel's SCTP with `net.sctp.fast_rtx_strikes_again` 1
(a chunk whose fast retransmission is lost is fast-retransmitted again, as FreeBSD's SCTP
does), tells how much of the two stacks' difference at a loss that one behaviour makes.

The CPU cost per MB needs a clock that charges computation: a second job on the real-time
kernel (KERNEL=uml) moves the same bulk flows over an unshaped path and over E1's LAN path and
reads each program's own CPU (rusage) and the whole guest's busy time (/proc/stat), as the
pinned kernel accounts them (tick-sampled), per MB that arrived."""
from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from topology.fidelity.cases import E1_PATHS
from topology.kernel import open_backend
from topology.kernel.base import REPO_ROOT, BackendError

from ..stacks import BACKENDS_WITH_SWITCHES
from ..stats import interval
from ..workloads.base import WorkloadError, require_programs
from .sctp_stacks_job import KERNEL_SWITCH_SENDERS, SENDERS, TSCTP

OUTPUT = REPO_ROOT / "results" / "bench-sctp-stacks.json"
# Debian's tsctp is built with SCTP_DEBUG and switches all of it on (programs/tsctp.c calls
# usrsctp_sysctl_set_sctp_debug_on(SCTP_DEBUG_ALL)); no option turns it off, so its CPU is
# the reference sender's with the stack's trace, not usrsctp's alone.
TSCTP_TRACE = ("Debian's tsctp prints usrsctp's full debug trace (SCTP_DEBUG_ALL) to its "
               "output: its CPU per MB includes formatting and writing that trace")
LOSSES = (0.0, 0.03)
QUEUE_BYTES = 500_000
BULK_S = {"lan": 20.0, "coast": 30.0, "satellite": 60.0}
CPU_BULK_S = 10.0
CONFIDENCE = 0.90
JOB = "experiments.benchmarks.sctp_stacks_job"


class BenchError(RuntimeError):
    pass


def shaped_conditions(paths: list[str], scale: float) -> list[dict[str, Any]]:
    return [{"name": f"{name}-loss{loss:g}", "path": name, "rate_bps": E1_PATHS[name][0],
             "delay_s": E1_PATHS[name][1], "loss": loss, "bulk_s": BULK_S[name] * scale}
            for name in paths for loss in LOSSES]


def cpu_conditions(scale: float) -> list[dict[str, Any]]:
    rate, delay = E1_PATHS["lan"]
    return [{"name": "unshaped", "path": "unshaped", "rate_bps": None, "delay_s": 0.0,
             "loss": 0.0, "bulk_s": CPU_BULK_S * scale},
            {"name": "lan-loss0", "path": "lan", "rate_bps": rate, "delay_s": delay,
             "loss": 0.0, "bulk_s": CPU_BULK_S * scale}]


def events(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return out


def run_job(kernel: str, plan: dict[str, Any], work: Path) -> dict[str, Any]:
    plan_file, out_file = work / "plan.json", work / "out.json"
    plan_file.write_text(json.dumps(plan))
    started = time.time()
    print(f"bench sctp-stacks: {kernel} job started ({len(plan['conditions'])} conditions, "
          f"{plan['reps']} repetitions)", file=sys.stderr, flush=True)
    try:
        result = open_backend(kernel).run(
            ["/usr/bin/python3", "-m", JOB, str(plan_file), str(work), str(out_file)],
            timeout_s=6 * 3600, stream=True).check()
    except BackendError as error:
        raise BenchError(str(error)) from error
    job = json.loads(out_file.read_text())
    job.update(kernel=kernel, clock=result.clock, wall_s=round(time.time() - started, 1))
    return job


def read_bulk(work: Path, row: dict[str, Any]) -> dict[str, Any]:
    """The receiver's count: goodput over first byte -> last byte read."""
    got = events(work / f"{row['name']}.recv.jsonl")
    end = next((e for e in got if e["event"] == "end"), None)
    out = {k: row[k] for k in ("condition", "rep", "sender", "sender_rc", "receiver_rc",
                               "sender_cpu_s", "receiver_cpu_s", "guest_busy_s")}
    if end is None or row["receiver_rc"] != 0 or end["last_t"] <= end["first_t"]:
        failed = next((e for e in got if e["event"] == "error"), {})
        return {**out, "ok": False, "reason": failed.get("reason", "no end event")}
    accepted = next(e for e in got if e["event"] == "accepted")
    seconds = end["last_t"] - end["first_t"]
    megabytes = end["bytes"] / 1e6
    return {**out, "ok": True, "bytes": end["bytes"], "seconds": seconds,
            "goodput_mbit": end["bytes"] * 8 / seconds / 1e6,
            "cpu_ms_per_mb": 1e3 * (row["sender_cpu_s"] + row["receiver_cpu_s"]) / megabytes,
            "guest_busy_ms_per_mb": 1e3 * row["guest_busy_s"] / megabytes,
            "receiver_stack": accepted.get("stack"),
            "usrsctp_sysctls": accepted.get("usrsctp_sysctls")}


def read_mget(work: Path, row: dict[str, Any], files: int) -> dict[str, Any]:
    got = events(work / f"{row['name']}.jsonl")
    out = {k: row[k] for k in ("condition", "rep", "stack", "variant", "rc")}
    end = got[-1] if got else {}
    timed = next((e for e in got if e["event"] == "transfer_time"), None)
    if row["rc"] != 0 or end.get("status") != "ok" or timed is None:
        return {**out, "ok": False, "reason": end.get("reason") or end.get("status", "no events")}
    return {**out, "ok": True, "seconds": timed["seconds"],
            "per_file_s": timed["seconds"] / files}


def summary(values: list[float]) -> dict[str, Any]:
    if not values:
        return {"n": 0}
    ci = interval(values, CONFIDENCE)
    return {"n": len(values), "mean": ci.mean,
            "half_width": None if math.isinf(ci.half_width) or math.isnan(ci.half_width)
            else ci.half_width,
            "median": statistics.median(values), "min": min(values), "max": max(values)}


def paired(rows: list[dict[str, Any]], key: str, a: dict[str, str], b: dict[str, str],
           metric: str) -> dict[str, Any]:
    """Median over repetitions of a's metric over b's, within each repetition."""
    ratios = []
    for rep in sorted({r["rep"] for r in rows}):
        one = [r for r in rows if r["rep"] == rep and r["ok"]]
        x = [r[metric] for r in one if all(r[k] == v for k, v in a.items())]
        y = [r[metric] for r in one if all(r[k] == v for k, v in b.items())]
        if x and y and y[0]:
            ratios.append(x[0] / y[0])
    return {"median": statistics.median(ratios) if ratios else None, "runs": ratios, "of": key}


def senders_for(kernel: str) -> list[str]:
    """The bulk senders a kernel can run: the switch senders need the project's build."""
    return [*SENDERS, *(KERNEL_SWITCH_SENDERS if kernel in BACKENDS_WITH_SWITCHES else ())]


def tables(job: dict[str, Any], bulk: list[dict[str, Any]], mget: list[dict[str, Any]],
           cpu: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    senders = dict.fromkeys(r["sender"] for r in bulk)
    for condition in dict.fromkeys(r["condition"] for r in bulk):
        rows = [r for r in bulk if r["condition"] == condition]
        cell: dict[str, Any] = {"bulk_goodput_mbit": {}, "failed": []}
        for sender in senders:
            ok = [r for r in rows if r["sender"] == sender and r["ok"]]
            cell["bulk_goodput_mbit"][sender] = summary([r["goodput_mbit"] for r in ok])
            if cpu:
                cell.setdefault("cpu_ms_per_mb", {})[sender] = summary(
                    [r["cpu_ms_per_mb"] for r in ok])
                cell.setdefault("guest_busy_ms_per_mb", {})[sender] = summary(
                    [r["guest_busy_ms_per_mb"] for r in ok])
        cell["failed"] = [r for r in rows if not r["ok"]]
        cell["usrsctp_over_kernel_goodput"] = paired(
            rows, condition, {"sender": "bulkflow-usrsctp"}, {"sender": "bulkflow-kernel"},
            "goodput_mbit")
        cell["bulkflow_over_tsctp_goodput"] = paired(
            rows, condition, {"sender": "bulkflow-usrsctp"}, {"sender": "tsctp"},
            "goodput_mbit")
        for sender in KERNEL_SWITCH_SENDERS:
            if sender in senders:
                cell["switched_over_kernel_goodput"] = paired(
                    rows, condition, {"sender": sender}, {"sender": "bulkflow-kernel"},
                    "goodput_mbit")
                cell["usrsctp_over_switched_goodput"] = paired(
                    rows, condition, {"sender": "bulkflow-usrsctp"}, {"sender": sender},
                    "goodput_mbit")
        if cpu:
            cell["usrsctp_over_kernel_cpu_per_mb"] = paired(
                rows, condition, {"sender": "bulkflow-usrsctp"}, {"sender": "bulkflow-kernel"},
                "cpu_ms_per_mb")
        files = [r for r in mget if r["condition"] == condition]
        if files:
            cell["per_file_s"] = {
                f"{variant}/{stack}": summary([r["per_file_s"] for r in files if r["ok"]
                                               and r["variant"] == variant
                                               and r["stack"] == stack])
                for variant, stack in dict.fromkeys((r["variant"], r["stack"]) for r in files)}
            cell["per_file_usrsctp_over_kernel"] = {
                variant: paired(files, condition, {"variant": variant, "stack": "usrsctp"},
                                {"variant": variant, "stack": "kernel"}, "per_file_s")
                for variant in dict.fromkeys(r["variant"] for r in files if r["variant"] != "tcp")}
            cell["failed"] += [r for r in files if not r["ok"]]
        out[condition] = cell
    return out


def keep_pcaps(work: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    kept = [shutil.copy2(pcap, out / pcap.name) for pcap in sorted(work.glob("*.pcap"))]
    print(f"bench sctp-stacks: {len(kept)} pcaps (the server's interface) in {out}",
          file=sys.stderr, flush=True)


def measure(args: argparse.Namespace) -> dict[str, Any]:
    if not Path(TSCTP).exists():
        raise BenchError(f"{TSCTP} is required: apt-get install libusrsctp-examples")
    programs = require_programs("ftpd", "ftpc", "bulkflow")
    bin_dir = str(Path(programs["ftpd"]).parent)
    scale = 0.25 if args.quick else 1.0
    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-sctp-stacks-") as d:
        shaped_work, cpu_work = Path(d) / "shaped", Path(d) / "cpu"
        shaped_work.mkdir()
        cpu_work.mkdir()
        plan = {"bin_dir": bin_dir, "conditions": shaped_conditions(args.paths, scale),
                "reps": args.reps, "files": args.files, "file_bytes": 10240,
                "queue_bytes": QUEUE_BYTES, "mget_timeout_s": 3600,
                "pcaps": args.pcaps is not None, "senders": senders_for(args.virtual_kernel)}
        job = run_job(args.virtual_kernel, plan, shaped_work)
        if args.pcaps is not None:
            keep_pcaps(shaped_work, args.pcaps)
        bulk = [read_bulk(shaped_work, r) for r in job["bulk"]]
        mget = [read_mget(shaped_work, r, args.files) for r in job["mget"]]
        result["shaped"] = {"plan": plan, "kernel": job["kernel"], "clock": job["clock"],
                            "kernel_release": job["kernel_release"], "wall_s": job["wall_s"],
                            "conditions": tables(job, bulk, mget, cpu=False),
                            "bulk_runs": bulk, "mget_runs": mget}
        if not args.no_cpu:
            plan = {**plan, "conditions": cpu_conditions(scale), "files": 0,
                    "senders": senders_for(args.cpu_kernel)}
            job = run_job(args.cpu_kernel, plan, cpu_work)
            bulk = [read_bulk(cpu_work, r) for r in job["bulk"]]
            result["cpu"] = {"plan": plan, "kernel": job["kernel"], "clock": job["clock"],
                             "kernel_release": job["kernel_release"], "wall_s": job["wall_s"],
                             "conditions": tables(job, bulk, [], cpu=True), "bulk_runs": bulk}
    commit = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"],
                            capture_output=True, text=True).stdout.strip() or "none"
    result["meta"] = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "commit": commit,
        "repetitions": args.reps, "files": args.files, "file_bytes": 10240,
        "quick": args.quick, "message_bytes": 16384,
        "stacks": "kernel: Linux SCTP over IP, its defaults; usrsctp 0.9.5.0 (Debian "
                  "libusrsctp) over UDP port 9899 at both ends (RFC 6951), its defaults, "
                  "as bulkflow's receiver records them (usrsctp_sysctls)",
        "kernel_switch_senders": KERNEL_SWITCH_SENDERS,
        "bulk_metric": "receiver's bytes * 8 / (first byte -> last byte read), Mbit/s",
        "per_file_metric": "ftpc mget: 150 to NLST -> last 226, over the number of files",
        "cpu_metric": "sender's + receiver's CPU (utime + stime, the children's rusage) and the "
                      "guest's busy time (/proc/stat), ms per MB arrived, as the real-time "
                      "pinned kernel accounts them (tick-sampled)",
        "tsctp": TSCTP_TRACE}
    return result


def fmt(cell: dict[str, Any], digits: int = 3) -> str:
    if not cell.get("n"):
        return "failed"
    half = cell.get("half_width")
    return f"{cell['mean']:.{digits}f}" + (f" ±{half:.{digits}f}" if half is not None else "")


def ratio(cell: dict[str, Any]) -> str:
    return "-" if cell.get("median") is None else f"{cell['median']:.2f}"


def print_table(out: dict[str, Any]) -> None:
    shaped = out["shaped"]
    print(f"bulk goodput, Mbit/s (mean ±90%), {shaped['kernel']} ({shaped['clock']}), "
          f"{shaped['wall_s']:.0f} s of wall time")
    switched = next((s for s in KERNEL_SWITCH_SENDERS if s in shaped["plan"]["senders"]), None)
    print(f"  {'condition':18s} {'kernel':>16s} {'usrsctp':>16s} {'tsctp':>16s}"
          f" {'usr/kern':>9s} {'bulk/tsctp':>10s}"
          + (f" {'kernel+again':>16s} {'again/kern':>10s} {'usr/again':>9s}" if switched
             else ""))
    for name, cell in shaped["conditions"].items():
        g = cell["bulk_goodput_mbit"]
        print(f"  {name:18s} {fmt(g['bulkflow-kernel']):>16s} {fmt(g['bulkflow-usrsctp']):>16s}"
              f" {fmt(g['tsctp']):>16s} {ratio(cell['usrsctp_over_kernel_goodput']):>9s}"
              f" {ratio(cell['bulkflow_over_tsctp_goodput']):>10s}"
              + (f" {fmt(g[switched]):>16s} {ratio(cell['switched_over_kernel_goodput']):>10s}"
                 f" {ratio(cell['usrsctp_over_switched_goodput']):>9s}" if switched else ""))
    if switched:
        print(f"  kernel+again: the kernel's SCTP with {KERNEL_SWITCH_SENDERS[switched]}")
    print(f"per-file time, s (mget of {out['meta']['files']} x 10 KB; usrsctp over kernel)")
    for name, cell in shaped["conditions"].items():
        if "per_file_s" not in cell:
            continue
        parts = [f"{key} {fmt(value)}" for key, value in cell["per_file_s"].items()]
        ratios = [f"{v} {ratio(r)}" for v, r in cell["per_file_usrsctp_over_kernel"].items()]
        print(f"  {name:18s} " + ", ".join(parts))
        print(f"  {'':18s} usrsctp/kernel: " + ", ".join(ratios))
    if "cpu" in out:
        cpu = out["cpu"]
        print(f"CPU per MB arrived, ms (programs' own; whole guest), {cpu['kernel']} "
              f"({cpu['clock']}), {cpu['wall_s']:.0f} s of wall time")
        for name, cell in cpu["conditions"].items():
            for sender in cpu["plan"]["senders"]:
                print(f"  {name:10s} {sender:17s} {fmt(cell['bulk_goodput_mbit'][sender], 1):>14s}"
                      f" Mbit/s  {fmt(cell['cpu_ms_per_mb'][sender], 2):>14s}"
                      f"  {fmt(cell['guest_busy_ms_per_mb'][sender], 2):>14s}")
        print(f"  tsctp: {TSCTP_TRACE}")
    failed = [f for part in ("shaped", "cpu") if part in out
              for cell in out[part]["conditions"].values() for f in cell["failed"]]
    if failed:
        print(f"{len(failed)} runs failed (in the JSON under 'failed'): "
              + "; ".join(f"{f['condition']} {f.get('sender') or f.get('variant')} "
                          f"rep {f['rep']}: {f.get('reason')}" for f in failed[:5]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="testbed bench sctp-stacks", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="example:\n  testbed bench sctp-stacks --reps 3")
    parser.add_argument("--reps", type=int, default=3, help="repetitions (default 3)")
    parser.add_argument("--files", type=int, default=20,
                        help="10 KB files in each mget (default 20; 0: no per-file time)")
    parser.add_argument("--paths", type=lambda s: s.split(","), default=list(E1_PATHS),
                        help="E1 paths, comma-separated (default lan,coast,satellite)")
    parser.add_argument("--quick", action="store_true",
                        help="a quarter of each bulk transfer's seconds")
    parser.add_argument("--no-cpu", action="store_true", help="skip the real-time CPU job")
    parser.add_argument("--virtual-kernel", default="uml-virtual",
                        help="backend of the shaped job (default uml-virtual)")
    parser.add_argument("--cpu-kernel", default="uml",
                        help="backend of the CPU job (default uml, real time)")
    parser.add_argument("--out", type=Path, default=OUTPUT)
    parser.add_argument("--pcaps", type=Path, metavar="DIR",
                        help="keep each shaped run's pcap (the server's interface) in DIR")
    args = parser.parse_args(argv)
    unknown = [p for p in args.paths if p not in E1_PATHS]
    if unknown:
        parser.error(f"unknown path {unknown[0]!r}: choose among {', '.join(E1_PATHS)}")
    if args.reps < 1 or args.files < 0:
        parser.error("--reps must be at least 1 and --files at least 0")
    try:
        out = measure(args)
    except (BenchError, WorkloadError) as error:
        print(f"bench: {error}", file=sys.stderr)
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print_table(out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
