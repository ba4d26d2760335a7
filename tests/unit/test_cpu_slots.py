"""One host CPU per running kernel: claimed through a lock file per CPU, held by whoever holds
the lock's file (the kernel itself, once started), and none when every CPU is held."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from topology.kernel import cpu_slots


@pytest.fixture
def locks(tmp_path, monkeypatch):
    monkeypatch.setenv(cpu_slots.LOCK_DIR_ENV, str(tmp_path / "locks"))
    monkeypatch.delenv(cpu_slots.ENV, raising=False)
    return tmp_path / "locks"


def test_each_claim_gets_a_cpu_of_its_own_until_none_is_left(locks):
    allowed = sorted(os.sched_getaffinity(0))
    claims = [cpu_slots.claim() for _ in allowed]
    try:
        assert [c.cpu for c in claims] == allowed
        assert cpu_slots.claim() is None  # every CPU held: the kernel runs unpinned
    finally:
        for c in claims:
            c.release()
    again = cpu_slots.claim()
    assert again is not None and again.cpu == allowed[0]
    again.release()


def test_a_child_holding_the_lock_keeps_the_cpu_after_the_claimer_lets_go(locks):
    with cpu_slots.claimed() as held:
        child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                                 stdin=subprocess.PIPE, pass_fds=(held.fd,))
    try:
        taken = cpu_slots.claim()
        assert taken is None or taken.cpu != held.cpu
        if taken:
            taken.release()
    finally:
        child.communicate(b"")
    after = cpu_slots.claim()
    assert after is not None and after.cpu == held.cpu  # the child's end freed it
    after.release()


def test_pinning_can_be_turned_off(locks, monkeypatch):
    monkeypatch.setenv(cpu_slots.ENV, "0")
    assert cpu_slots.claim() is None
    assert cpu_slots.pinned_argv(["linux.uml"], None) == ["linux.uml"]


def test_a_machine_without_taskset_runs_its_kernels_unpinned(locks, monkeypatch):
    monkeypatch.setenv("PATH", str(locks.parent / "empty"))  # nowhere to find taskset
    assert cpu_slots.claim() is None
    assert not locks.exists() or not list(locks.iterdir())  # and no CPU was taken for it


def test_the_pinned_argv_runs_on_the_claimed_cpu(locks):
    with cpu_slots.claimed() as held:
        argv = cpu_slots.pinned_argv(
            [sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"], held)
        out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    assert out.strip() == f"[{held.cpu}]"
