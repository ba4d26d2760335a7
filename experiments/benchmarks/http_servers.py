"""`testbed bench http` (make bench-http): httpd against Debian's lighttpd and nginx on the host's
loopback under the same load, side by side in one run. Prints a table and writes
results/bench-http.json.

The load generator is h2load's HTTP/1.1 mode (`h2load --h1`) for all three: requests per second
for a 4 KB object over keep-alive connections (one request at a time on each) and pipelined (8
in flight on each), and the bulk throughput of a 100 MB file. Memory per connection: the
proportional set size (PSS, /proc/<pid>/smaps_rollup) of the server's processes with 32 idle
keep-alive connections open, less without, per connection. Context switches per request: the
machine's (/proc/stat) over a load, the load generator's included. Each server serves the same
folder with its defaults for static files, logging off. All servers run at once and each
round runs every load against each of them in turn; the median over the rounds is kept, and
httpd's figures are given as ratios to each stock server's measured back to back in the same
round (their median and range over the rounds). httpd runs as a web server would (whole
answers, so TCP connections are served by its event loop; a small file and its head in one
send, a large one by sendfile from a child; no access log); a row with the study's 1 KB
application writes (a process per connection) shows what they cost."""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from topology.kernel.base import REPO_ROOT

from ..workloads.base import WorkloadError, require_programs

OUTPUT = REPO_ROOT / "results" / "bench-http.json"
# name: (object size, requests, connections, requests in flight per connection)
LOADS = {"4K-keepalive": (4096, 20_000, 8, 1), "4K-pipelined": (4096, 40_000, 8, 8),
         "100M": (100 << 20, 6, 1, 1)}
IDLE_CONNECTIONS = 32
REQUESTS = re.compile(r"finished in ([\d.]+)(m?s), ([\d.]+) req/s, ([\d.]+)([KMG]?B)/s")
DONE = re.compile(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) "
                  r"failed, (\d+) errored")


