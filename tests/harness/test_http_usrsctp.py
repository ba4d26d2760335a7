"""E4's page on both SCTP stacks through the harness (http-usrsctp-smoke, in virtual time):
every page byte-exact and measured from the client's pcap through the UDP header usrsctp's
packets carry, in agreement with httpc's clock; usrsctp inside UDP at both ends with the stack
profile's timers; each object's answer on a stream of its own on either stack; and the report
drawing each SCTP stack as a series of its own."""
from __future__ import annotations

import csv
import json
import tomllib
from pathlib import Path

import pytest
import tomli_w

from experiments import spec
from experiments.tshark import fields
from tests.harness.conftest import (
    assert_on_usrsctp_with_the_stack_s_timers,
    harness,
    rows,
    run_in_virtual_time,
    stack_evidence,
)

OBJECTS = 7
RTT_S = 0.080
TIMERS = ["--usrsctp-sysctl=sctp_rto_min_default=1000",
          "--usrsctp-sysctl=sctp_rto_initial_default=3000",
          "--usrsctp-sysctl=sctp_rto_max_default=60000"]


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> Path:
    results = tmp_path_factory.mktemp("http-usrsctp")
    # inf-cpu, as http-smoke: a busy host's computing would land between the pcap's stamp of
    # an object's last byte and httpc's
    return run_in_virtual_time("http-usrsctp-smoke", results,
                               env={"TESTBED_TIME_TRAVEL": "inf-cpu"})


def objects(results: Path, run_id: str) -> list[dict[str, str]]:
    with (results / "runs" / run_id / "objects.csv").open() as handle:
        return list(csv.DictReader(handle))


def test_every_page_on_both_stacks_is_whole_and_measured_from_its_pcap(pages):
    runs = rows(pages / "runs.csv")
    assert sorted((r["sctp_stack"], float(r["loss"])) for r in runs) == sorted(
        [("kernel", 0.0), ("kernel", 0.05), ("usrsctp", 0.0), ("usrsctp", 0.05)] * 2)
    for run in runs:
        assert run["status"] == "ok" and run["flagged"] == "False", run
        assert float(run["page_time_s"]) > 2 * RTT_S
        record = json.loads((pages / "runs" / run["run_id"] / "result.json").read_text())
        assert record["status"] == "ok" and not record["reasons"]
        assert record["capture"]["dropped"] == 0
        if float(run["loss"]) == 0:
            assert run["retransmissions"] == "0", run
    lossy = [r for r in runs if r["sctp_stack"] == "usrsctp" and float(r["loss"]) > 0]
    # 5% loss each way on 60-odd packets a page: the pcap's reading through UDP finds
    # usrsctp's retransmissions
    assert sum(int(r["retransmissions"]) for r in lossy) > 0


def test_usrsctp_runs_inside_udp_at_both_ends_with_the_stack_s_timers(pages):
    for run in rows(pages / "runs.csv"):
        folder, pcap = pages / "runs" / run["run_id"], pages / run["pcap"]
        record, connected, inside_udp = stack_evidence(folder, pcap)
        if run["sctp_stack"] == "kernel":
            assert connected["stack"] == "kernel" and inside_udp == set()
            assert record["programs"] == {"httpd": [], "httpc": []}
            continue
        assert_on_usrsctp_with_the_stack_s_timers(connected, inside_udp)
        assert fields(pcap, ["frame.number"], "sctp && !udp") == []
        assert record["sctp_stack"] == "usrsctp"
        assert record["programs"]["httpd"][-3:] == TIMERS == record["programs"]["httpc"][-3:]
        assert "STACK sctp usrsctp" in (folder / "httpd.log").read_text()


def test_each_object_s_answer_is_on_a_stream_of_its_own_on_either_stack(pages):
    for run in rows(pages / "runs.csv"):
        table = objects(pages, run["run_id"])
        streams = [int(r["stream"]) for r in table]
        assert streams[0] == 0 and sorted(streams[1:]) == list(range(OBJECTS)), run["run_id"]
        for r in table:
            assert r["status"] == "200"
            # a round trip at least from each request to its answer's first byte (inf-cpu:
            # exactly, to the stamps' microsecond)
            assert float(r["first_byte_s"]) - float(r["request_s"]) >= RTT_S - 2e-6, r
            assert abs(float(r["complete_s"]) - float(r["client_complete_s"])) < RTT_S / 4, r


