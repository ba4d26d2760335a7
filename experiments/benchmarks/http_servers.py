"""`testbed bench http` (make bench-http): httpd against Debian's lighttpd and nginx on the host's
loopback under the same load, side by side in one run. Prints a table and writes
results/bench-http.json.

The load is h2load's HTTP/1.1 mode (`h2load --h1`): N requests over C connections with up to M
pipelined on each, for a small object (the study's 4 KB) and a large one (1 MB). Each server
serves the same folder with its defaults for static files, logging off where it has a switch;
each measurement is repeated and the median kept, and httpd's rate is given as a ratio to each
stock server's, measured in the same run. httpd writes in the study's 1 KB application writes
by default: `--write-size` shows what that costs against writes of 64 KB."""
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
LOADS = {"4K": (4096, 20_000, 8, 8), "1M": (1 << 20, 400, 4, 2)}   # size, requests, conns, depth
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


def start_server(kind: str, root: Path, work: Path, httpd: str, write_size: int
                 ) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    if kind == "httpd":
        argv = [httpd, "--root", str(root), "--listen", f"127.0.0.1:{port}", "--log",
                "/dev/null", "--max-clients", "64", "--max-requests", "1000000",
                "--write-size", str(write_size)]
    else:
        argv = stock_server_argv(kind, root, port, work / kind)
    with open(work / f"{kind}.stderr", "wb") as err:
        process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err)
    if not wait_listening(port):
        process.kill()
        raise BenchError(f"{kind} did not start: {(work / f'{kind}.stderr').read_text()[-400:]}")
    return process, port


def h2load(port: int, name: str, requests: int, connections: int, depth: int
           ) -> dict[str, float]:
    out = subprocess.run(["h2load", "--h1", "-n", str(requests), "-c", str(connections),
                          "-m", str(depth), f"http://127.0.0.1:{port}/{name}"],
                         capture_output=True, text=True, timeout=600)
    done, rate = DONE.search(out.stdout), REQUESTS.search(out.stdout)
    if out.returncode != 0 or not done or not rate or done.group(4) != str(requests):
        raise BenchError(f"h2load against port {port}: {out.stdout[-600:]}{out.stderr[-300:]}")
    unit = {"B": 1e-6, "KB": 1e-3, "MB": 1.0, "GB": 1e3}[rate.group(5)]
    return {"requests_per_s": float(rate.group(3)), "mbyte_per_s": float(rate.group(4)) * unit}


def measure(kinds: list[str], root: Path, work: Path, httpd: str, repeats: int,
            write_size: int) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for kind in kinds:
        process, port = start_server(kind, root, work, httpd, write_size)
        try:
            for load, (_, requests, connections, depth) in LOADS.items():
                samples = [h2load(port, f"object-{load}", requests, connections, depth)
                           for _ in range(repeats)]
                out.setdefault(kind, {})[load] = {
                    "requests_per_s": statistics.median(s["requests_per_s"] for s in samples),
                    "mbyte_per_s": statistics.median(s["mbyte_per_s"] for s in samples),
                    "samples": samples}
        finally:
            process.terminate()
            process.wait(10)
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="testbed bench http", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
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
        root = work / "www"
        root.mkdir()
        for load, (size, *_rest) in LOADS.items():
            (root / f"object-{load}").write_bytes(bytes(range(256)) * (size // 256))
        try:
            results = measure(["httpd", "lighttpd", "nginx"], root, work, httpd, args.repeats,
                              1024)
            results["httpd-64K-writes"] = measure(["httpd"], root, work, httpd, args.repeats,
                                                  65536)["httpd"]
        except BenchError as error:
            print(f"bench http: {error}")
            return 1
    ratios = {f"httpd/{other}": {load: results["httpd"][load]["requests_per_s"]
                                 / results[other][load]["requests_per_s"] for load in LOADS}
              for other in ("lighttpd", "nginx")}
    print(f"{'server':18} " + " ".join(f"{load + ' req/s':>12} {load + ' MB/s':>10}"
                                       for load in LOADS))
    for kind, loads in results.items():
        print(f"{kind:18} " + " ".join(f"{loads[load]['requests_per_s']:12.0f} "
                                       f"{loads[load]['mbyte_per_s']:10.1f}" for load in LOADS))
    for name, values in ratios.items():
        print(f"{name:18} " + " ".join(f"{values[load]:12.2f} {'':10}" for load in LOADS))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps({
        "benchmark": "http", "host": platform.node(), "cpus": len(os.sched_getaffinity(0)),
        "loads": {k: {"size": v[0], "requests": v[1], "connections": v[2], "pipelined": v[3]}
                  for k, v in LOADS.items()},
        "repeats": args.repeats, "servers": results, "ratios": ratios}, indent=1))
    print(f"written {args.output}")
    return 0
