"""A stack profile sets the windows both transports advertise, read here from the client's pcap:
under "published" TCP's receive window stays within FreeBSD's 64 KB and SCTP's a_rwnd is the
asked 208 KB; under "linux" TCP autotunes past 64 KB and SCTP advertises half of
net.core.rmem_default. Every run records its stack and the timers it set, and the published tcp
runs ran in the cgroup that gives TCP its 3 s initial RTO. The TCP profile tcp-reno-64k (E5's
hosts) switches window scaling off, so even autotuned buffers advertise at most 64 KB."""
from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path

import pytest

from experiments.stacks import LINUX_RMEM_MAX, STACKS
from tests.harness.conftest import harness
from topology.net.path import CLIENT_IP

EXPERIMENT = """\
name = "stacks"
description = "one 1 MB file over a 10 Mbit/s, 40 ms path under both stack profiles"
[network]
queue = "500KB"
[[network.paths]]
name = "wide"
rate = "10Mbit"
delay = "20ms"
[matrix]
loss = [0.0]
file_sizes = ["1M"]
files = 1
variants = ["tcp", "sctp-ms"]
tcp_profiles = ["tcp-newreno", "tcp-reno-64k"]
stacks = ["published", "linux"]
[repetitions]
min = 2
max = 2
[run]
timeout_s = 120
"""
LINUX_SCTP_A_RWND = 106_496     # net.core.rmem_default 212992, halved


