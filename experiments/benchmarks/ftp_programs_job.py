"""Inside the pinned kernel: the measurements of `testbed bench ftp` (ftp_programs.py) on an
unshaped client-router-server path (PathTopology), every program started, waited for, run and
stopped through experiments/procedure.py on its node. Files live on the kernel's tmpfs; ftpc
discards what it receives (--out /dev/null) as iperf3 does. Each repetition runs iperf3
(bytes-capped, TCP and SCTP) and then every variant back to back, so a change of load on the
host hits both alike. Raw outputs go to WORK, read there by ftp_programs.py.

    python3 -m experiments.benchmarks.ftp_programs_job BIN_DIR WORK BULK_MB REPS"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from topology.net.path import SERVER_IP, PathTopology
from topology.params import LinkShape

from .. import procedure

VARIANTS = ("tcp", "sctp-naive", "sctp-ms", "sctp-ms-cp")
SMALL_FILES, SMALL_BYTES = 100, 10240
DATA = Path("/dev/shm/bench-ftp")   # the kernel's tmpfs
IPERF3_PORT = 5201
SYSCTLS = ("net.ipv4.tcp_congestion_control", "net.ipv4.tcp_sack", "net.core.wmem_default",
           "net.core.rmem_default", "net.sctp.rto_min", "net.sctp.rto_initial",
           "net.sctp.sctp_wmem", "net.sctp.sctp_rmem")
TIMEOUT_S = 300


def make_data(bulk_mb: int) -> None:
    (DATA / "small").mkdir(parents=True, exist_ok=True)
    with open(DATA / "bulk.bin", "wb") as out:
        for _ in range(bulk_mb):
            out.write(os.urandom(1 << 20))
    for i in range(SMALL_FILES):
        (DATA / "small" / f"f{i}.dat").write_bytes(os.urandom(SMALL_BYTES))


def iperf3(path: PathTopology, work: Path, proto: str, rep: int, bulk_mb: int) -> None:
    """One bytes-capped iperf3 transfer, client to server; its JSON report in WORK."""
    server = procedure.start(
        path.server.popen, ["iperf3", "-s", "-1", "-B", SERVER_IP, "-p", str(IPERF3_PORT),
                            "--forceflush"],
        work / f"iperf3-server-{proto}-{rep}.out",
        ready=f"Server listening on {IPERF3_PORT} (test #1)")
    try:
        procedure.run(path.client.popen,
                      ["iperf3", "-c", SERVER_IP, "-p", str(IPERF3_PORT),
                       *(["--sctp"] if proto == "sctp" else []), "-n", f"{bulk_mb}M", "-J"],
                      work / f"iperf3-{proto}-{rep}.json", work / f"iperf3-{proto}-{rep}.err",
                      TIMEOUT_S)
        procedure.wait_all({"iperf3 server": server}, 30)
    finally:
        procedure.stop(server)


def ftpc(path: PathTopology, bin_dir: Path, work: Path, name: str, variant: str,
         *commands: str) -> None:
    err = work / f"{name}.err"
    status = procedure.run(path.client.popen, procedure.ftp_client_argv(
        str(bin_dir / "ftpc"), variant, SERVER_IP, "/dev/null", 60, commands=commands),
        work / f"{name}.jsonl", err, TIMEOUT_S)
    if status != 0:
        with open(work / "errors.txt", "a") as errors:
            errors.write(f"{name}: exit {status}: {err.read_text(errors='replace').strip()}\n")


def main(bin_dir: str, work_dir: str, bulk_mb: str, reps: str) -> int:
    work, programs = Path(work_dir), Path(bin_dir)
    (work / "kernel-release").write_text(os.uname().release + "\n")
    sysctl = subprocess.run(["sysctl", *SYSCTLS], capture_output=True, text=True)
    (work / "sysctl.txt").write_text(sysctl.stdout + sysctl.stderr)
    make_data(int(bulk_mb))
    with PathTopology(LinkShape()) as path:
        ftpd = procedure.start(path.server.popen, procedure.ftp_server_argv(
            str(programs / "ftpd"), str(DATA), SERVER_IP, str(DATA.parent / "bench-ftpd.log"),
            TIMEOUT_S), work / "ftpd.out")
        try:
            for rep in range(int(reps)):
                for proto in ("tcp", "sctp"):
                    iperf3(path, work, proto, rep, int(bulk_mb))
                for variant in VARIANTS:
                    ftpc(path, programs, work, f"bulk-{variant}-{rep}", variant, "get",
                         "bulk.bin")
                    ftpc(path, programs, work, f"mget-{variant}-{rep}", variant, "mget",
                         "small/*.dat")
                print(f"repetition {rep + 1} of {reps} done", flush=True)
        finally:
            procedure.stop(ftpd)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
