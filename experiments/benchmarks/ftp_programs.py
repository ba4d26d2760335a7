"""`testbed bench ftp` (make bench-ftp, make -C ftp-impl bench): the FTP programs against
reference tools. Prints a table and writes results/bench-ftp.json.

Inside the pinned kernel, on an unshaped client-router-server path (ftp_programs_job.py):
bulk throughput of ftpc/ftpd per variant against iperf3 (TCP and SCTP) moving the same bytes,
and the time of an mget of 100 files of 10 KB per variant (150 to NLST -> last 226). On the
host loopback: vsftpd against ftpd with the same client (ftpc, variant tcp). Every program is
started, waited for, run and stopped through experiments/procedure.py."""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from topology.kernel import open_backend
from topology.kernel.base import REPO_ROOT

from .. import procedure
from ..workloads.base import WorkloadError, require_programs

PYTHON = "/usr/bin/python3"
OUTPUT = REPO_ROOT / "results" / "bench-ftp.json"
VARIANTS = ("tcp", "sctp-naive", "sctp-ms", "sctp-ms-cp")
KERNEL_TIMEOUT_S = 900
VSFTPD = "/usr/sbin/vsftpd"


class BenchError(RuntimeError):
    pass


def events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]


def bulk_mbit(evs: list[dict[str, Any]]) -> float:
    """Goodput of one file: bytes / (RETR sent -> last byte arrived)."""
    start = next(e["t"] for e in evs if e["event"] == "command" and e["cmd"] == "RETR")
    last = next(e for e in evs if e["event"] == "file_last_byte")
    return last["bytes"] * 8 / (last["t"] - start) / 1e6


def mget_seconds(evs: list[dict[str, Any]]) -> float:
    if evs[-1].get("status") != "ok":
        raise BenchError(f"an mget did not succeed: {evs[-1]}")
    return next(e["seconds"] for e in evs if e["event"] == "transfer_time")


def summary(values: list[float]) -> dict[str, Any]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "runs": values}


def in_kernel(programs: Path, work: Path, reps: int, bulk_mb: int) -> dict[str, Any]:
    result = open_backend().run(
        [PYTHON, "-m", "experiments.benchmarks.ftp_programs_job", str(programs), str(work),
         str(bulk_mb), str(reps)], timeout_s=KERNEL_TIMEOUT_S)
    if result.returncode != 0:
        raise BenchError(f"kernel job failed ({result.returncode}): "
                         f"{result.stdout[-2000:]}{result.stderr[-3000:]}")
    errors = (work / "errors.txt").read_text() if (work / "errors.txt").exists() else ""
    if errors.strip():
        raise BenchError(f"ftpc failed inside the kernel:\n{errors}")
    sysctl = (work / "sysctl.txt").read_text().splitlines()
    res: dict[str, Any] = {
        "kernel_release": (work / "kernel-release").read_text().strip(),
        "sysctl": dict(line.split(" = ", 1) for line in sysctl if " = " in line),
        "iperf3": {}, "ftp_bulk": {}, "mget_100x10KB": {}}
    for proto in ("tcp", "sctp"):
        values = []
        for rep in range(reps):
            report = json.loads((work / f"iperf3-{proto}-{rep}.json").read_text())
            values.append(report["end"]["sum_received"]["bits_per_second"] / 1e6)
        res["iperf3"][proto] = summary(values)
    for v in VARIANTS:
        res["ftp_bulk"][v] = summary([bulk_mbit(events(work / f"bulk-{v}-{rep}.jsonl"))
                                      for rep in range(reps)])
        res["mget_100x10KB"][v] = summary([mget_seconds(events(work / f"mget-{v}-{rep}.jsonl"))
                                           for rep in range(reps)])
    for v in VARIANTS:
        ref = res["iperf3"]["tcp" if v == "tcp" else "sctp"]["runs"]
        # ratio within each repetition (same host load), then the median
        res["ftp_bulk"][v]["fraction_of_iperf3"] = statistics.median(
            f / i for f, i in zip(res["ftp_bulk"][v]["runs"], ref, strict=True))
    return res


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen[bytes]) -> None:
    """vsftpd says nothing when it listens: its port answering is its `ready`."""
    deadline = time.monotonic() + procedure.STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if proc.poll() is not None:
                raise BenchError("vsftpd exited at start") from None
            time.sleep(procedure.POLL_S)
    raise BenchError("vsftpd did not start listening")


def ftpc(programs: Path, tmp: Path, port: int, *commands: str) -> list[dict[str, Any]]:
    out, err = tmp / "ftpc.jsonl", tmp / "ftpc.err"
    status = procedure.run(procedure.host_launch, procedure.ftp_client_argv(
        str(programs / "ftpc"), "tcp", "127.0.0.1", "/dev/null", 60, port=port,
        commands=commands), out, err, 300)
    if status != 0:
        raise BenchError(f"ftpc failed: {err.read_text(errors='replace')}")
    return events(out)