@pytest.fixture(scope="module")
def stacks(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("stacks")
    (folder / "stacks.toml").write_text(EXPERIMENT)
    done = harness("run", str(folder / "stacks.toml"), "--results", str(folder / "results"),
                   timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    return folder / "results" / "stacks"


def runs(results: Path, tcp_profile: str = "tcp-newreno") -> dict[tuple[str, str], dict]:
    """(variant, stack) -> the run that counted; tcp's under `tcp_profile`. (A failed run keeps
    its row beside its redo's; the session's summary names its reasons.)"""
    with (results / "runs.csv").open() as handle:
        return {(r["variant"], r["stack"]): r for r in csv.DictReader(handle)
                if r["profile"] in (tcp_profile, "sctp") and r["status"] == "ok"}


def field_values(pcap: Path, display_filter: str, field: str) -> list[int]:
    out = subprocess.run(["tshark", "-r", str(pcap), "-Y", display_filter, "-T", "fields",
                          "-e", field], capture_output=True, text=True, check=True).stdout
    return [int(v.split(",")[0]) for v in out.split() if v]


def test_every_point_ran_under_its_stack(stacks):
    table = runs(stacks)
    assert set(table) == {(v, s) for v in ("tcp", "sctp-ms") for s in ("published", "linux")}
    meta = json.loads((stacks / "meta.json").read_text())
    recorded = meta["experiment"]["stacks"]
    assert recorded["published"] == STACKS["published"].record()


def test_tcp_s_window_is_capped_at_64_kb_only_under_published(stacks):
    table = runs(stacks)
    windows = {}
    for stack in ("published", "linux"):
        pcap = stacks / "pcaps" / f"{table[('tcp', stack)]['run_id']}.pcap"
        windows[stack] = max(field_values(pcap, f"tcp && ip.src=={CLIENT_IP}",
                                          "tcp.window_size"))
    assert windows["published"] <= 65_536, windows
    assert windows["linux"] > 65_536, windows       # autotuning grew it


def test_without_window_scaling_tcp_stops_at_64_kb_even_when_autotuned(stacks):
    run = runs(stacks, "tcp-reno-64k")[("tcp", "linux")]
    assert run["status"] == "ok"
    pcap = stacks / "pcaps" / f"{run['run_id']}.pcap"
    # neither SYN offers window scaling, and no window advertised goes past 16 bits
    assert field_values(pcap, "tcp.flags.syn==1 && tcp.option_kind==3", "tcp.srcport") == []
    windows = field_values(pcap, f"tcp && ip.src=={CLIENT_IP}", "tcp.window_size")
    assert max(windows) <= 65_535, max(windows)
    # autotuning had room to grow it: under tcp-newreno the same stack went past 64 KB
    assert linux_window(stacks) > 65_536


def linux_window(stacks) -> int:
    run = runs(stacks)[("tcp", "linux")]
    pcap = stacks / "pcaps" / f"{run['run_id']}.pcap"
    return max(field_values(pcap, f"tcp && ip.src=={CLIENT_IP}", "tcp.window_size"))


def test_sctp_advertises_the_asked_buffer_under_published(stacks):
    table = runs(stacks)
    credits = {}
    for stack in ("published", "linux"):
        pcap = stacks / "pcaps" / f"{table[('sctp-ms', stack)]['run_id']}.pcap"
        credits[stack] = field_values(pcap, f"sctp.chunk_type==1 && ip.src=={CLIENT_IP}",
                                      "sctp.init_credit")
    assert credits == {"published": [LINUX_RMEM_MAX], "linux": [LINUX_SCTP_A_RWND]}


def test_each_run_records_its_stack_and_timers(stacks):
    for (_, stack), row in runs(stacks).items():
        record = json.loads((stacks / "runs" / row["run_id"] / "result.json").read_text())
        assert record["params"]["stack"] == stack
        assert record["sysctls"]["net.sctp.rto_initial"] == "3000"
        assert record["sysctls"]["net.sctp.rto_min"] == "1000"
        # TCP's 3 s initial RTO (tests/core/test_initial_rto.py shows the SYN retried after
        # 3 s): ftpd and ftpc of the published tcp runs ran in its cgroup
        timer = record.get("tcp_initial_rto")
        if (row["variant"], stack) == ("tcp", "published"):
            assert timer and timer["ms"] == 3000 and "testbed-rto" in timer["cgroup"], record
        else:
            assert timer is None, record


def test_every_capture_holds_its_session_s_close(stacks):
    """The capture stops once the client's connections and associations have closed: on this
    40 ms path the server's half of the close comes a round trip after the client's end, and a
    capture stopped right after the client (as it used to be) ends without it."""
    with (stacks / "runs.csv").open() as handle:
        rows = [r for r in csv.DictReader(handle) if r["status"] == "ok"]
    assert len(rows) == 12
    for row in rows:
        pcap = stacks / "pcaps" / f"{row['run_id']}.pcap"
        record = json.loads((stacks / "runs" / row["run_id"] / "result.json").read_text())
        assert record["teardown_s"] is not None and record["teardown_s"] < 1.0, record
        if row["variant"] == "tcp":
            # the control connection's FIN both ways, and the client's last ACK of it
            server_fin = field_values(pcap, f"tcp.flags.fin==1 && ip.dst=={CLIENT_IP} && "
                                      "tcp.srcport==21", "frame.number")
            assert server_fin and field_values(pcap, f"tcp.flags.fin==1 && ip.src=={CLIENT_IP}"
                                               " && tcp.dstport==21", "frame.number")
            assert field_values(pcap, f"frame.number > {server_fin[-1]} && ip.src=={CLIENT_IP}"
                                " && tcp.dstport==21 && tcp.flags.ack==1", "frame.number")
        else:
            # SHUTDOWN, SHUTDOWN ACK, then SHUTDOWN COMPLETE last
            chunks = field_values(pcap, "sctp", "sctp.chunk_type")
            assert chunks[-1] == 14 and 8 in chunks, chunks[-5:]


def test_no_run_leaves_tcp_metrics_for_the_next(stacks):
    """Runs share a topology, and no cache flush runs between them: each run's sysctls keep
    the TCP metrics cache empty, and each topology's end hosts report it so after its runs."""
    meta = json.loads((stacks / "meta.json").read_text())
    reports = meta["tcp_metrics_cached"]
    assert {r["host"] for r in reports} == {"client", "server"}, reports
    assert all(r["entries"] == [] for r in reports), reports


def test_each_run_ran_once_in_one_of_the_round_s_kernels(stacks):
    """The two workers share the round's runs (experiments/inkernel/sharing.py): every run's
    record names the batch that ran it, that batch's kernel reported it, and no other did."""
    reported: dict[str, list[str]] = {}
    for marks in sorted((stacks / ".work").glob("*.marks.jsonl")):
        batch = marks.name.removesuffix(".marks.jsonl")
        for line in marks.read_text().splitlines():
            step = json.loads(line)
            if step["step"] == "record":
                reported.setdefault(step["run"], []).append(batch)
    records = {p.parent.name: json.loads(p.read_text())
               for p in (stacks / "runs").glob("*/result.json")}
    assert records and set(reported) == set(records)
    for run_id, record in records.items():
        assert reported[run_id] == [record["batch"]], (run_id, reported[run_id])
