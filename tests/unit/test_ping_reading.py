"""ping-rtt's reading (experiments/workloads/ping_rtt/) on inputs made for the purpose: echo
requests paired with their replies in a capture written here (Linux cooked v2 frames, as a
capture of `-i any` writes them), ping's output read, the two compared, a run's row flagged
where they disagree, and the [ping] table refused when out of range."""
from __future__ import annotations

import struct
from pathlib import Path

import pytest

from experiments.spec import SpecError, load
from experiments.workloads.ping_rtt.measure import (
    Echoes,
    disagreement,
    pair_echoes,
    pcap_echoes,
    read_ping,
)
from experiments.workloads.ping_rtt.workload import measure

CLIENT1, SERVER1 = bytes([10, 1, 1, 1]), bytes([10, 1, 2, 1])
CLIENT2, SERVER2 = bytes([10, 2, 1, 1]), bytes([10, 2, 2, 1])
LINKTYPE_LINUX_SLL2 = 276


def echo(src: bytes, dst: bytes, kind: int, ident: int, seq: int) -> bytes:
    """An IPv4 ICMP echo request (kind 8) or reply (0) in a Linux cooked v2 frame."""
    icmp = struct.pack(">BBHHH", kind, 0, 0, ident, seq) + bytes(56)
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(icmp), 0, 0x4000, 64, 1, 0, src, dst)
    sll2 = struct.pack(">HHIHBB8s", 0x0800, 0, 2, 1, 4 if kind == 8 else 0, 6, bytes(8))
    return sll2 + ip + icmp


def write_pcap(path: Path, packets: list[tuple[float, bytes]]) -> Path:
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, LINKTYPE_LINUX_SLL2)
    for t, frame in packets:
        out += struct.pack("<IIII", int(t), round((t % 1) * 1e6), len(frame), len(frame)) + frame
    path.write_bytes(out)
    return path


PING_OUTPUT = """PING 10.1.2.1 (10.1.2.1) 56(84) bytes of data.
64 bytes from 10.1.2.1: icmp_seq=1 ttl=63 time=20.5 ms
64 bytes from 10.1.2.1: icmp_seq=3 ttl=63 time=20.7 ms

--- 10.1.2.1 ping statistics ---
3 packets transmitted, 2 received, 33.3333% packet loss, time 401ms
rtt min/avg/max/mdev = 20.512/20.611/20.710/0.099 ms
"""


@pytest.fixture
def capture(tmp_path: Path) -> Path:
    """Path 1: three requests, the second unanswered, the third answered twice; path 2: one
    echo, and a reply whose request came before the capture."""
    return write_pcap(tmp_path / "ping.pcap", [
        (100.000, echo(CLIENT1, SERVER1, 8, 7, 1)),
        (100.001, echo(CLIENT2, SERVER2, 8, 9, 1)),
        (100.0205, echo(SERVER1, CLIENT1, 0, 7, 1)),
        (100.0221, echo(SERVER2, CLIENT2, 0, 9, 1)),
        (100.030, echo(SERVER2, CLIENT2, 0, 9, 99)),
        (100.200, echo(CLIENT1, SERVER1, 8, 7, 2)),
        (100.400, echo(CLIENT1, SERVER1, 8, 7, 3)),
        (100.4207, echo(SERVER1, CLIENT1, 0, 7, 3)),
        (100.4300, echo(SERVER1, CLIENT1, 0, 7, 3)),
    ])


def test_requests_pair_with_their_replies_per_peer(capture):
    seen = pcap_echoes(capture, ["10.1.2.1", "10.2.2.1"])
    path1, path2 = seen["10.1.2.1"], seen["10.2.2.1"]
    assert (path1.requests, path1.lost) == (3, 1)
    assert path1.rtts_ms == pytest.approx((20.5, 20.7), abs=1e-3)
    assert path1.mean_ms == pytest.approx(20.6, abs=1e-3)
    assert path1.max_ms == pytest.approx(20.7, abs=1e-3)
    assert (path2.requests, path2.lost) == (1, 0)          # the stray reply is not counted
    assert path2.rtts_ms == pytest.approx((21.1,), abs=1e-3)


def test_the_identifier_separates_two_pings_to_one_peer():
    rows = [["1.0", "10.1.1.1", "10.1.2.1", "8", "1", "1"],
            ["1.0", "10.1.1.1", "10.1.2.1", "8", "2", "1"],
            ["1.010", "10.1.2.1", "10.1.1.1", "0", "2", "1"]]
    echoes = pair_echoes(rows, "10.1.2.1")
    assert (echoes.requests, echoes.lost) == (2, 1)
    assert echoes.rtts_ms == pytest.approx((10.0,))


