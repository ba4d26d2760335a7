"""`testbed bench sctp-stacks`' tables (experiments/benchmarks/sctp_stacks.py) from hand-made
runs: the kernel-switch sender runs only on a kernel that has the switch, and its ratios to
the kernel's SCTP and to usrsctp are taken within each repetition."""
from __future__ import annotations

import pytest

from experiments.benchmarks.sctp_stacks import senders_for, tables
from experiments.benchmarks.sctp_stacks_job import KERNEL_SWITCH_SENDERS, SENDERS

SWITCHED = next(iter(KERNEL_SWITCH_SENDERS))


def run(sender: str, rep: int, mbit: float) -> dict:
    return {"condition": "lan-loss0.03", "rep": rep, "sender": sender, "ok": True,
            "goodput_mbit": mbit}


def test_the_switch_sender_needs_the_projects_kernel():
    assert senders_for("uml-virtual") == [*SENDERS, SWITCHED]
    assert senders_for("uml-built") == [*SENDERS, SWITCHED]
    assert senders_for("uml") == list(SENDERS)
    assert senders_for("host") == list(SENDERS)


def test_the_switch_senders_ratios_are_paired_by_repetition():
    goodput = {"bulkflow-kernel": (2.0, 2.5), "bulkflow-usrsctp": (3.0, 2.5),
               "tsctp": (3.0, 2.5), SWITCHED: (2.4, 2.5)}
    bulk = [run(sender, rep, mbit[rep]) for sender, mbit in goodput.items() for rep in (0, 1)]
    cell = tables({}, bulk, [], cpu=False)["lan-loss0.03"]
    assert cell["bulk_goodput_mbit"][SWITCHED]["n"] == 2
    assert cell["switched_over_kernel_goodput"]["runs"] == pytest.approx([1.2, 1.0])
    assert cell["usrsctp_over_switched_goodput"]["runs"] == pytest.approx([1.25, 1.0])
    assert cell["usrsctp_over_kernel_goodput"]["median"] == pytest.approx(1.25)


def test_without_the_switch_sender_there_is_no_switched_ratio():
    bulk = [run(sender, 0, 2.0) for sender in SENDERS]
    cell = tables({}, bulk, [], cpu=False)["lan-loss0.03"]
    assert "switched_over_kernel_goodput" not in cell
    assert set(cell["bulk_goodput_mbit"]) == set(SENDERS)
