"""The committed result set the analysis tests read (data/tinyanalysis/, data/README.md) is one
whole run of the experiment file beside it, current for today's analysis: every run's record,
pcap and row in runs.csv, the points that file expands to, and caches of today's analysis
version (else remake it: tests/analysis/data/remake.sh)."""
from __future__ import annotations

import csv
import json

from experiments.onhost import analyze, tables
from experiments.onhost.analyze import ANALYSIS
from experiments.onhost.ledger import Ledger


def test_the_set_is_the_experiment_beside_it(experiment, tiny_results):
    made = json.loads((tiny_results / "matrix.json").read_text())
    expanded = tables.matrix(experiment)
    for key in ("experiment", "workload", "topology", "point_columns", "points"):
        assert made[key] == json.loads(json.dumps(expanded[key])), key
    meta = json.loads((tiny_results / "meta.json").read_text())
    assert meta["experiment"]["name"] == experiment.name
    assert meta["backend"] and meta["kernel_release"] and meta["testbed"]["commit"]


def test_every_run_has_its_record_pcap_and_row(tiny_results):
    records = Ledger(tiny_results).finished()
    with (tiny_results / "runs.csv").open() as handle:
        rows = {row["run_id"]: row for row in csv.DictReader(handle)}
    pcaps = {p.stem for p in (tiny_results / "pcaps").glob("*.pcap")}
    assert set(records) == set(rows) == pcaps and len(records) == 16
    for run_id, row in rows.items():
        assert row["pcap"] == f"pcaps/{run_id}.pcap"
        assert int(row["pcap_bytes"]) == (tiny_results / row["pcap"]).stat().st_size
        assert records[run_id]["status"] == row["status"] == "ok"


def test_the_caches_are_of_todays_analysis(experiment, tiny_results):
    expected = analyze.version(experiment)
    stale = [path.parent.name for path in sorted(tiny_results.glob(f"runs/*/{ANALYSIS}"))
             if json.loads(path.read_text()).get("analysis_version") != expected]
    assert not stale, (f"analysis caches of another version than {expected}: remake the set "
                       f"with tests/analysis/data/remake.sh ({len(stale)} runs: {stale[:3]})")
    assert len(list(tiny_results.glob(f"runs/*/{ANALYSIS}"))) == 16
