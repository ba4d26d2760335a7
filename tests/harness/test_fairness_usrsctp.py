"""E3's smoke experiment with its SCTP flow on usrsctp, through the harness in virtual time: the
flow inside UDP on port 9899 at both ends, the study's 1488-byte chunks on the wire (usrsctp
told the route's MTU), the stack recorded by both programs, the receivers' counts against the
bottleneck's pcap read through the UDP header, and usrsctp's congestion window sampled."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments.tshark import fields
from experiments.tshark.transport import sctp_frames
from tests.harness.conftest import rows, run_in_virtual_time

RUN_LIMIT_S = 900
SENDER, RECEIVER = "10.1.2.1", "10.2.2.1"   # pair 2: the SCTP flow


@pytest.fixture(scope="module")
def fairness(tmp_path_factory) -> Path:
    results = tmp_path_factory.mktemp("fairness-usrsctp")
    return run_in_virtual_time("fairness-usrsctp-smoke", results, RUN_LIMIT_S)


def events(folder: Path, name: str) -> list[dict]:
    return [json.loads(line) for line in (folder / name).read_text().splitlines() if line]


def test_both_runs_count_and_agree_with_the_bottleneck_pcap(fairness):
    runs = rows(fairness / "runs.csv")
    assert [r["sctp_stack"] for r in runs] == ["usrsctp", "usrsctp"]
    for run in runs:
        assert run["status"] == "ok", run
        assert run["run_id"].endswith(("_usrsctp_r001", "_usrsctp_r002"))
        assert float(run["sctp_mbps"]) > 0.05 and float(run["tcp_mbps"]) > 0.05
        assert float(run["pcap_disagreement"]) <= 0.01, run
        for flow in rows(fairness / "runs" / run["run_id"] / "flows.csv"):
            window, seen = float(flow["window_bytes"]), float(flow["pcap_window_bytes"])
            assert window > 200_000
            assert abs(seen - window) <= 0.01 * window, flow
    meta = json.loads((fairness / "meta.json").read_text())
    assert meta["experiment"]["flows"]["sctp_stacks"] == ["usrsctp"]


def test_the_sctp_flow_runs_on_usrsctp_inside_udp_with_the_study_s_chunks(fairness):
    run = rows(fairness / "runs.csv")[0]
    folder, pcap = fairness / "runs" / run["run_id"], fairness / run["pcap"]
    connected = next(e for e in events(folder, "sender-s2.jsonl") if e["event"] == "connected")
    accepted = next(e for e in events(folder, "receiver-d2.jsonl") if e["event"] == "accepted")
    assert (connected["stack"], connected["udp_port"], connected["peer_udp_port"]) == \
        ("usrsctp", 9899, 9899)
    assert accepted["stack"] == "usrsctp" and accepted["path_mtu"] == 1548
    assert connected["path_mtu"] == 1548 and connected["maxseg"] == 1488
    tcp = next(e for e in events(folder, "sender-s1.jsonl") if e["event"] == "connected")
    assert tcp["stack"] == "kernel"
    assert fields(pcap, ["frame.number"], "sctp && !udp") == []
    ports = {tuple(r) for r in fields(pcap, ["udp.srcport", "udp.dstport"], "sctp")}
    assert ports == {("9899", "9899")}
    chunks = [c.length for _, f in sctp_frames(pcap, f"ip.src == {SENDER}") for c in f.chunks]
    assert max(chunks) == 1488 and chunks.count(1488) > 0.9 * len(chunks)
    # one SACK per DATA packet (sack_freq 1 on usrsctp's receiver), and its 64 KB window
    sacks = len(fields(pcap, ["frame.number"], f"ip.src == {RECEIVER} && sctp.chunk_type == 3"))
    data = len(sctp_frames(pcap, f"ip.dst == {RECEIVER}"))
    assert sacks >= 0.9 * data, (sacks, data)


def test_usrsctp_s_congestion_window_is_sampled_and_reacts_to_loss(fairness):
    for run in rows(fairness / "runs.csv"):
        trace = rows(fairness / "runs" / run["run_id"] / "cwnd.csv")
        cwnd = [float(r["cwnd"]) for r in trace if r["proto"] == "sctp" and r["cwnd"]]
        assert len(cwnd) >= 10 * 35
        assert sum(b < 0.8 * a for a, b in zip(cwnd, cwnd[1:], strict=False)) >= 3
        assert run["sctp_cwnd_segments"] and float(run["sctp_cwnd_segments"]) > 1
