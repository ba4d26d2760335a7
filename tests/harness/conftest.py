from __future__ import annotations

import csv
import json
import os
import subprocess
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PYTHON = "/usr/bin/python3"


def lan_experiment(name: str, losses: str, file_size: str, files: int, runs: int) -> str:
    """A small FTP experiment on the E1 LAN path (3 Mbit/s, 1 ms, 500 KB queue), tcp only,
    `runs` runs a point: the text of its file, for the tests that interrupt, damage or fill."""
    return f"""
name = "{name}"
[network]
queue = "500KB"
[[network.paths]]
name = "lan"
rate = "3Mbit"
delay = "1ms"
[matrix]
loss = {losses}
file_sizes = ["{file_size}"]
files = {files}
variants = ["tcp"]
[repetitions]
min = {runs}
max = {runs}
[run]
timeout_s = 120
"""


def rows(path: Path) -> list[dict[str, str]]:
    """A CSV file's rows (runs.csv, summary.csv, a run's phases.csv)."""
    with path.open() as handle:
        return list(csv.DictReader(handle))


def stack_evidence(folder: Path, pcap: Path) -> tuple[dict, dict, set[tuple[str, ...]]]:
    """What says which SCTP stack a run's session ran on: its result.json, the client's
    `connected` event, and the UDP ports of the pcap's SCTP packets inside UDP."""
    from experiments.tshark import fields
    from experiments.workloads.base import read_events

    record = json.loads((folder / "result.json").read_text())
    connected = next(e for e in read_events(folder / "client.jsonl")
                     if e["event"] == "connected")
    ports = {tuple(r) for r in fields(pcap, ["udp.srcport", "udp.dstport"], "sctp && udp")}
    return record, connected, ports


def assert_on_usrsctp_with_the_stack_s_timers(connected: dict, udp_ports: set) -> None:
    """usrsctp inside UDP on port 9899 at both ends, as the client's event and the pcap say,
    with the stack profile's RTO timers."""
    assert udp_ports == {("9899", "9899")}
    assert (connected["stack"], connected["udp_port"], connected["peer_udp_port"]) == \
        ("usrsctp", 9899, 9899)
    assert {"sctp_rto_initial_default=3000", "sctp_rto_min_default=1000"} <= \
        set(connected["usrsctp_sysctls"])


def harness(*args: str, timeout: float = 1800,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`testbed ARGS` from the repository, its environment this one's plus `env`."""
    return subprocess.run([PYTHON, "-m", "testbed", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def run_in_virtual_time(experiment: str, results: Path, timeout: float = 1800,
                        env: dict[str, str] | None = None) -> Path:
    """`testbed run EXPERIMENT` (a name in experiments/ or a .toml file) on the virtual-time
    kernel into `results`, which must succeed: the experiment's results folder, named by its
    `name`."""
    run = harness("run", experiment, "--kernel", "uml-virtual", "--results", str(results),
                  timeout=timeout, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    name = (tomllib.loads(Path(experiment).read_text())["name"]
            if experiment.endswith(".toml") else experiment)
    return results / name


@pytest.fixture(scope="session")
def smoke(tmp_path_factory) -> Path:
    """The smoke experiment, end to end, into a results root of its own."""
    results = tmp_path_factory.mktemp("results")
    run = harness("run", "smoke", "--results", str(results), timeout=3600)
    assert run.returncode == 0, run.stderr[-3000:]
    return results / "smoke"
