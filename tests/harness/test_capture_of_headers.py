"""A capture of headers ([run] capture = "headers"): the runs of the five FTP variants write
pcaps of every packet's headers with the control channel whole, about a tenth of the bytes, and
measure from them what whole packets measure: every smoke run's pcap, cut as such a capture
would have held it (by the capture's own filter program, runcapture --read), gives the same row
field by field."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments.benchmarks.capture_of_headers import compare
from experiments.procedure import HEADERS_SNAPLEN, WHOLE_SNAPLEN
from experiments.tshark.pcap_records import pcap_format, records
from tests.harness.conftest import REPO, rows, run_in_virtual_time

MS = 0.001



@pytest.fixture(scope="module")
def headers_run(tmp_path_factory) -> Path:
    """Two runs of each variant at 3% loss, 200K x 10, in virtual time (block-mode captures,
    as E1 runs), captured as headers."""
    scratch = tmp_path_factory.mktemp("headers")
    text = (REPO / "experiments" / "smoke.toml").read_text()
    for old, new in (('name = "smoke"', 'name = "headers"'),
                     ("loss = [0.0, 0.03]", "loss = [0.03]"),
                     ('file_sizes = ["10K", "200K"]', 'file_sizes = ["200K"]'),
                     ("min = 3\nmax = 4", "min = 2\nmax = 2"),
                     ("timeout_s = 300", 'timeout_s = 300\ncapture = "headers"')):
        assert old in text
        text = text.replace(old, new)
    experiment = scratch / "headers.toml"
    experiment.write_text(text)
    # the inf-cpu clock: under wall-cpu a busy host's computing time lands between the pcap's
    # stamps and the client's (past the 1 ms allowed, once, in CI's serial phase)
    return run_in_virtual_time(str(experiment), scratch / "results",
                               env={"TESTBED_TIME_TRAVEL": "inf-cpu"})


def test_every_run_wrote_every_packet_it_was_handed_into_its_pcap(headers_run):
    runs = rows(headers_run / "runs.csv")
    assert len(runs) == 10
    for run in runs:
        assert run["status"] == "ok", run
        record = json.loads((headers_run / "runs" / run["run_id"] / "result.json").read_text())
        capture = record["capture"]
        assert capture["dropped"] == 0 and capture["captured"] == capture["received"] > 0
        assert record["capture_mode"] == "block" and capture["drain_ms"] >= 0
        assert not list((headers_run / "pcaps").glob("*.partial"))


def test_data_packets_are_cut_and_the_control_channel_is_whole(headers_run):
    for pcap in sorted((headers_run / "pcaps").glob("*.pcap")):
        data = pcap.read_bytes()
        layout = pcap_format(data)[0]
        assert int.from_bytes(data[16:20], "little") == WHOLE_SNAPLEN
        held = [(r.captured, r.length) for r in records(data, layout)]
        cut = [captured for captured, length in held if captured < length]
        whole_large = [length for captured, length in held
                       if captured == length > HEADERS_SNAPLEN]
        assert cut and set(cut) == {HEADERS_SNAPLEN}, pcap.name
        assert whole_large, pcap.name   # the control channel's longer messages, whole
        assert sum(c for c, _ in held) < 0.2 * sum(n for _, n in held), pcap.name


def test_its_times_agree_with_the_client_and_its_phases_add_up(headers_run):
    for run in rows(headers_run / "runs.csv"):
        assert run["notes"] == "", run
        assert run["flagged"] == "False", run
        assert abs(float(run["pcap_client_diff_ms"])) <= 1.0, run
        assert abs(float(run["phases_total_s"]) - float(run["transfer_time_s"])) <= MS, run
        assert int(run["retransmissions"]) > 0, run   # 3% loss over 2 MB


def test_every_smoke_run_measures_the_same_from_its_capture_of_headers(smoke):
    report = compare(smoke)
    assert report["runs"] >= 16 * 3
    assert report["differing_runs"] == 0, [r for r in report["per_run"] if r["differing"]]
    assert report["headers_bytes"] < 0.2 * report["whole_bytes"]
