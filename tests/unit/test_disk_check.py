"""A round is refused before it starts when its captures would not fit on the results' disk
(experiments/onhost/disk.py): each run is expected to weigh what its point's captures weighed
so far, or the workload's estimate for a point without any; finished runs are not counted; the
error says how much is needed, how much is free and what to do. A disk that fills during a
round is found under the error it caused, and its error says where, how full and what to do."""
from __future__ import annotations

import errno
import json
from collections import namedtuple

import pytest

from experiments import spec
from experiments.onhost import disk
from experiments.onhost.coordinator import Harness, HarnessError
from experiments.onhost.ledger import RECORD, Ledger

Usage = namedtuple("Usage", "total used free")


@pytest.fixture
def ledger(tmp_path):
    ledger = Ledger(tmp_path / "exp")
    ledger.prepare()
    for run_id, size in (("a_r001", 1000), ("a_r002", 3000)):
        ledger.run_dir(run_id).mkdir()
        (ledger.run_dir(run_id) / RECORD).write_text(json.dumps({"point": "a", "status": "ok"}))
        ledger.pcap(run_id).write_bytes(b"\0" * size)
    return ledger


ORDERS = [{"id": "a_r001", "point": "a"},          # finished: not counted
          {"id": "a_r003", "point": "a"}, {"id": "a_r004", "point": "a"},
          {"id": "b_r001", "point": "b"}]


def with_free(monkeypatch, free):
    monkeypatch.setattr(disk.shutil, "disk_usage", lambda path: Usage(0, 0, free))


def test_each_run_weighs_its_point_s_mean_or_the_workload_s_estimate(ledger):
    assert disk.written_by_point(ledger) == {"a": 2000}
    todo = ORDERS[1:]
    assert disk.expected_bytes(todo, {"a": 2000}, lambda order: 500) == 4500
    assert disk.expected_bytes(todo, {"a": 2000}, lambda order: None) == 4000


def test_a_round_that_fits_goes_ahead_and_one_that_does_not_is_refused(ledger, monkeypatch):
    with_free(monkeypatch, disk.MARGIN_BYTES + 4500)
    assert disk.shortfall(ORDERS, ledger, lambda order: 500, "round 2") is None
    with_free(monkeypatch, disk.MARGIN_BYTES + 4499)
    problem = disk.shortfall(ORDERS, ledger, lambda order: 500, "round 2")
    assert problem and "round 2" in problem and "(3 runs)" in problem
    assert str(ledger.root) in problem and "resumes" in problem


def test_the_harness_refuses_the_round_before_any_kernel_boots(tmp_path, monkeypatch):
    harness = Harness(spec.load("smoke"), ledger=Ledger(tmp_path / "smoke"))
    harness.ledger.prepare()
    orders = [{"id": point.run_id(1), "point": key} for key, point in harness.points.items()]
    expected = sum(harness.capture_estimate(order) or 0 for order in orders)
    assert expected > 0   # ftp-mget estimates its captures
    with_free(monkeypatch, expected)
    monkeypatch.setattr(harness, "execute_here", lambda *args: pytest.fail("a kernel booted"))
    with pytest.raises(HarnessError, match=r"round 1 would write about [\d.]+ [kMG]B of captures"):
        harness.execute(orders, "round 1")


def test_a_write_refused_for_want_of_room_is_found_under_what_it_caused():
    full = OSError(errno.ENOSPC, "No space left on device", "/results/x/pcaps/r.pcap")
    try:
        try:
            raise full
        except OSError as error:
            raise RuntimeError("analysing run r failed") from error
    except RuntimeError as wrapped:
        assert disk.no_space(wrapped) is full
    assert disk.no_space(OSError(errno.EACCES, "Permission denied")) is None
    assert disk.no_space(ValueError("x")) is None


def test_the_full_disk_message_says_where_how_full_and_what_to_do(ledger, monkeypatch):
    ledger.pcap("a_r009").write_bytes(b"\0" * 5000)
    with_free(monkeypatch, 0)
    refused = OSError(errno.ENOSPC, "No space left on device", str(ledger.work / "x.json"))
    message = disk.full_message(ledger, refused)
    assert message.startswith(f"the results disk is full (writing {ledger.work / 'x.json'}): "
                              f"{ledger.root} is on ")
    assert "0 bytes free" in message and "pcaps/ 9.0 kB" in message
    assert "the runs in progress wrote no record and are redone" in message
    assert message.endswith("then run the same command again")


def test_the_margin_kept_free_can_be_set(ledger, tmp_path, monkeypatch):
    monkeypatch.setenv(disk.MARGIN_ENV, "1")
    with_free(monkeypatch, 1024**2 + 4500)
    assert disk.shortfall(ORDERS, ledger, lambda order: 500, "round 2") is None
    monkeypatch.setenv(disk.MARGIN_ENV, "lots")
    harness = Harness(spec.load("smoke"), ledger=Ledger(tmp_path / "smoke"))
    harness.ledger.prepare()
    orders = [{"id": point.run_id(1), "point": key} for key, point in harness.points.items()]
    monkeypatch.setattr(harness, "execute_here", lambda *args: pytest.fail("a kernel booted"))
    with pytest.raises(HarnessError, match=f"{disk.MARGIN_ENV}='lots': expected a whole number"):
        harness.execute(orders, "round 1")