class BenchError(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_listening(port: int, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def stock_server_argv(kind: str, root: Path, port: int, work: Path) -> list[str]:
    """lighttpd or nginx in the foreground serving root on 127.0.0.1:port, configured in work."""
    work.mkdir(parents=True, exist_ok=True)
    if kind == "lighttpd":
        conf = work / "lighttpd.conf"
        conf.write_text(f'server.document-root = "{root}"\nserver.port = {port}\n'
                        f'server.bind = "127.0.0.1"\nserver.errorlog = "{work}/error.log"\n'
                        f'server.pid-file = "{work}/lighttpd.pid"\n'
                        'server.max-keep-alive-requests = 100000\n'
                        'mimetype.assign = (".html" => "text/html", "" => '
                        '"application/octet-stream")\n')
        return ["lighttpd", "-D", "-f", str(conf)]
    conf = work / "nginx.conf"
    temps = "".join(f"  {name}_temp_path {work}/{name};\n"
                    for name in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    conf.write_text(f"daemon off;\npid {work}/nginx.pid;\nerror_log {work}/error.log;\n"
                    "events {}\nhttp {\n  access_log off;\n  keepalive_requests 100000;\n"
                    f"{temps}  server {{ listen 127.0.0.1:{port}; root {root}; }}\n}}\n")
    return ["nginx", "-c", str(conf), "-p", str(work)]


def start_server(label: str, kind: str, root: Path, work: Path, httpd: str, write_size: int
                 ) -> tuple[subprocess.Popen[bytes], int]:
    """httpd as a web server is run: its writes as the transport takes them best (sendfile),
    pipelined answers corked, no line per request (the stock servers log none here);
    `write_size` > 0: the study's application writes instead."""
    port = free_port()
    if kind == "httpd":
        argv = [httpd, "--root", str(root), "--listen", f"127.0.0.1:{port}",
                "--max-clients", "64", "--max-requests", "1000000",
                "--write-size", str(write_size), "--cork", "1", "--access-log", "0"]
    else:
        argv = stock_server_argv(kind, root, port, work / kind)
    with open(work / f"{label}.stderr", "wb") as err:
        process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err)
    if not wait_listening(port):
        process.kill()
        raise BenchError(f"{label} did not start: {(work / f'{label}.stderr').read_text()[-400:]}")
    return process, port


def context_switches() -> int:
    """The machine's context switches since boot (/proc/stat ctxt)."""
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("ctxt "):
            return int(line.split()[1])
    return 0


def h2load(port: int, name: str, requests: int, connections: int, depth: int
           ) -> dict[str, float]:
    switches = context_switches()
    out = subprocess.run(["h2load", "--h1", "-n", str(requests), "-c", str(connections),
                          "-m", str(depth), f"http://127.0.0.1:{port}/{name}"],
                         capture_output=True, text=True, timeout=600)
    done, rate = DONE.search(out.stdout), REQUESTS.search(out.stdout)
    if out.returncode != 0 or not done or not rate or done.group(4) != str(requests):
        raise BenchError(f"h2load against port {port}: {out.stdout[-600:]}{out.stderr[-300:]}")
    unit = {"B": 1e-6, "KB": 1e-3, "MB": 1.0, "GB": 1e3}[rate.group(5)]
    return {"requests_per_s": float(rate.group(3)), "mbyte_per_s": float(rate.group(4)) * unit,
            "switches_per_request": (context_switches() - switches) / requests}


def tree_pss_kb(pid: int) -> int:
    """PSS of a process and its descendants, kB."""
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            rollup = Path(f"/proc/{current}/smaps_rollup").read_text()
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except OSError:
            continue
        total += next(int(line.split()[1]) for line in rollup.splitlines()
                      if line.startswith("Pss:"))
        todo += [int(c) for c in children]
    return total


def memory_per_connection(pid: int, port: int) -> float:
    """PSS added per idle keep-alive connection (each has made one request)."""
    time.sleep(0.5)
    before = tree_pss_kb(pid)
    held = []
    try:
        for _ in range(IDLE_CONNECTIONS):
            c = socket.create_connection(("127.0.0.1", port), timeout=10)
            c.sendall(b"HEAD /object-4096 HTTP/1.1\r\nHost: bench\r\n\r\n")
            c.recv(4096)
            held.append(c)
        time.sleep(0.5)
        return (tree_pss_kb(pid) - before) / IDLE_CONNECTIONS
    finally:
        for c in held:
            c.close()


def measure(servers: dict[str, tuple[str, int]], root: Path, work: Path, httpd: str,
            repeats: int) -> dict[str, dict[str, Any]]:
    """Every server started at once (label: (kind, httpd's write size)); each round runs each
    load against each server in turn, so that what the machine does meanwhile falls on all of
    them alike."""
    out: dict[str, dict[str, Any]] = {label: {} for label in servers}
    running: dict[str, tuple[subprocess.Popen[bytes], int]] = {}
    try:
        for label, (kind, write_size) in servers.items():
            running[label] = start_server(label, kind, root, work, httpd, write_size)
        for _ in range(repeats):
            for load, (size, requests, connections, depth) in LOADS.items():
                for label, (_, port) in running.items():
                    sample = h2load(port, f"object-{size}", requests, connections, depth)
                    out[label].setdefault(load, {"samples": []})["samples"].append(sample)
        for label, (process, port) in running.items():
            for load in LOADS:
                entry, samples = out[label][load], out[label][load]["samples"]
                for key in ("requests_per_s", "mbyte_per_s", "switches_per_request"):
                    entry[key] = statistics.median(sample[key] for sample in samples)
            out[label]["pss_kb_per_connection"] = memory_per_connection(process.pid, port)
    finally:
        for process, _ in running.values():
            process.terminate()
            process.wait(10)
    return out


def paired_ratios(results: dict[str, dict[str, Any]], other: str) -> dict[str, dict[str, Any]]:
    """httpd's rate over other's, round by round (the two measured back to back): the median
    and the range over the rounds."""
    ratios = {}
    for load in LOADS:
        rounds = [mine["requests_per_s"] / theirs["requests_per_s"]
                  for mine, theirs in zip(results["httpd"][load]["samples"],
                                          results[other][load]["samples"], strict=True)]
        ratios[load] = {"median": statistics.median(rounds), "min": min(rounds),
                        "max": max(rounds), "rounds": rounds}
    return ratios


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="testbed bench http", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--output", type=Path, default=OUTPUT)
    args = ap.parse_args(argv)
    missing = [tool for tool in ("h2load", "lighttpd", "nginx") if not shutil.which(tool)]
    if missing:
        print(f"bench http: {', '.join(missing)} missing: run `make setup-test`")
        return 2
    try:
        httpd = require_programs("httpd")["httpd"]
    except WorkloadError as error:
        print(f"bench http: {error}")
        return 2
    with tempfile.TemporaryDirectory(prefix="bench-http-") as tmp:
        work = Path(tmp)
        work.chmod(0o755)       # httpd started as root serves as nobody
        root = work / "www"
        root.mkdir()
        for size in {size for size, *_rest in LOADS.values()}:
            (root / f"object-{size}").write_bytes(bytes(range(256)) * (size // 256))
        try:
            results = measure({"httpd": ("httpd", 0), "lighttpd": ("lighttpd", 0),
                               "nginx": ("nginx", 0), "httpd-1K-writes": ("httpd", 1024)},
                              root, work, httpd, args.repeats)
        except BenchError as error:
            print(f"bench http: {error}")
            return 1
    ratios = {f"httpd/{other}": paired_ratios(results, other) for other in ("lighttpd", "nginx")}
    print(f"{'server':17} {'4K keep-alive':>14} {'4K pipelined':>14} {'100 MB':>10} "
          f"{'PSS/conn':>9} {'switches/req':>13}")
    print(f"{'':17} {'req/s':>14} {'req/s':>14} {'MB/s':>10} {'kB':>9} {'keep-alive':>13}")
    for kind, loads in results.items():
        print(f"{kind:17} {loads['4K-keepalive']['requests_per_s']:14.0f} "
              f"{loads['4K-pipelined']['requests_per_s']:14.0f} "
              f"{loads['100M']['mbyte_per_s']:10.0f} {loads['pss_kb_per_connection']:9.1f} "
              f"{loads['4K-keepalive']['switches_per_request']:13.2f}")
    for name, values in ratios.items():
        print(f"{name:17} " + " ".join(
            f"{values[load]['median']:{width}.2f}" for load, width in
            (("4K-keepalive", 14), ("4K-pipelined", 14), ("100M", 10))))
        print(f"{'  rounds min-max':17} " + " ".join(
            f"{values[load]['min']:.2f}-{values[load]['max']:.2f}".rjust(width) for load, width in
            (("4K-keepalive", 14), ("4K-pipelined", 14), ("100M", 10))))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps({
        "benchmark": "http", "host": platform.node(), "cpus": len(os.sched_getaffinity(0)),
        "loads": {k: {"size": v[0], "requests": v[1], "connections": v[2], "pipelined": v[3]}
                  for k, v in LOADS.items()},
        "repeats": args.repeats, "servers": results, "ratios": ratios}, indent=1))
    print(f"written {args.output}")
    return 0
