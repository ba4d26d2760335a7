#!/usr/bin/python3
"""ftpc/ftpd benchmark (make -C ftp-impl bench): prints a table and writes
results/bench-ftp.json.

Inside the pinned kernel, on an unshaped veth path: bulk throughput of
ftpc/ftpd per variant vs iperf3 (TCP and SCTP) moving the same bytes, and
the time of an mget of 100 files of 10 KB per variant (150 to NLST -> last
226).  On the host loopback: vsftpd vs ftpd with the same client (ftpc,
variant tcp)."""
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

IMPL = Path(__file__).resolve().parents[1]
ROOT = IMPL.parent
BIN = IMPL / "build"
PYTHON = "/usr/bin/python3"
REPS = int(os.environ.get("BENCH_REPS", "5"))
BULK_MB = int(os.environ.get("BENCH_BULK_MB", "64"))
VARIANTS = ["tcp", "sctp-naive", "sctp-ms", "sctp-ms-cp"]


def events(path):
    return [json.loads(l) for l in Path(path).read_text().splitlines() if l.startswith("{")]


def bulk_mbit(evs):
    """Goodput of one file: bytes / (RETR sent -> last byte arrived)."""
    start = next(e["t"] for e in evs if e["event"] == "command" and e["cmd"] == "RETR")
    last = next(e for e in evs if e["event"] == "file_last_byte")
    return last["bytes"] * 8 / (last["t"] - start) / 1e6


def mget_seconds(evs):
    assert evs[-1]["status"] == "ok", evs[-1]
    return next(e["seconds"] for e in evs if e["event"] == "transfer_time")


def summary(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "runs": values}


def in_kernel(work):
    env = {"BIN": str(BIN), "WORK": str(work), "BULK_MB": str(BULK_MB), "REPS": str(REPS)}
    cmd = [PYTHON, "-m", "topology", "run", "--timeout", "900", "--", "env",
           *[f"{k}={v}" for k, v in env.items()], "sh", str(IMPL / "bench" / "bench_job.sh")]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=1000)
    if r.returncode != 0:
        sys.exit(f"bench: kernel job failed ({r.returncode}): {r.stdout}{r.stderr}")
    errors = (work / "errors.txt").read_text() if (work / "errors.txt").exists() else ""
    if errors.strip():
        sys.exit(f"bench: ftpc failed inside the kernel:\n{errors}")
    res = {"kernel_release": (work / "kernel-release").read_text().strip(),
           "sysctl": dict(l.split(" = ", 1) for l in (work / "sysctl.txt").read_text().splitlines()
                          if " = " in l),
           "iperf3": {}, "ftp_bulk": {}, "mget_100x10KB": {}}
    for proto in ("tcp", "sctp"):
        vals = []
        for r_ in range(REPS):
            j = json.loads((work / f"iperf3-{proto}-{r_}.json").read_text())
            vals.append(j["end"]["sum_received"]["bits_per_second"] / 1e6)
        res["iperf3"][proto] = summary(vals)
    for v in VARIANTS:
        res["ftp_bulk"][v] = summary([bulk_mbit(events(work / f"bulk-{v}-{r_}.jsonl"))
                                      for r_ in range(REPS)])
        res["mget_100x10KB"][v] = summary([mget_seconds(events(work / f"mget-{v}-{r_}.jsonl"))
                                           for r_ in range(REPS)])
    for v in VARIANTS:
        ref = res["iperf3"]["tcp" if v == "tcp" else "sctp"]["runs"]
        # ratio within each repetition (same host load), then the median
        res["ftp_bulk"][v]["fraction_of_iperf3"] = statistics.median(
            f / i for f, i in zip(res["ftp_bulk"][v]["runs"], ref))
    return res


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_port(port, proc):
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if proc.poll() is not None:
                sys.exit("bench: server died at start")
            time.sleep(0.05)
    sys.exit("bench: server did not start")


