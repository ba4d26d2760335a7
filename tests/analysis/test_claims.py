"""The findings as data: every claims file reads and names only what its experiment has, a
claim that names anything else is refused with file, key and reason, and the scorecard pairs
points, per stack and TCP profile, on a hand-made result set."""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import pytest

from analysis import scorecard
from analysis.scorecard import rules
from experiments import claims, spec


def test_every_published_finding_is_a_claim():
    every = claims.load_all()
    by_study = {s: [c for c in every if c.study == s] for s in ("E1", "E2", "E3", "E4", "E5")}
    assert all(by_study.values()), {s: len(c) for s, c in by_study.items()}
    assert {c.kind for c in every} >= {"direction", "ratio", "same", "value", "premise"}
    for claim in every:
        assert claim.measurable or claim.unmeasured
        if claim.measurable:
            points = claims.needed_points([claim], spec.load(claim.experiment))
            assert points, claim.id


def write_claims(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "E1.toml"
    path.write_text('study = "E1"\nexperiment = "multistream"\nmetric = "transfer_time_s"\n'
                    + body)
    return path


GOOD = """
[[claim]]
id = "x"
section = "1"
words = "w"
kind = "direction"
compare = "variant"
a = "sctp-ms"
b = "sctp-naive"
expect = "less"
points = { file_size = [10240] }
"""


@pytest.mark.parametrize(("change", "message"), [
    (("a = \"sctp-ms\"", "a = \"sctp-warp\""),
     "a.variant: variant = 'sctp-warp' is not in the experiment"),
    (("file_size = [10240]", "file_size = [999]"), "points.file_size: file_size = 999 is not in"),
    (("file_size = [10240]", "colour = [1]"), "'colour' is not a point column"),
    (("kind = \"direction\"", "kind = \"maybe\""), "kind: 'maybe'"),
    (("expect = \"less\"\n", ""), "expect: missing"),
    (("section = \"1\"\n", "section = \"1\"\nmetric = \"speed\"\n"), "metric: multistream "
                                                                     "measures no 'speed'"),
    (("section = \"1\"\n", "section = \"1\"\nexperiment = \"nope\"\n"),
     "no experiment called 'nope'"),
    (("words = \"w\"\n", "words = \"w\"\ncolour = 1\n"), "colour: unknown key"),
])
def test_a_claim_naming_what_the_experiment_lacks_is_refused(tmp_path, change, message):
    path = write_claims(tmp_path, GOOD.replace(*change))
    with pytest.raises(claims.ClaimError) as error:
        claims.load(path)
    assert str(error.value).startswith(f"{path}: claim x") and message in str(error.value)


def test_a_good_claim_reads(tmp_path):
    (claim,) = claims.load(write_claims(tmp_path, GOOD))
    assert claim.compare == ("variant",) and claim.points == {"file_size": (10240,)}


ALSO = """
[[also]]
experiment = "demo"
suffix = "-ab"
as = "on the demo's paths"
"""


def test_also_judges_every_claim_on_a_second_experiment_too(tmp_path):
    own = GOOD.replace('id = "x"', 'id = "y"').replace('section = "1"\n',
                                                       'section = "1"\nexperiment = "fcs"\n')
    own = own.replace('a = "sctp-ms"', 'a = "tcp"').replace("[10240]", "[204800]")
    loaded = claims.load(write_claims(tmp_path, ALSO + GOOD + own))
    assert [(c.id, c.experiment) for c in loaded] == [
        ("x", "multistream"), ("y", "fcs"), ("x-ab", "demo")]
    assert loaded[2].words == "w (on the demo's paths)"
    assert [c.copy_of for c in loaded] == ["", "", "x"]


@pytest.mark.parametrize(("also", "message"), [
    (ALSO.replace('suffix = "-ab"\n', ""), "also[0].suffix: missing"),
    (ALSO.replace('as = ', 'colour = '), "also[0].colour: unknown key"),
    (ALSO.replace('"demo"', '"nope"'), "claim x-ab: experiment: "),
    (ALSO.replace('"-ab"', '""'), "also[0].suffix: missing"),
])
def test_a_bad_also_is_refused(tmp_path, also, message):
    path = write_claims(tmp_path, also + GOOD)
    with pytest.raises(claims.ClaimError) as error:
        claims.load(path)
    assert str(error.value).startswith(f"{path}: ") and message in str(error.value), error.value


POINT_COLUMNS = ["path", "loss", "file_size", "files", "variant", "parallel", "profile", "stack"]


def result_set(folder: Path, means: dict[tuple[str, str, str], list[float]]) -> Path:
    """A result folder of multistream's shape: (variant, profile, stack) -> transfer times, at
    lan, 1% loss, 10K x 100."""
    folder.mkdir(parents=True)
    points, runs = [], []
    for (variant, profile, stack), times in means.items():
        columns = {"path": "lan", "loss": 0.01, "file_size": 10240, "files": 100,
                   "variant": variant, "parallel": 0, "profile": profile, "stack": stack}
        key = f"lan_loss0.01_10Kx100_{variant}_{profile}_{stack}"
        points.append({"key": key, **columns})
        for rep, t in enumerate(times, 1):
            runs.append({"run_id": f"{key}_r{rep:03d}", **columns, "rep": rep, "status": "ok",
                         "transfer_time_s": t, "queue_drops_data": 0})
    runs.append({**runs[0], "run_id": runs[0]["run_id"][:-3] + "099", "status": "failed",
                 "transfer_time_s": 1e-3})
    return write_result_set(folder, "multistream", POINT_COLUMNS, points, runs)


def write_result_set(folder: Path, experiment: str, columns: list[str],
                     points: list[dict[str, Any]], runs: list[dict[str, Any]]) -> Path:
    """The files of a result folder the scorecard reads, from hand-made points and runs."""
    with (folder / "runs.csv").open("w", newline="") as out:
        writer = csv.DictWriter(out, list(runs[0]))
        writer.writeheader()
        writer.writerows(runs)
    (folder / "summary.csv").write_text("point\n")
    (folder / "matrix.json").write_text(json.dumps(
        {"workload": "ftp-mget", "point_columns": columns, "points": points}))
    (folder / "meta.json").write_text(json.dumps({"experiment": {"name": experiment},
                                                  "backend": "uml-virtual"}))
    return folder


def test_the_scorecard_judges_per_stack_and_profile(tmp_path):
    folder = result_set(tmp_path / "multistream", {
        ("sctp-naive", "sctp", "published"): [20.0, 21.0, 19.0],
        ("tcp", "tcp-newreno", "published"): [10.0, 10.5, 9.5],
        ("tcp", "tcp-linux", "published"): [30.0, 31.0, 29.0],
        ("sctp-naive", "sctp", "linux"): [10.0, 10.2, 9.8],
        ("tcp", "tcp-newreno", "linux"): [10.1, 10.0, 9.9],
    })
    (e12,) = [c for c in claims.load_all(["E1"]) if c.id == "E1.2"]   # naive slower at 10K
    verdicts = {v.group: v for v in scorecard.score([e12], {"multistream": folder})}
    assert verdicts["published / tcp-newreno"].verdict == rules.REPRODUCED
    assert verdicts["published / tcp-linux"].verdict == rules.DIVERGES
    assert verdicts["linux / tcp-newreno"].verdict == rules.INCONCLUSIVE
    ours = verdicts["published / tcp-newreno"].ours()
    assert ours[0] == pytest.approx(2.0) and ours[1] < 2.0 < ours[2]
    # the failed run (1 ms) counts nowhere
    assert verdicts["published / tcp-newreno"].points[0].runs == (3, 3)


def test_the_scorecard_files(tmp_path):
    folder = result_set(tmp_path / "multistream", {
        ("sctp-naive", "sctp", "published"): [20.0, 21.0, 19.0],
        ("tcp", "tcp-newreno", "published"): [10.0, 10.5, 9.5]})
    verdicts = scorecard.score(claims.load_all(["E1", "E2"]), {"multistream": folder})
    paths = scorecard.write(verdicts, tmp_path / "out", {"why": "test"})
    rows = list(csv.DictReader(paths["csv"].open()))
    assert {r["claim"] for r in rows} >= {"E1.2", "E1.11", "E2.6"}
    by_id = {r["claim"]: r for r in rows}
    assert by_id["E1.2"]["verdict"] == rules.REPRODUCED
    assert by_id["E1.11"]["verdict"] == rules.REPRODUCED            # no drops in any run
    assert by_id["E2.6"]["verdict"] == rules.NOT_MEASURED and \
        "no results of failover" in by_id["E2.6"]["why"]
    assert by_id["E2.1"]["verdict"] == rules.NOT_MEASURED           # no fcs results
    document = json.loads(paths["json"].read_text())
    assert sum(document["counts"]["E1"].values()) == sum(1 for r in rows if r["study"] == "E1")
    assert not math.isnan(float(by_id["E1.2"]["ours"]))
    assert "E1.2" in paths["html"].read_text()


def test_survives_counts_the_runs_that_failed_too(tmp_path):
    """E2.6 on a hand-made failover result set: SCTP's sessions finish under one setting and
    not all under another, TCP's never do; each SCTP setting is a group of its own."""
    folder = tmp_path / "failover"
    folder.mkdir()
    columns = ["path", "loss", "file_size", "files", "variant", "parallel", "profile", "stack",
               "sctp_settings"]
    outcomes = {("sctp-naive", "sctp", "linux-pf"): ["ok", "ok", "ok"],
                ("sctp-naive", "sctp", "rfc4960-pmr5"): ["ok", "failed", "ok"],
                ("tcp", "tcp-newreno", ""): ["failed", "failed", "failed"]}
    points, runs = [], []
    for (variant, profile, settings), statuses in outcomes.items():
        point = {"path": "uav", "loss": 0.0, "file_size": 1048576, "files": 10,
                 "variant": variant, "parallel": 0, "profile": profile, "stack": "linux",
                 "sctp_settings": settings}
        key = f"uav_{variant}_{settings or profile}"
        points.append({"key": key, **point})
        runs += [{"run_id": f"{key}_r{rep:03d}", **point, "rep": rep, "status": status,
                  "transfer_time_s": 30.0 if status == "ok" else ""}
                 for rep, status in enumerate(statuses, 1)]
    write_result_set(folder, "failover", columns, points, runs)
    (e26,) = [c for c in claims.load_all(["E2"]) if c.id == "E2.6"]
    verdicts = {v.group: v for v in scorecard.score([e26], {"failover": folder})}
    pf, pmr5 = verdicts["linux / linux-pf / tcp-newreno"], \
        verdicts["linux / rfc4960-pmr5 / tcp-newreno"]
    assert pf.verdict == rules.REPRODUCED and pmr5.verdict == rules.DIRECTION_ONLY
    assert pf.points[0].runs == (3, 3)
    assert pmr5.points[0].why == "2 of 3 finished against 0 of 3"
