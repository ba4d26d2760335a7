"""A round's runs analysed while the round goes on (experiments/onhost/alongside.py): each run
as its record arrives and not before, into the same analysis.json the round's end would
write, in a process of the idle scheduling class; the round's end then starts no work."""
from __future__ import annotations

import json
import os
import time

from experiments.onhost import alongside, analyze
from experiments.onhost.analyze import ANALYSIS
from experiments.onhost.ledger import RECORD, Ledger


def await_analysed(ledger: Ledger, run_ids: list[str], limit_s: float = 120) -> None:
    deadline = time.monotonic() + limit_s
    while not all((ledger.run_dir(r) / ANALYSIS).exists() for r in run_ids):
        assert time.monotonic() < deadline, "the runs that arrived were not analysed"
        time.sleep(0.1)


def test_runs_are_analysed_as_their_records_arrive(experiment, ledger, monkeypatch):
    for cached in ledger.runs.glob(f"*/{ANALYSIS}"):
        cached.unlink()
    records = ledger.finished()
    run_ids = sorted(records)
    assert len(run_ids) >= 4
    expected = {run_id: analyze.analyse(experiment, ledger.run_dir(run_id), record)
                for run_id, record in records.items()}
    early, late = run_ids[: len(run_ids) // 2], run_ids[len(run_ids) // 2:]
    for run_id in late:  # still running in the kernel: no record on this host yet
        os.replace(ledger.run_dir(run_id) / RECORD, ledger.run_dir(run_id) / "held")
    with alongside.RoundAnalysis(experiment, ledger, run_ids, poll_s=0.1) as round_analysis:
        await_analysed(ledger, early)
        time.sleep(0.5)
        assert not any((ledger.run_dir(r) / ANALYSIS).exists() for r in late)
        for run_id in late:
            os.replace(ledger.run_dir(run_id) / "held", ledger.run_dir(run_id) / RECORD)
        await_analysed(ledger, late)
    assert round_analysis.analysed == len(run_ids)
    for run_id, row in expected.items():
        written = json.loads((ledger.run_dir(run_id) / ANALYSIS).read_text())
        assert written == json.loads(json.dumps({**row,
                                                 "analysis_version": analyze.version(experiment)}))

    def refuse(*_args, **_kwargs):
        raise AssertionError("the round's end analysed a run again")

    monkeypatch.setattr(analyze, "analyse", refuse)
    monkeypatch.setattr(analyze, "ProcessPoolExecutor", refuse)
    assert analyze.analyse_pending(experiment, ledger, workers=2) == 0


def test_the_analysis_runs_in_the_idle_scheduling_class(experiment, ledger):
    with alongside.RoundAnalysis(experiment, ledger, []) as round_analysis:
        assert round_analysis.pool is not None
        policy = round_analysis.pool.submit(os.sched_getscheduler, 0).result(timeout=60)
    assert policy == os.SCHED_IDLE
