"""Ctrl-C while the pcaps are analysed in parallel ends the command within seconds, with one
line and no traceback, leaves no analysis process behind, and the same command then
finishes the analysis without redoing what was written before the interrupt."""
from __future__ import annotations

import json
import os
import shutil
import signal
import struct
import subprocess
import time
from pathlib import Path

from tests.conftest import default_sigint
from tests.harness.conftest import PYTHON, REPO, harness

ONE_RUN = """
name = "onerun"
[network]
queue = "500KB"
[[network.paths]]
name = "lan"
rate = "3Mbit"
delay = "1ms"
[matrix]
loss = [0.0]
file_sizes = ["10K"]
files = 2
variants = ["tcp"]
[repetitions]
min = 2
max = 2
[run]
timeout_s = 120
"""
COPIES = 6
INFLATE = 1000   # the pcap's packets this many times over: an analysis of several seconds


# An ICMP echo: with it in a capture the header readers (experiments/tshark/tcp_headers.py)
# leave the capture to tshark, so the interrupt finds the workers with tshark children, the
# case that needs their process groups signalled.
ICMP_ECHO = (b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00"
             + struct.pack(">BBHHHBBH4s4s", 0x45, 0, 28, 0, 0, 64, 1, 0, bytes([10, 0, 1, 1]),
                           bytes([10, 0, 2, 1]))
             + struct.pack(">BBHI", 8, 0, 0, 0))


def inflate(pcap: Path, into: Path, times: int) -> None:
    """A classic pcap of `pcap`'s packets repeated `times` times, each copy later in time, and
    an ICMP echo at the end."""
    data = pcap.read_bytes()
    header, body = data[:24], data[24:]
    assert header[:4] == b"\xd4\xc3\xb2\xa1", "a little-endian classic pcap"
    records, at = [], 0
    while at < len(body):
        sec, usec, incl, orig = struct.unpack("<IIII", body[at:at + 16])
        records.append((sec, usec, orig, body[at + 16:at + 16 + incl]))
        at += 16 + incl
    span = records[-1][0] - records[0][0] + 1
    with into.open("wb") as out:
        out.write(header)
        for k in range(times):
            for sec, usec, orig, packet in records:
                out.write(struct.pack("<IIII", sec + k * span, usec, len(packet), orig) + packet)
        out.write(struct.pack("<IIII", sec + times * span, 0, len(ICMP_ECHO), len(ICMP_ECHO))
                  + ICMP_ECHO)


def clone_runs(root: Path, copies: int, pcap: Path) -> list[str]:
    """`copies` more finished runs of the point: the first run's record under new ids, each
    with `pcap` as its capture, none of them analysed yet."""
    runs = root / "runs"
    source = sorted(runs.iterdir())[0]
    ids = []
    for rep in range(3, copies + 3):
        run_id = source.name[:-4] + f"r{rep:03d}"
        shutil.copytree(source, runs / run_id)
        record = json.loads((runs / run_id / "result.json").read_text())
        record.update(id=run_id, rep=rep, pcap=str(root / "pcaps" / f"{run_id}.pcap"))
        (runs / run_id / "result.json").write_text(json.dumps(record))
        shutil.copy(pcap, root / "pcaps" / f"{run_id}.pcap")
        (runs / run_id / "analysis.json").unlink()
        ids.append(run_id)
    return ids


def processes_naming(text: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit():
                args = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(
                    "utf-8", "replace")
                if text in args:
                    found.append(f"{entry.name}: {args}")
        except OSError:
            continue
    return found


def interrupt(root: Path, experiment: Path, results: Path, group: bool) -> tuple[str, float]:
    """`testbed tables` with 2 analysis processes, interrupted once both are in tshark: by
    SIGINT to the whole job (Ctrl-C) or to the command alone (kill -INT). (stderr, seconds
    from the signal to the command's end)."""
    env = dict(os.environ, TESTBED_ANALYSIS_WORKERS="2")
    # a process group of its own, as a shell job has: SIGINT goes to the whole job, as a
    # terminal's Ctrl-C sends it
    tables = subprocess.Popen(default_sigint([PYTHON, "-m", "testbed", "tables",
                                              str(experiment), "--results", str(results)]),
                              cwd=REPO, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, process_group=0)
    deadline = time.monotonic() + 60
    while (len([p for p in processes_naming(str(root / "pcaps")) if "tshark" in p]) < 2
           and time.monotonic() < deadline):
        assert tables.poll() is None, tables.communicate()
        time.sleep(0.05)
    assert time.monotonic() < deadline, "the analyses did not start"
    (os.killpg if group else os.kill)(tables.pid, signal.SIGINT)
    t0 = time.monotonic()
    try:
        _, err = tables.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(tables.pid, signal.SIGKILL)
        tables.communicate()
        raise AssertionError("the interrupted command hung") from None
    took = time.monotonic() - t0
    assert tables.returncode == 130, err
    return err, took


def test_ctrl_c_during_analysis_ends_quickly_and_resumes(tmp_path: Path):
    experiment = tmp_path / "onerun.toml"
    experiment.write_text(ONE_RUN)
    results = tmp_path / "results"
    first = harness("run", str(experiment), "--results", str(results), "--workers", "1")
    assert first.returncode == 0, first.stderr[-2000:]
    root = results / "onerun"
    original = sorted((root / "pcaps").iterdir())[0]
    big = tmp_path / "big.pcap"
    inflate(original, big, INFLATE)
    ids = clone_runs(root, COPIES, big)

    for group in (True, False):
        err, took = interrupt(root, experiment, results, group)
        print(f"SIGINT to the {'job' if group else 'command'}: ended in {took:.2f} s")
        assert took < 3, (took, err)
        assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
        lines = [line for line in err.splitlines() if not line.startswith("analys")]
        assert len(lines) == 1 and lines[0].startswith("interrupted"), err
        time.sleep(0.3)
        assert processes_naming(str(results)) == []      # no worker, no tshark left
        assert not list(root.glob("runs/*/analysis.json.tmp"))

    for run_id in ids:     # the same command resumes: here with pcaps quick to read
        shutil.copy(original, root / "pcaps" / f"{run_id}.pcap")
    before = {p.parent.name: p.stat().st_mtime_ns for p in root.glob("runs/*/analysis.json")}
    second = harness("tables", str(experiment), "--results", str(results))
    assert second.returncode == 0, second.stderr[-2000:]
    after = {p.parent.name: p.stat().st_mtime_ns for p in root.glob("runs/*/analysis.json")}
    assert len(after) == COPIES + 2
    assert all(after[run_id] == mtime for run_id, mtime in before.items())   # not redone
    assert len((root / "runs.csv").read_text().splitlines()) == COPIES + 3
