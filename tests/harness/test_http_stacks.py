"""http-page under a stack profile, end to end in virtual time (inf-cpu): the page at 3 Mbit/s and
80 ms, clean, over TCP and SCTP, on today's stack and on freebsd-4.6. Each run records its
stack's switches, route metrics and initial TCP RTO, the point's key names a stack other than
today's, and the pcap shows the stack: the server's first flight of the document is one segment
under freebsd-4.6 (ten under linux), and the client advertises at most its 56 KB receive
buffer."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments import tshark
from experiments.stacks import KERNEL_SWITCHES, STACKS
from tests.harness.conftest import REPO, harness, rows
from topology.net.path import CLIENT_IP, SERVER_IP

HALF_RTT_S = 0.040


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("http-stacks")
    text = (REPO / "experiments" / "http-smoke.toml").read_text()
    for old, new in (('name = "http-smoke"', 'name = "http-stacks"'),
                     ("loss = [0.0, 0.05]", 'loss = [0.0]\nstacks = ["linux", "freebsd-4.6"]'),
                     ("min = 3\nmax = 3", "min = 2\nmax = 2")):
        assert old in text
        text = text.replace(old, new)
    (folder / "http-stacks.toml").write_text(text)
    # inf-cpu: under wall-cpu a busy machine's computing time lands in the run's clock, and a
    # CI run's first flight broke after 4 of its 10 segments on a 40 ms pause of the server
    done = harness("run", str(folder / "http-stacks.toml"), "--kernel", "uml-virtual",
                   "--results", str(folder / "results"), timeout=1200,
                   env={"TESTBED_TIME_TRAVEL": "inf-cpu"})
    assert done.returncode == 0, done.stderr[-3000:]
    return folder / "results" / "http-stacks"


def test_every_run_records_its_stack(results):
    table = rows(results / "runs.csv")
    assert {(r["transport"], r["stack"]) for r in table} == {
        (t, s) for t in ("tcp", "sctp") for s in ("linux", "freebsd-4.6")}
    for row in table:
        assert row["status"] == "ok", row
        assert ("_freebsd-4.6_r" in row["run_id"]) == (row["stack"] == "freebsd-4.6"), row
        record = json.loads((results / "runs" / row["run_id"] / "result.json").read_text())
        stack = STACKS[row["stack"]]
        assert record.get("route_metrics", {}) == stack.route_metrics()
        assert {k: record["sysctls"][k] for k in KERNEL_SWITCHES} == {**KERNEL_SWITCHES,
                                                                       **stack.switches}
        era_tcp = row["stack"] == "freebsd-4.6" and row["transport"] == "tcp"
        assert record.get("tcp_initial_rto", {}).get("ms") == (3000 if era_tcp else None)


def first_flight(pcap: Path) -> int:
    """The server's segments that arrive before the acks of the first have gone round."""
    arrivals = [float(t) for t, length in tshark.fields(
        pcap, ["frame.time_epoch", "tcp.len"], f"tcp && ip.src=={SERVER_IP}") if int(length)]
    count = 1
    while count < len(arrivals) and arrivals[count] - arrivals[count - 1] < HALF_RTT_S:
        count += 1
    return count


def test_the_pcap_shows_the_stack(results):
    flights: dict[str, set[int]] = {}
    for row in rows(results / "runs.csv"):
        if row["transport"] != "tcp":
            continue
        pcap = results / row["pcap"]
        flights.setdefault(row["stack"], set()).add(first_flight(pcap))
        windows = [int(w) for (w,) in tshark.fields(
            pcap, ["tcp.window_size"], f"tcp && ip.src=={CLIENT_IP} && tcp.flags.syn == 0")]
        if row["stack"] == "freebsd-4.6":
            assert windows and max(windows) <= 57_344, max(windows)
    assert flights == {"freebsd-4.6": {1}, "linux": {10}}, flights