def ftpc(port, *cmds):
    r = subprocess.run([str(BIN / "ftpc"), "--variant", "tcp", "--out", "/dev/null",
                        f"127.0.0.1:{port}", *cmds], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        sys.exit(f"bench: ftpc failed: {r.stderr}")
    return [json.loads(l) for l in r.stdout.splitlines()]


def host_side(tmp):
    root = tmp / "root"
    (root / "small").mkdir(parents=True)
    with open(root / "bulk.bin", "wb") as f:
        f.write(os.urandom(BULK_MB << 20))
    for i in range(100):
        (root / "small" / f"f{i}.dat").write_bytes(os.urandom(10240))
    servers = {}
    port = free_port()
    conf = tmp / "vsftpd.conf"
    empty = tmp / "empty"
    empty.mkdir()
    conf.write_text("\n".join([
        "listen=YES", "listen_ipv6=NO", "listen_address=127.0.0.1", f"listen_port={port}",
        "anonymous_enable=YES", "local_enable=NO", "write_enable=NO", f"anon_root={root}",
        "no_anon_password=YES", "run_as_launching_user=YES", "background=NO",
        "seccomp_sandbox=NO", f"secure_chroot_dir={empty}", "xferlog_enable=NO", ""]))
    servers["vsftpd"] = (subprocess.Popen(["/usr/sbin/vsftpd", str(conf)]), port)
    port2 = free_port()
    servers["ftpd"] = (subprocess.Popen([str(BIN / "ftpd"), "--root", str(root), "--tcp",
                                         f"127.0.0.1:{port2}", "--log", str(tmp / "ftpd.log")],
                                        stdout=subprocess.DEVNULL), port2)
    res = {}
    try:
        for name, (proc, p) in servers.items():
            wait_port(p, proc)
            bulk, mget = [], []
            for _ in range(REPS):
                bulk.append(bulk_mbit(ftpc(p, "get", "bulk.bin")))
                mget.append(mget_seconds(ftpc(p, "mget", "small/*.dat")))
            res[name] = {"bulk_mbit": summary(bulk), "mget_100x10KB_s": summary(mget)}
    finally:
        for proc, _ in servers.values():
            proc.terminate()
            proc.wait(10)
    return res


def tool_version(argv):
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=10)
        return (r.stdout or r.stderr).splitlines()[0].strip()
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "unknown"


def main():
    subprocess.run(["make", "-s", "-C", str(IMPL)], check=True)
    for tool in ("iperf3", "/usr/sbin/vsftpd"):
        if not shutil.which(tool):
            sys.exit(f"bench: {tool} is required")
    with tempfile.TemporaryDirectory(prefix="bench-ftp-") as d:
        tmp = Path(d)
        (tmp / "k").mkdir()
        kernel = in_kernel(tmp / "k")
        host = host_side(tmp / "h")
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"],
                            capture_output=True, text=True).stdout.strip() or "none"
    dirty = bool(subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "ftp-impl"],
                                capture_output=True, text=True).stdout.strip())
    out = {
        "meta": {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "commit": commit,
                 "ftp_impl_uncommitted_changes": dirty,
                 "host_kernel": platform.release(), "repetitions": REPS, "bulk_mb": BULK_MB,
                 "pinned_kernel": "User-Mode Linux via python3 -m topology run",
                 "iperf3": tool_version(["iperf3", "--version"]),
                 "vsftpd": "Debian /usr/sbin/vsftpd",
                 "path": "unshaped veth between two namespaces; files on tmpfs; "
                         "ftpc --out /dev/null; default socket options",
                 "bulk_metric": "bytes*8 / (RETR sent -> last byte arrived), Mbit/s; "
                                "iperf3: sum_received bits_per_second, same byte count",
                 "mget_metric": "150 reply to NLST -> last 226, seconds"},
        "pinned_kernel": kernel,
        "host_loopback_tcp": host,
    }
    dest = ROOT / "results" / "bench-ftp.json"
    dest.parent.mkdir(exist_ok=True)
    dest.write_text(json.dumps(out, indent=2) + "\n")
    print(f"{'pinned kernel, unshaped veth':40s} {'median':>10s}")
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
    print(f"wrote {dest}")


if __name__ == "__main__":
    main()