def host_side(programs: Path, tmp: Path, reps: int, bulk_mb: int) -> dict[str, Any]:
    root = tmp / "root"
    (root / "small").mkdir(parents=True)
    with open(root / "bulk.bin", "wb") as f:
        f.write(os.urandom(bulk_mb << 20))
    for i in range(100):
        (root / "small" / f"f{i}.dat").write_bytes(os.urandom(10240))
    port = free_port()
    conf, empty = tmp / "vsftpd.conf", tmp / "empty"
    empty.mkdir()
    conf.write_text("\n".join([
        "listen=YES", "listen_ipv6=NO", "listen_address=127.0.0.1", f"listen_port={port}",
        "anonymous_enable=YES", "local_enable=NO", "write_enable=NO", f"anon_root={root}",
        "no_anon_password=YES", "run_as_launching_user=YES", "background=NO",
        "seccomp_sandbox=NO", f"secure_chroot_dir={empty}", "xferlog_enable=NO", ""]))
    servers: dict[str, tuple[subprocess.Popen[bytes], int]] = {}
    res = {}
    try:
        vsftpd = procedure.launch_logged(procedure.host_launch, [VSFTPD, str(conf)],
                                         tmp / "vsftpd.out")
        servers["vsftpd"] = (vsftpd, port)
        wait_port(port, vsftpd)
        # TCP only: the host kernel may have no SCTP (ftp_server_argv serves both)
        port2 = free_port()
        servers["ftpd"] = (procedure.start(procedure.host_launch, [
            str(programs / "ftpd"), "--root", str(root), "--tcp", f"127.0.0.1:{port2}",
            "--log", str(tmp / "ftpd.log")], tmp / "ftpd.out"), port2)
        for name, (_, p) in servers.items():
            bulk, mget = [], []
            for _ in range(reps):
                bulk.append(bulk_mbit(ftpc(programs, tmp, p, "get", "bulk.bin")))
                mget.append(mget_seconds(ftpc(programs, tmp, p, "mget", "small/*.dat")))
            res[name] = {"bulk_mbit": summary(bulk), "mget_100x10KB_s": summary(mget)}
    finally:
        for proc, _ in servers.values():
            procedure.stop(proc)
    return res


def tool_version(argv: list[str]) -> str:
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=10)
        return (r.stdout or r.stderr).splitlines()[0].strip()
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "unknown"


def measure(reps: int, bulk_mb: int) -> dict[str, Any]:
    for tool in ("iperf3", VSFTPD):
        if not shutil.which(tool):
            raise BenchError(f"{tool} is required")
    programs = Path(require_programs("ftpd", "ftpc")["ftpd"]).parent
    with tempfile.TemporaryDirectory(prefix="bench-ftp-") as d:
        tmp = Path(d)
        (tmp / "k").mkdir()
        (tmp / "h").mkdir()
        kernel = in_kernel(programs, tmp / "k", reps, bulk_mb)
        host = host_side(programs, tmp / "h", reps, bulk_mb)
    commit = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"],
                            capture_output=True, text=True).stdout.strip() or "none"
    dirty = bool(subprocess.run(["git", "-C", str(REPO_ROOT), "status", "--porcelain",
                                 "ftp-impl"], capture_output=True, text=True).stdout.strip())
    return {
        "meta": {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "commit": commit,
                 "ftp_impl_uncommitted_changes": dirty,
                 "host_kernel": platform.release(), "repetitions": reps, "bulk_mb": bulk_mb,
                 "pinned_kernel": "User-Mode Linux via testbed kernel",
                 "iperf3": tool_version(["iperf3", "--version"]),
                 "vsftpd": f"Debian {VSFTPD}",
                 "path": "unshaped client-router-server path (topology PathTopology: veths "
                         "through a forwarding router namespace, offloads off); files on "
                         "tmpfs; ftpc --out /dev/null; default socket options",
                 "bulk_metric": "bytes*8 / (RETR sent -> last byte arrived), Mbit/s; "
                                "iperf3: sum_received bits_per_second, same byte count",
                 "mget_metric": "150 reply to NLST -> last 226, seconds"},
        "pinned_kernel": kernel,
        "host_loopback_tcp": host,
    }


def print_table(out: dict[str, Any]) -> None:
    kernel, host = out["pinned_kernel"], out["host_loopback_tcp"]
    print(f"{'pinned kernel, unshaped path':40s} {'median':>10s}")
    for proto, v in kernel["iperf3"].items():
        print(f"  iperf3 {proto:33s} {v['median']:10.1f} Mbit/s")
    for v, s in kernel["ftp_bulk"].items():
        print(f"  ftpc/ftpd bulk {v:25s} {s['median']:10.1f} Mbit/s "
              f"({100 * s['fraction_of_iperf3']:.0f}% of iperf3)")
    for v, s in kernel["mget_100x10KB"].items():
        print(f"  mget 100 x 10 KB {v:23s} {s['median']:10.3f} s")
    print("host loopback, TCP, client ftpc")
    for name, s in host.items():
        print(f"  {name:8s} bulk {s['bulk_mbit']['median']:10.1f} Mbit/s   "
              f"mget 100 x 10 KB {s['mget_100x10KB_s']['median']:.3f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="testbed bench ftp", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="example:\n  testbed bench ftp --reps 5")
    parser.add_argument("--reps", type=int, default=5, help="repetitions (default 5)")
    parser.add_argument("--bulk-mb", type=int, default=64,
                        help="MiB of the bulk file and of each iperf3 transfer (default 64)")
    parser.add_argument("--out", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    if args.reps < 1 or args.bulk_mb < 1:
        parser.error("--reps and --bulk-mb must be at least 1")
    try:
        out = measure(args.reps, args.bulk_mb)
    except (BenchError, WorkloadError, procedure.RunFailure) as error:
        print(f"bench: {error}", file=sys.stderr)
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    print_table(out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