def test_the_report_draws_each_sctp_stack_as_a_series(pages):
    meta = json.loads((pages / "meta.json").read_text())["experiment"]
    assert meta["page"]["sctp_stacks"] == ["kernel", "usrsctp"]
    assert meta["page"]["usrsctp_stack_settings"]["linux"] == {
        "sctp_rto_min_default": 1000, "sctp_rto_initial_default": 3000,
        "sctp_rto_max_default": 60000}
    report = harness("report", str(pages), timeout=600)
    assert report.returncode == 0, report.stderr[-3000:]
    drawn = rows(pages / "report" / "page_time_51200B.data.csv")
    assert {r["transport"] for r in drawn} == {"sctp", "sctp on usrsctp"}
    pages_table = rows(pages / "report" / "pages.csv")
    assert sorted((r["sctp_stack"], float(r["loss"])) for r in pages_table) == [
        ("kernel", 0.0), ("kernel", 0.05), ("usrsctp", 0.0), ("usrsctp", 0.05)]


AS_LINUX = "usrsctp:sctp_use_cwnd_based_maxburst=0,sctp_L2_abc_variable=1"


def mechanisms_smoke() -> str:
    """http-usrsctp-mechanisms itself at its clean 3 Mbit/s point, two runs a stack: the
    kernel's SCTP, usrsctp as it comes, and usrsctp with Linux's two behaviours its own
    sysctls switch."""
    data = tomllib.loads(spec.find("http-usrsctp-mechanisms").read_text())
    assert AS_LINUX in data["matrix"]["sctp_stacks"]
    data["name"] = "http-usrsctp-mechanisms-smoke"
    data["network"]["paths"] = [p for p in data["network"]["paths"] if p["name"] == "3mbit"]
    data["matrix"].update(loss=[0.0], sctp_stacks=["kernel", "usrsctp", AS_LINUX])
    data["repetitions"] = {"min": 2, "max": 2}
    data["run"]["timeout_s"] = 300
    return tomli_w.dumps(data)


@pytest.fixture(scope="module")
def mechanisms(tmp_path_factory) -> dict[str, dict[str, float]]:
    experiment = tmp_path_factory.mktemp("mechanisms") / "http-usrsctp-mechanisms-smoke.toml"
    experiment.write_text(mechanisms_smoke())
    results = run_in_virtual_time(str(experiment), experiment.parent / "results",
                                  env={"TESTBED_TIME_TRAVEL": "inf-cpu"})
    return {r["sctp_stack"]: {k: float(r[f"{k}_mean"]) for k in
                              ("page_time_s", "document_time_s", "objects_time_s")}
            for r in rows(results / "summary.csv")}


def test_the_stacks_clean_page_differs_by_max_burst_s_clamp_and_slow_start_s_growth(
        mechanisms):
    """On a clean path usrsctp fetches the document sooner (slow start grows cwnd by up to
    two MTUs a SACK, Linux's by one) and the objects a round trip later (after the round trip
    with nothing in flight between document and objects, Max.Burst lowers cwnd to 4 packets
    for good, where Linux gives it back after the burst). With those two of usrsctp's
    behaviours set to Linux's, the page takes the kernel's time but for the 8 bytes of UDP
    each packet carries (analysis/findings/2026-12-e4-usrsctp.md)."""
    kernel, usrsctp, as_linux = (mechanisms[s] for s in ("kernel", "usrsctp", AS_LINUX))
    assert kernel["document_time_s"] - usrsctp["document_time_s"] > RTT_S / 8, mechanisms
    assert usrsctp["objects_time_s"] - kernel["objects_time_s"] > RTT_S, mechanisms
    assert abs(as_linux["page_time_s"] - kernel["page_time_s"]) < RTT_S / 8, mechanisms
    assert abs(as_linux["objects_time_s"] - kernel["objects_time_s"]) < RTT_S / 16, mechanisms
