"""A run record cut short or edited by hand is named, kept aside and redone: `testbed run` says
which run's record it set aside and why, runs that run again under its own id (the bad copy
kept beside the new record), leaves every other run as it was, and ends with each point's
runs; the tables never crash on it. In virtual time."""
from __future__ import annotations

import json

from experiments.onhost.ledger import RECORD, SET_ASIDE
from tests.harness.conftest import harness, lan_experiment, rows

TINY = lan_experiment("damaged", "[0.0, 0.03]", "10K", files=3, runs=2)


def test_damaged_records_are_set_aside_and_their_runs_redone(tmp_path):
    experiment = tmp_path / "damaged.toml"
    experiment.write_text(TINY)
    results = tmp_path / "results"
    command = ("run", str(experiment), "--results", str(results), "--workers", "1",
               "--kernel", "uml-virtual")
    first = harness(*command, timeout=600)
    assert first.returncode == 0, first.stderr[-2000:]
    runs = results / "damaged" / "runs"
    records = {p.parent.name: p.read_bytes() for p in runs.glob(f"*/{RECORD}")}
    assert len(records) == 4
    cut, edited, *kept = sorted(records)
    (runs / cut / RECORD).write_bytes(records[cut][:len(records[cut]) // 3])
    record = json.loads(records[edited])
    del record["status"]
    (runs / edited / RECORD).write_text(json.dumps(record))
    damaged = {run_id: (runs / run_id / RECORD).read_bytes() for run_id in (cut, edited)}

    second = harness(*command, timeout=600)
    assert second.returncode == 0, second.stderr[-2000:]
    assert "Traceback" not in second.stderr + second.stdout
    said = second.stderr + second.stdout
    assert f"set aside the record of run {cut}: not valid JSON" in said, said[-2000:]
    assert f"set aside the record of run {edited}: no 'status' field" in said, said[-2000:]
    for run_id, content in damaged.items():
        set_aside = list((runs / run_id).glob(SET_ASIDE + "*"))
        assert [p.read_bytes() for p in set_aside] == [content]       # kept beside the redo
        redone = json.loads((runs / run_id / RECORD).read_text())
        assert redone["status"] == "ok" and redone["rep"] == int(run_id[-3:])
    for run_id in kept:
        assert (runs / run_id / RECORD).read_bytes() == records[run_id]   # not run again
    assert sorted(r["run_id"] for r in rows(results / "damaged" / "runs.csv")) == sorted(records)
    summary = rows(results / "damaged" / "summary.csv")
    assert [int(r["n"]) for r in summary] == [2, 2]
