"""The fairness study's numbers on inputs worked out by hand: Jain's index, SCTP's gain over TCP,
a receiver's steady-state window, each flow's steady-state window and segments sent, and SCTP's
delivered bytes from cumulative TSN acks."""
from __future__ import annotations

import pytest

from experiments.tshark.transport import DataChunk, _tsns_to_bytes, parse_sctp_frame
from experiments.workloads.bulk_flows.workload import (
    Settings,
    count_timeouts,
    gain_pct,
    jain_index,
    plan_flows,
    receiver_window,
    sender_options,
    steady_congestion,
)


def test_jain_index_of_equal_and_of_unequal_shares():
    assert jain_index([2.0, 2.0, 2.0, 2.0]) == pytest.approx(1.0)
    assert jain_index([1.0, 0.0, 0.0, 0.0]) == pytest.approx(0.25)   # one flow has it all: 1/n
    # (1 + 3)^2 / (2 * (1 + 9)) = 16 / 20
    assert jain_index([1.0, 3.0]) == pytest.approx(0.8)
    assert jain_index([]) is None and jain_index([0.0, 0.0]) is None


def test_sctp_gain_is_the_percentage_increase_of_the_means():
    assert gain_pct(sctp=[1.5, 1.5], tcp=[1.0, 1.0]) == pytest.approx(50.0)
    assert gain_pct(sctp=[0.5], tcp=[1.0, 1.0]) == pytest.approx(-50.0)
    assert gain_pct(sctp=[1.0], tcp=[]) is None


def test_the_window_runs_between_samples_inside_it():
    samples = [(t / 10, 1000.0 * t) for t in range(0, 101)]   # 10 kB/s, a sample every 0.1 s
    edges = receiver_window(samples, (2.05, 9.0))
    assert edges == [(pytest.approx(2.1), 21000.0), (pytest.approx(9.0), 90000.0)]
    assert receiver_window(samples, (2.0, 12.0)) is None       # samples stop 2 s short
    assert receiver_window(samples[:3], (0.0, 0.2)) is not None


def test_sctp_delivered_bytes_count_whole_messages_only():
    # two messages of three chunks each, 1488 bytes but the last of each 100
    chunks = {}
    for tsn, (length, last) in enumerate([(1488, False), (1488, False), (100, True),
                                          (1488, False), (1488, False), (100, True)], start=10):
        chunks[tsn] = DataChunk(0, 0, tsn, length, b"", last)
    acks = [(1.0, 10), (2.0, 12), (3.0, 14), (4.0, 15), (5.0, 99)]
    assert _tsns_to_bytes(acks, chunks) == [(1.0, 0), (2.0, 3076), (3.0, 3076), (4.0, 6152)]


def test_a_cut_short_sctp_frame_still_gives_its_chunk_header():
    ethernet = bytes(12) + b"\x08\x00"
    ip = bytes([0x45]) + bytes(11) + bytes([10, 1, 1, 1]) + bytes([10, 2, 1, 1])
    common = (40000).to_bytes(2, "big") + (5001).to_bytes(2, "big") + bytes(8)
    data = bytes([0, 0x03]) + (1488 + 16).to_bytes(2, "big") + (77).to_bytes(4, "big") \
        + bytes(8) + b"payload..."
    frame = parse_sctp_frame(ethernet + ip + common + data)     # 128 bytes of 1550 captured
    assert (frame.dst, frame.src_port, frame.dst_port) == ("10.2.1.1", 40000, 5001)
    assert [(c.tsn, c.length, c.ends_message) for c in frame.chunks] == [(77, 1488, True)]


def test_flows_alternate_protocols_and_keep_their_start_offsets():
    settings = Settings(500, 50, 1.0, 1488, 65536, False, 100)
    flows = plan_flows(4, settings, "geo-4_loss0.015_4flows_tcp-linux_r001")
    assert [f["proto"] for f in flows] == ["tcp", "sctp", "tcp", "sctp"]
    assert [f["receiver"] for f in flows] == ["d1", "d2", "d3", "d4"]
    assert all(0 <= f["offset_s"] < 1.0 for f in flows)
    assert flows == plan_flows(4, settings, "geo-4_loss0.015_4flows_tcp-linux_r001")
    assert flows != plan_flows(4, settings, "geo-4_loss0.015_4flows_tcp-linux_r002")
    # 1488 bytes of payload: TCP's segment size counts its 12 bytes of timestamps
    assert sender_options(settings, "tcp", 900)[:2] == ["--maxseg", "1500"]
    assert sender_options(settings, "sctp", 900)[:2] == ["--maxseg", "1488"]


def test_a_timeout_is_a_cwnd_falling_to_one_segment_not_a_halving(tmp_path):
    rows = ["t_s,flow,proto,phase,bytes,cwnd,ssthresh,srtt_ms,rto_ms,unacked,retrans"]
    # flow 1: halvings by fast retransmit (never under two segments), one timeout
    for t, cwnd in enumerate([14880, 29760, 14880, 7440, 2976, 2976, 1488, 2976, 5952]):
        rows.append(f"{t},1,tcp,send,0,{cwnd},,500,1000,1,0")
    # flow 2: SCTP, two timeouts (one MTU), a sample with no cwnd in between
    for t, cwnd in enumerate([4380, 8760, 1540, 3080, "", 6160, 1540]):
        rows.append(f"{t},2,sctp,send,0,{cwnd},,,3000,1,0")
    (tmp_path / "cwnd.csv").write_text("\n".join(rows) + "\n")
    assert count_timeouts(tmp_path, 1488) == {1: 1, 2: 2}
    assert count_timeouts(tmp_path / "absent", 1488) == {}


def test_steady_state_cwnd_and_segments_are_read_inside_the_window_only(tmp_path):
    rows = ["t_s,flow,proto,phase,bytes,cwnd,ssthresh,srtt_ms,rto_ms,unacked,retrans"]
    for t in range(0, 31):            # flow 1: cwnd 10 segments, 100 segments a second
        rows.append(f"{t},1,tcp,send,{100 * 1000 * t},{10 * 1000},,500,1000,3,0")
    for t in range(0, 31):            # flow 2: cwnd 4 then 8, 50 segments a second
        rows.append(f"{t},2,sctp,send,{50 * 1000 * t},{(4 if t < 20 else 8) * 1000},,500,1000,3,0")
    rows.append("5,3,tcp,send,0,,,,,,")   # a flow with one sample, without its window, is left out
    (tmp_path / "cwnd.csv").write_text("\n".join(rows) + "\n")
    seen = steady_congestion(tmp_path, (10.0, 29.0), 1000)
    assert set(seen) == {1, 2}
    assert seen[1] == pytest.approx((10.0, 10_000.0))
    # 10..19 at 4, 20..29 at 8 (29 is the window's end): mean 6
    assert seen[2] == pytest.approx((6.0, 5_000.0))
