"""A run that captures at both ends (run.capture_at = ["client", "server"]), in the pinned
kernel in virtual time: beside the client's pcap, the server's, of the same session; what one
end sent and the other received differs by the packets the lossy path dropped, and the client's
pcap, the one measured, is the same as without the server's."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from experiments.tshark import fields
from tests.harness.conftest import harness, lan_experiment, rows, run_in_virtual_time

LOSS = 0.10
CLIENT_IP, SERVER_IP = "10.0.1.1", "10.0.2.1"


@pytest.fixture(scope="module")
def both_ends(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("server-capture")
    text = lan_experiment("both-ends", f"[{LOSS}]", "100K", 3, 2).replace(
        'variants = ["tcp"]', 'variants = ["tcp", "sctp-naive"]').replace(
        "[run]", '[run]\ncapture_at = ["client", "server"]')
    experiment = folder / "both-ends.toml"
    experiment.write_text(text)
    return run_in_virtual_time(str(experiment), folder / "results", timeout=900)


def packets_from(pcap: Path, source: str) -> int:
    return len(fields(pcap, ["frame.number"], f"ip.src == {source} && (tcp || sctp)"))


def test_each_run_keeps_the_server_s_pcap_beside_the_client_s(both_ends):
    runs = rows(both_ends / "runs.csv")
    assert len(runs) == 4 and all(r["status"] == "ok" for r in runs)
    assert json.loads((both_ends / "meta.json").read_text())["experiment"]["capture_at"] == [
        "client", "server"]
    for run in runs:
        record = json.loads((both_ends / "runs" / run["run_id"] / "result.json").read_text())
        server_pcap = Path(record["server_pcap"])
        assert server_pcap == both_ends / "pcaps" / f"{run['run_id']}.server.pcap"
        assert server_pcap.is_file() and record["server_capture"]["captured"] > 0
        assert not list((both_ends / "pcaps").glob("*.partial"))


def test_the_two_ends_differ_by_what_the_lossy_path_dropped(both_ends):
    sent = arrived = 0
    for run in rows(both_ends / "runs.csv"):
        client_pcap = both_ends / run["pcap"]
        server_pcap = both_ends / "pcaps" / f"{run['run_id']}.server.pcap"
        for source, at_source, at_sink in ((SERVER_IP, server_pcap, client_pcap),
                                           (CLIENT_IP, client_pcap, server_pcap)):
            out, into = packets_from(at_source, source), packets_from(at_sink, source)
            assert 0 < into < out, (run["run_id"], source, out, into)
            sent, arrived = sent + out, arrived + into
    # 10 % Bernoulli loss on each direction of the path: the share lost within five standard
    # deviations of it
    lost = 1 - arrived / sent
    assert abs(lost - LOSS) <= 5 * math.sqrt(LOSS * (1 - LOSS) / sent), (lost, sent)


def test_testbed_ends_counts_both_ends_as_tshark_does_and_times_every_handshake(both_ends):
    ends = harness("ends", str(both_ends))
    assert ends.returncode == 0, ends.stderr[-2000:]
    crossings = rows(both_ends / "report" / "both-ends.csv")
    for run in rows(both_ends / "runs.csv"):
        client_pcap = both_ends / run["pcap"]
        server_pcap = both_ends / "pcaps" / f"{run['run_id']}.server.pcap"
        mine = [c for c in crossings if c["run_id"] == run["run_id"]]
        for direction, source, at_source, at_sink in (
                ("server to client", SERVER_IP, server_pcap, client_pcap),
                ("client to server", CLIENT_IP, client_pcap, server_pcap)):
            sent = sum(int(c["sent"]) for c in mine if c["direction"] == direction)
            arrived = sum(int(c["arrived"]) for c in mine if c["direction"] == direction)
            assert (sent, arrived) == (packets_from(at_source, source),
                                       packets_from(at_sink, source)), (run["run_id"], direction)
    handshakes = rows(both_ends / "report" / "handshakes.csv")
    naive = [r["run_id"] for r in rows(both_ends / "runs.csv") if r["variant"] == "sctp-naive"]
    # the control association and one data association per transfer (the listing, 3 files)
    assert sorted({h["run_id"] for h in handshakes}) == sorted(naive)
    assert len(handshakes) == 5 * len(naive)
    for shake in handshakes:
        assert int(shake["cookie_acks_arrived"]) >= 1 and float(shake["established_s"]) > 0
        # a round trip of the 1 ms path at least
        assert float(shake["answerer_sample_s"]) >= 0.002, shake
    assert "SCTP handshakes; the longest" in ends.stdout
