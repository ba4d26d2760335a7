"""Inside the kernel under test: run one batch of FTP sessions on one `path`, changing the links
in place between runs. For each run it starts a fresh server, a capture on the client's
interface and the client, then checks every downloaded file against the data set's digests
and writes the run's record. A run's record is written last and atomically: a run without
one did not happen.

    python3 -m experiments.harness.inside BATCH.json"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path as FsPath
from typing import Any

from topology.kernel import metadata
from topology.net.path import SERVER_IP, Path
from topology.params import LinkShape

from topology.fidelity import probes

from .dataset import verify_download

FTP_PORT = 21
CLIENT_IF = "client-eth0"
RECORD = "result.json"
STARTUP_TIMEOUT_S = 30.0


class RunFailure(Exception):
    pass


def write_record(run_dir: FsPath, record: dict[str, Any]) -> None:
    partial = run_dir / (RECORD + ".tmp")
    partial.write_text(json.dumps(record, indent=1))
    os.replace(partial, run_dir / RECORD)


def apply_sysctls(node, values: dict[str, str]) -> None:
    settings = " ".join(f"{k}={v}" for k, v in sorted(values.items()))
    out = node.cmd(f"sysctl -q -w {settings} 2>&1; echo __status=$?; "
                   "ip tcp_metrics flush all 2>/dev/null")
    if "__status=0" not in out:
        raise RunFailure(f"{node.name}: cannot apply sysctls {settings}: {out.strip()}")


def wait_listening(server: subprocess.Popen, output: FsPath,
                   timeout_s: float = STARTUP_TIMEOUT_S) -> None:
    """ftpd prints `ready` once it listens on TCP and SCTP both. (A TCP listener alone is no
    sign: the SCTP one opens after it, and a client that came between was refused.)"""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if output.exists() and "\nready\n" in "\n" + output.read_text(errors="replace"):
            return
        if server.poll() is not None:
            raise RunFailure(f"the FTP server exited ({server.returncode}): "
                             f"{output.read_text(errors='replace')[-300:]}")
        time.sleep(0.05)
    raise RunFailure("the FTP server did not start listening")


def start_capture(node, pcap: FsPath, snaplen: int) -> subprocess.Popen:
    """tcpdump on the client's interface; `await_capture` waits until it captures."""
    # Immediate mode: without it packets wait in the capture ring for a block to fill, and the
    # last ones of a session are lost when the capture is stopped.
    capture = node.popen(["tcpdump", "-i", CLIENT_IF, "-n", "--immediate-mode", "-U", "-B",
                          "8192", "-s", str(snaplen), "-w", str(pcap)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return capture


def await_capture(capture: subprocess.Popen) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        line = capture.stderr.readline().decode(errors="replace")
        if "listening on" in line:
            return
        if not line and capture.poll() is not None:
            break
    stop(capture, signal.SIGKILL)
    raise RunFailure("tcpdump did not start capturing")


def stop(proc: subprocess.Popen, sig: int = signal.SIGTERM, grace_s: float = 10.0) -> int:
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def execute(path: Path, run: dict[str, Any]) -> dict[str, Any]:
    run_dir = FsPath(run["dir"])
    if run_dir.exists():
        shutil.rmtree(run_dir)  # a half-finished attempt counts for nothing
    run_dir.mkdir(parents=True)
    download = FsPath(run["scratch"]) / run["id"]
    shutil.rmtree(download, ignore_errors=True)
    download.mkdir(parents=True)
    pcap_partial = FsPath(run["pcap"] + ".partial")
    record: dict[str, Any] = {"id": run["id"], "point": run["point"], "rep": run["rep"],
                              "variant": run["variant"], "params": run["params"],
                              "shape": run["shape"], "status": "failed", "reasons": [],
                              "host": run.get("host"), "started": time.time()}
    server = capture = None
    phases: dict[str, float] = {}
    last = [time.monotonic()]

    def mark(phase: str) -> None:
        now = time.monotonic()
        phases[phase] = now - last[0]
        last[0] = now

    try:
        path.set_both(LinkShape.from_dict(run["shape"]))
        for node in (path.client, path.server):
            apply_sysctls(node, run["sysctls"])
        missing = [n for n in run["expected"] if not (FsPath(run["data"]) / n).is_file()]
        if missing:
            raise RunFailure(f"data set incomplete on the server side: {missing[:3]}")
        mark("links_and_sysctls")
        with open(run_dir / "ftpd.out", "wb") as server_output:
            server = path.server.popen(
                [run["ftpd"], "--root", run["data"], "--tcp", f"{SERVER_IP}:{FTP_PORT}",
                 "--sctp", f"{SERVER_IP}:{FTP_PORT}", "--log", str(run_dir / "ftpd.log"),
                 # ftpd's own stall limits (60 s for data) are shorter than a lossy satellite
                 # path's backed-off retransmission timers: the run's limit governs instead
                 "--data-timeout", str(int(run["timeout_s"])),
                 "--idle-timeout", str(int(run["timeout_s"]))],
                stdout=server_output, stderr=subprocess.STDOUT)
        # server and capture start side by side: each costs a few hundred ms in the kernel
        capture = start_capture(path.client, pcap_partial, run["snaplen"])
        wait_listening(server, run_dir / "ftpd.out")
        await_capture(capture)
        mark("server_and_capture_start")
        started = time.monotonic()
        with open(run_dir / "client.jsonl", "wb") as events, \
                open(run_dir / "client.err", "wb") as errors:
            client = path.client.popen(
                [run["ftpc"], "--variant", run["variant"], "--out", str(download),
                 "--timeout", str(int(run["timeout_s"])), f"{SERVER_IP}:{FTP_PORT}",
                 "mget", "*"], stdout=events, stderr=errors)
            try:
                record["client_status"] = client.wait(timeout=run["timeout_s"] + 30)
            except subprocess.TimeoutExpired:
                stop(client, signal.SIGKILL)
                raise RunFailure(f"the client ran past {run['timeout_s']:.0f} s") from None
        record["client_wall_s"] = time.monotonic() - started
        mark("client")
        if record["client_status"] != 0:
            reason = (run_dir / "client.err").read_text(errors="replace").strip()
            raise RunFailure(f"the client failed ({record['client_status']}): {reason[-300:]}")
        problems = verify_download(download, run["expected"])
        if problems:
            raise RunFailure("downloaded files do not match: " + "; ".join(problems[:5]))
        mark("verify")
        record["status"] = "ok"
    except RunFailure as failure:
        record["reasons"].append(str(failure))
    except Exception as error:  # any other fault fails this run, not the batch
        record["reasons"].append(f"harness fault: {error!r}")
    finally:
        if capture is not None:
            stop(capture, signal.SIGINT)
            if pcap_partial.exists():
                os.replace(pcap_partial, run["pcap"])
                record["pcap"] = run["pcap"]
        if server is not None:
            stop(server)
        shutil.rmtree(download, ignore_errors=True)
        mark("stop")
    record["phases_s"] = phases
    record["ended"] = time.time()
    record["sysctls"] = run["sysctls"]
    write_record(run_dir, record)
    return record


def link_checks(path: Path, runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ping each distinct rate and delay of the batch (without loss) before the runs: the
    fidelity check of the links actually used, recorded with the results."""
    checks, seen = [], set()
    for run in runs:
        shape = LinkShape.from_dict(run["shape"]).with_changes(loss=0.0)
        if (shape.rate_bps, shape.delay_s) in seen:
            continue
        seen.add((shape.rate_bps, shape.delay_s))
        path.set_both(shape)
        rtt = probes.ping(path.client, SERVER_IP, 5, 0.2)
        checks.append({"rate_bps": shape.rate_bps, "delay_s": shape.delay_s,
                       "rtt_configured_ms": 2000 * shape.delay_s, **rtt,
                       "reconfigure_s": path.timings_s.get("reconfigure")})
    return checks


def main(batch_file: str) -> int:
    batch = json.loads(FsPath(batch_file).read_text())
    runs = batch["runs"]
    collected = {**metadata.collect(), **batch.get("provenance", {})}
    with Path(LinkShape.from_dict(runs[0]["shape"])) as path:
        collected["topology_build_s"] = path.timings_s["build"]
        collected["link_checks"] = link_checks(path, runs)
        FsPath(batch["metadata_file"]).write_text(json.dumps(collected, indent=1))
        for run in runs:
            record = execute(path, run)
            print(json.dumps({"id": run["id"], "status": record["status"]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