def test_ping_s_output_is_read_and_a_killed_ping_is_none():
    report = read_ping(PING_OUTPUT)
    assert report is not None
    assert (report.transmitted, report.received, report.lost) == (3, 2, 1)
    assert (report.mean_ms, report.max_ms) == (20.611, 20.710)
    assert report.rtts_ms == {1: 20.5, 3: 20.7}
    assert read_ping("PING 10.1.2.1 (10.1.2.1) 56(84) bytes of data.\n") is None
    everything_lost = read_ping("--- x ping statistics ---\n"
                                "2 packets transmitted, 0 received, 100% packet loss\n")
    assert everything_lost is not None and everything_lost.mean_ms is None


def test_pcap_and_ping_agree_within_the_tolerance_and_not_beyond():
    ping = read_ping(PING_OUTPUT)
    assert ping is not None
    assert disagreement(Echoes(3, (20.5, 20.7)), ping, 0.5, 0.02) == []
    off = disagreement(Echoes(3, (19.5, 19.7)), ping, 0.5, 0.02)
    assert off == ["mean RTT: ping's +1.011 ms off the pcap's"]
    counts = disagreement(Echoes(4, (20.5, 20.7)), ping, 0.5, 0.02)
    assert counts == ["4 requests in the pcap, 3 sent by ping", "2 lost in the pcap, 1 by ping"]


def test_a_run_s_row_is_flagged_where_pcap_and_ping_disagree(capture, tmp_path):
    (tmp_path / "ping-path1.out").write_text(PING_OUTPUT)
    (tmp_path / "ping-path2.out").write_text(
        "64 bytes from 10.2.2.1: icmp_seq=1 ttl=63 time=25.0 ms\n"
        "1 packets transmitted, 1 received, 0% packet loss, time 0ms\n"
        "rtt min/avg/max/mdev = 25.000/25.000/25.000/0.000 ms\n")
    row = measure(tmp_path, capture)
    assert row["rtt_mean_ms"] == pytest.approx(20.6, abs=1e-3) and row["lost"] == 1
    assert (row["ping_rtt_mean_ms"], row["ping_lost"]) == (20.611, 1)
    assert row["path2_rtt_mean_ms"] == pytest.approx(21.1, abs=1e-3)
    assert row["flagged"] is True                          # path 2: ping says 25 ms
    assert row["pcap_ping_diff_ms"] == pytest.approx(3.9, abs=1e-3)
    assert row["notes"] == ["path 2: mean RTT: ping's +3.900 ms off the pcap's"]


def test_a_run_without_its_pcap_keeps_ping_s_numbers(tmp_path):
    (tmp_path / "ping-path1.out").write_text(PING_OUTPUT)
    row = measure(tmp_path, None)
    assert row["rtt_mean_ms"] is None and row["ping_rtt_mean_ms"] == 20.611
    assert row["notes"] == ["path 1: no pcap", "path 2: no pcap"]


EXPERIMENT = """name = "ping-check"
workload = "ping-rtt"
topology = "dualpath"
[network]
queue = "100p"
[[network.paths]]
name = "p"
rate = "10Mbit"
delay = "10ms"
[matrix]
loss = [0.0, 0.05]
{matrix}
[ping]
{ping}
"""


@pytest.mark.parametrize(("matrix", "ping", "error"), [
    ("", "count = 0", "ping.count: 1 to 10000 echo requests per path"),
    ("", "interval_s = 0.001", "ping.interval_s: 0.01 s to 10.0 s between requests"),
    ("", "count = 2.5", "ping.count: must be int"),
    ("", "size = 100", "ping.size: unknown key"),
    ('tcp_profiles = ["tcp-newreno", "tcp-linux"]', "", "matrix.tcp_profiles: ping sends no TCP"),
])
def test_the_ping_table_is_refused_out_of_range(tmp_path, matrix, ping, error):
    file = tmp_path / "ping-check.toml"
    file.write_text(EXPERIMENT.format(matrix=matrix, ping=ping))
    with pytest.raises(SpecError, match=error.replace(".", r"\.")):
        load(str(file))


def test_points_are_paths_by_loss_only(tmp_path):
    file = tmp_path / "ping-check.toml"
    file.write_text(EXPERIMENT.format(matrix="", ping="count = 5"))
    assert [p.key for p in load(str(file)).points()] == ["p_loss0", "p_loss0.05"]
