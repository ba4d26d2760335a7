"""How a two-path session's failover is read (experiments/workloads/ftp_mget/paths.py), on
arrivals written by hand for each shape a failure takes on the wire."""
from __future__ import annotations

import pytest

from experiments.workloads.ftp_mget.paths import Arrival, PathReading, summary

FAILED = 10.0
WAIT = 0.01


def arrivals(*spans: tuple[float, float, int, bool], step: float = 0.004) -> PathReading:
    """Data every `step` seconds from each span's start to its end on its path, new or not."""
    out = []
    for start, end, path, new in spans:
        t = start
        while t < end - 1e-12:
            out.append(Arrival(round(t, 6), path, 1452, new))
            t += step
    out.sort(key=lambda a: a.t)
    return PathReading(out, out[-1].t if out else None)


def test_a_switch_after_one_timeout_is_one_stall_and_one_move():
    # path 1's queue drains for 0.2 s after the failure, path 2 carries the rest from 11 s
    reading = arrivals((0.0, FAILED + 0.2, 1, True), (FAILED + 1.0, 30.0, 2, True))
    row = summary(reading, FAILED, None, WAIT)
    assert row["failover_s"] == pytest.approx(1.0, abs=1e-6)
    assert row["failover_gap_s"] == pytest.approx(0.804, abs=0.005)
    assert row["stall_s"] == pytest.approx(0.804, abs=0.005)
    assert row["stalled_s"] == pytest.approx(row["stall_s"], abs=1e-9)
    assert row["switches_to_path2"] == 1 and row["spurious_switches"] == 0
    assert row["data_path1"] > 0 and row["rtx_path1"] == 0
    assert 0.6 < row["path2_new_share"] < 0.7


def test_retransmissions_every_rto_before_the_path_is_declared_failed_add_up():
    # RFC 4960 without the potentially-failed state: one chunk over path 2 at each T3 (1, 2,
    # 4 s apart), then the whole transfer over path 2 once path 1 is declared failed
    spans = [(0.0, FAILED, 1, True)]
    t = FAILED
    for rto in (1.0, 2.0, 4.0):
        t += rto
        spans.append((t, t + 0.001, 2, True))
    spans.append((t + 8.0, t + 20.0, 2, True))
    row = summary(arrivals(*spans), FAILED, None, WAIT)
    assert row["failover_s"] == pytest.approx(1.0, abs=0.005)
    assert row["stall_s"] == pytest.approx(8.0, abs=0.005)
    assert row["stalled_s"] == pytest.approx(1 + 2 + 4 + 8, abs=0.02)
    # new data moved to path 2 once, at the first retransmission; nothing spurious
    assert row["switches_to_path2"] == 1 and row["spurious_switches"] == 0


def test_a_connection_that_never_resumes_stalls_to_the_last_packet():
    # what the router's queue held still arrives for 0.2 s after the failure
    reading = arrivals((0.0, FAILED + 0.2, 1, True))
    reading.last_packet_s = FAILED + 300.0
    row = summary(reading, FAILED, None, WAIT)
    assert row["failover_s"] is None and row["failover_gap_s"] is None
    assert row["stall_s"] == pytest.approx(299.8, abs=0.01)
    assert row["data_path2"] == 0 and row["path2_new_share"] == 0


def test_new_data_on_path_2_while_path_1_is_up_is_spurious():
    # a move at 3 s (before any failure) and back, then the failure
    reading = arrivals((0.0, 3.0, 1, True), (3.0, 4.0, 2, True), (4.0, FAILED, 1, True),
                       (FAILED + 1.0, 20.0, 2, True))
    row = summary(reading, FAILED, None, WAIT)
    assert row["switches_to_path2"] == 2 and row["spurious_switches"] == 1


def test_without_a_failure_only_the_paths_are_counted_and_every_move_is_spurious():
    # retransmissions over path 2 (as E2's hosts sent them over their control network) are
    # not moves of new data
    reading = arrivals((0.0, 5.0, 1, True), (2.0, 2.01, 2, False), (5.0, 6.0, 2, True))
    row = summary(reading, None, None, WAIT)
    assert row["rtx_path2"] == 3 and row["switches_to_path2"] == 1
    assert row["spurious_switches"] == 1
    assert row["failover_s"] is None and row["stall_s"] is None


def test_the_return_of_the_primary_is_timed_to_its_first_new_data():
    reading = arrivals((0.0, FAILED, 1, True), (FAILED + 1.0, 25.5, 2, True),
                       (25.5, 40.0, 1, True))
    row = summary(reading, FAILED, 25.0, WAIT)
    assert row["back_to_primary_s"] == pytest.approx(0.5, abs=0.005)
    # back on path 1 after its return is not a move to path 2
    assert row["switches_to_path2"] == 1 and row["spurious_switches"] == 0
