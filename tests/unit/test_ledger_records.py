"""A run record cut short or edited by hand (experiments/onhost/ledger.py) is named on stderr,
moved aside as result.json.bad-<time> with its bytes as they were, and its run counts as not
finished; the tables are written without it and never crash. On the committed result set of
tests/analysis/data (no kernel): `testbed tables` over damaged records."""
from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path

import pytest

from experiments.inkernel.kernel_batch import clear_attempt
from experiments.onhost.ledger import COUNTED, ENVELOPE, RECORD, SET_ASIDE, Ledger, record_problem
from tests.analysis.conftest import TINY_EXPERIMENT, TINY_RESULTS, private_copy
from tests.conftest import REPO

PYTHON = "/usr/bin/python3"


def rows(path: Path) -> list[dict[str, str]]:
    with path.open() as handle:
        return list(csv.DictReader(handle))


def damage(ledger: Ledger) -> dict[str, bytes]:
    """Five records damaged five ways; what each now holds, by run id."""
    edits = (lambda text: text[:len(text) // 2],                               # cut short
             lambda text: json.dumps({k: v for k, v in json.loads(text).items() if k != "rep"}),
             lambda text: json.dumps({**json.loads(text), "status": None}),
             lambda text: "[]",
             lambda text: "")                                                  # emptied
    run_ids = sorted(p.name for p in ledger.runs.iterdir())[::3][:len(edits)]
    damaged = {}
    for run_id, edit in zip(run_ids, edits, strict=True):
        path = ledger.run_dir(run_id) / RECORD
        path.write_text(edit(path.read_text()))
        damaged[run_id] = path.read_bytes()
    return damaged


def test_tables_name_and_set_aside_damaged_records_and_count_the_rest(tmp_path):
    root = private_copy(TINY_RESULTS, tmp_path / "results")
    ledger = Ledger(root)
    before = {row["point"]: int(row["n"]) for row in rows(root / "summary.csv")}
    damaged = damage(ledger)

    tables = subprocess.run([PYTHON, "-m", "testbed", "tables", str(TINY_EXPERIMENT),
                             "--results", str(root.parent)], cwd=REPO, capture_output=True,
                            text=True, timeout=300)
    assert tables.returncode == 0, tables.stderr
    assert "Traceback" not in tables.stderr
    for run_id, content in damaged.items():
        line = next(line for line in tables.stderr.splitlines() if f"run {run_id}:" in line)
        assert "set aside the record" in line and "testbed run" in line and "redoes it" in line
        assert not (ledger.run_dir(run_id) / RECORD).exists()
        kept = list(ledger.run_dir(run_id).glob(SET_ASIDE + "*"))
        assert [p.read_bytes() for p in kept] == [content]   # nothing lost
        assert kept[0].name in line
    assert "not valid JSON" in tables.stderr and "no 'rep' field" in tables.stderr
    assert "'status' is None" in tables.stderr and "not a JSON object" in tables.stderr

    runs = rows(root / "runs.csv")
    assert len(runs) == 16 - len(damaged)
    assert not {row["run_id"] for row in runs} & set(damaged)
    after = {row["point"]: int(row["n"]) for row in rows(root / "summary.csv")}
    for point, n in before.items():
        assert after[point] == n - sum(run_id.startswith(point + "_r") for run_id in damaged)

    again = subprocess.run([PYTHON, "-m", "testbed", "tables", str(TINY_EXPERIMENT),
                            "--results", str(root.parent)], cwd=REPO, capture_output=True,
                           text=True, timeout=300)
    assert again.returncode == 0 and "set aside" not in again.stderr   # named once


@pytest.mark.parametrize(("record", "required", "problem"), [
    ({"point": "p", "status": "ok"}, ENVELOPE, None),
    ({"point": "p", "status": "ok"}, COUNTED, "no 'rep' field"),
    ({"point": "p", "status": "ok", "rep": "1", "params": {}}, COUNTED, "'rep' is '1'"),
    ({"point": "p", "status": "ok", "rep": True, "params": {}}, COUNTED, "'rep' is True"),
    ({"point": "p", "status": "ok", "rep": 2, "params": {}}, COUNTED, "do not make its run id"),
    ({"point": "p", "status": "ok", "rep": 1, "params": {}}, COUNTED, None),
    ({"point": "p", "status": "ok", "rep": 1, "params": []}, COUNTED, "'params' is []"),
    ({"id": "q_r001", "point": "p", "status": "ok"}, ENVELOPE, "names run 'q_r001'"),
    ("text", ENVELOPE, "not a JSON object but str"),
])
def test_what_a_record_needs_to_count(record, required, problem):
    found = record_problem("p_r001", record, required)
    assert found == problem if problem is None else problem in found


def test_a_merge_needs_less_of_a_record_than_the_tables(tmp_path):
    """A record with its point and status is a finished run for a merge or a bundle; the
    tables also need its repetition and parameters, or it is set aside."""
    ledger = Ledger(tmp_path / "exp")
    ledger.run_dir("p_r001").mkdir(parents=True)
    (ledger.run_dir("p_r001") / RECORD).write_text(json.dumps({"point": "p", "status": "ok"}))
    assert list(ledger.finished()) == ["p_r001"]
    assert ledger.counted() == {}
    assert not ledger.is_finished("p_r001")
    assert len(list(ledger.run_dir("p_r001").glob(SET_ASIDE + "*"))) == 1


def test_a_redo_keeps_the_records_set_aside(tmp_path):
    """inkernel/kernel_batch.py empties a run's folder before its attempt, but for records
    the host set aside."""
    run_dir = tmp_path / "p_r001"
    (run_dir / "sub").mkdir(parents=True)
    for name in ("client.jsonl", "analysis.json", RECORD + ".tmp", SET_ASIDE + "20260101T000000Z"):
        (run_dir / name).write_text(name)
    clear_attempt(run_dir)
    assert [p.name for p in run_dir.iterdir()] == [SET_ASIDE + "20260101T000000Z"]
    clear_attempt(tmp_path / "new")
    assert (tmp_path / "new").is_dir()
