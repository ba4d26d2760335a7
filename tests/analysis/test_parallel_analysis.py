"""Runs' pcaps analysed in parallel before the harness's loops: the same analysis.json as the
analysis of one run at a time, nothing redone once cached, only stale caches redone, and one
run's failure losing none of the others."""
from __future__ import annotations

import json
import os
from concurrent.futures import ProcessPoolExecutor

import pytest

from experiments.onhost import analyze, tables
from experiments.onhost.analyze import ANALYSIS, WORKERS_ENV, AnalysisError
from experiments.onhost.ledger import Ledger


def refuse(*_args, **_kwargs):
    raise AssertionError("work started although every analysis is cached")


def stamps(ledger: Ledger) -> dict[str, int]:
    return {p.parent.name: p.stat().st_mtime_ns for p in ledger.runs.glob(f"*/{ANALYSIS}")}


def forget_analyses(ledger: Ledger) -> None:
    for cached in ledger.runs.glob(f"*/{ANALYSIS}"):
        cached.unlink()


def test_parallel_analyses_equal_one_at_a_time(experiment, ledger, monkeypatch, capsys):
    records = ledger.finished()
    assert len(records) >= 4
    forget_analyses(ledger)
    expected = {run_id: analyze.analyse(experiment, ledger.run_dir(run_id), record)
                for run_id, record in records.items()}
    assert any(row["transfer_time_s"] is not None for row in expected.values())
    pools = []

    class Counted(ProcessPoolExecutor):
        def __init__(self, workers: int, **options) -> None:
            pools.append(workers)
            super().__init__(workers, **options)

    monkeypatch.setattr(analyze, "ProcessPoolExecutor", Counted)
    assert analyze.analyse_pending(experiment, ledger, workers=2) == len(records)
    assert pools == [2]
    for run_id, row in expected.items():
        written = json.loads((ledger.run_dir(run_id) / ANALYSIS).read_text())
        # through JSON, as the cache holds it
        assert written == json.loads(json.dumps({**row,
                                                 "analysis_version": analyze.version(experiment)}))
    assert not list(ledger.runs.glob("*/*.tmp"))
    assert capsys.readouterr().err == ""  # a few runs: no progress lines


def test_a_second_call_starts_no_work(experiment, ledger, monkeypatch):
    forget_analyses(ledger)
    analyze.analyse_pending(experiment, ledger, workers=2)
    before = stamps(ledger)
    assert len(before) == len(ledger.finished())
    monkeypatch.setattr(analyze, "ProcessPoolExecutor", refuse)
    monkeypatch.setattr(analyze, "analyse", refuse)
    assert analyze.analyse_pending(experiment, ledger, workers=2) == 0
    rows = tables.run_rows(experiment, ledger)  # its loop reads the caches only
    assert len(rows) == len(before)
    assert stamps(ledger) == before


def test_only_stale_analyses_are_redone_one_inline(experiment, ledger, monkeypatch):
    run_ids = sorted(ledger.finished())
    assert analyze.analyse_pending(experiment, ledger, workers=2) == 0  # the harness's, current
    before = stamps(ledger)
    monkeypatch.setattr(analyze, "ProcessPoolExecutor", refuse)  # one run: no pool

    older = ledger.run_dir(run_ids[0])  # the record rewritten after the analysis
    record_mtime = (older / "result.json").stat().st_mtime
    os.utime(older / ANALYSIS, (record_mtime - 10, record_mtime - 10))
    assert analyze.analyse_pending(experiment, ledger, workers=2) == 1
    assert (older / ANALYSIS).stat().st_mtime >= record_mtime

    other = ledger.run_dir(run_ids[1]) / ANALYSIS  # analysed by an earlier reading of pcaps
    other.write_text(json.dumps({**json.loads(other.read_text()),
                                 "analysis_version": "an earlier reading"}))
    assert analyze.analyse_pending(experiment, ledger, workers=2) == 1
    assert json.loads(other.read_text())["analysis_version"] == analyze.version(experiment)

    after = stamps(ledger)
    assert {r for r in run_ids if after[r] != before[r]} == set(run_ids[:2])


def test_a_failed_run_names_itself_and_loses_no_other(experiment, ledger):
    records = ledger.finished()
    forget_analyses(ledger)
    broken = sorted(records)[0]
    del records[broken]["params"]  # not a TsharkError: a bug, to be raised, not noted
    with pytest.raises(RuntimeError, match=broken):
        analyze.analyse_pending(experiment, ledger, workers=2, records=records)
    assert set(stamps(ledger)) == set(records) - {broken}


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5"])
def test_a_bad_worker_count_is_refused(monkeypatch, value):
    monkeypatch.setenv(WORKERS_ENV, value)
    with pytest.raises(AnalysisError, match=WORKERS_ENV):
        analyze.analysis_workers()


def test_the_worker_count_follows_the_environment(monkeypatch):
    monkeypatch.setenv(WORKERS_ENV, "3")
    assert analyze.analysis_workers() == 3
    assert analyze.analysis_workers(1) == 1  # an explicit count wins
    monkeypatch.delenv(WORKERS_ENV)
    assert analyze.analysis_workers() == (os.cpu_count() or 1)
