"""The ablation's table (analysis/ablation.py): which stacks a result set's ablation ran, from
its meta.json; each step's factor over today's number and its share of the era stack's move on
the log scale; the four files written, and the answer the scorecard shows beside the claim.
Hand-made verdicts, as the scorecard gives them."""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from analysis import ablation, scorecard
from analysis.scorecard.card import PointVerdict, Verdict
from analysis.scorecard.rules import DIVERGES, REPRODUCED, Estimate
from experiments.claims import Claim

ORDER = ["linux", "linux+era-a", "linux+era-b", "era"]
NAMES = {"linux": "today: linux", "linux+era-a": "a", "linux+era-b": "b", "era": "era: era"}


def claim(kind: str = "ratio", number: int = 1) -> Claim:
    return Claim(id=f"X.{number}", study="X", file=Path("X.toml"), section="", words="a over b",
                 kind=kind, experiment="x", metric="transfer_time_s", compare=("variant",),
                 a={"variant": "sctp-naive"}, b={"variant": "tcp"}, published=(0.25, 0.25))


def verdict(c: Claim, stack: str, *values: float) -> Verdict:
    points = [PointVerdict(f"p{i}", DIVERGES if v > 1 else REPRODUCED,
                           Estimate(v, v / 1.1, v * 1.1, True), "", (3, 3))
              for i, v in enumerate(values)]
    return Verdict(c, f"{stack} / tcp-newreno", DIVERGES if values[0] > 1 else REPRODUCED,
                   points)


def test_the_plan_comes_from_the_stacks_the_result_set_recorded():
    stacks = {"linux": {}, "linux+era-a": {"ablation": {"today": "linux", "era": "era",
                                                        "mechanism": "a"}},
              "era": {}}
    order, names = ablation.plan_of({"experiment": {"stacks": stacks}})
    assert order == ["linux", "linux+era-a", "era"]
    assert names == {"linux": "today: linux", "linux+era-a": "a", "era": "era: era"}
    with pytest.raises(ablation.AblationError, match="no ablation"):
        ablation.plan_of({"experiment": {"stacks": {"linux": {}}}})
    with pytest.raises(ablation.AblationError, match="did not run: era"):
        ablation.plan_of({"experiment": {"stacks": {k: v for k, v in stacks.items()
                                                    if k != "era"}}})


def test_factor_and_share_of_each_step():
    c = claim()
    # today 2.0; a halves it, b leaves it; the era stack quarters it (on two points: the
    # geometric mean, as the scorecard's)
    verdicts = [verdict(c, "linux", 2.0), verdict(c, "linux+era-a", 1.0),
                verdict(c, "linux+era-b", 2.0), verdict(c, "era", 0.25, 1.0)]
    steps = ablation.steps(c, verdicts, ORDER, NAMES)
    assert [s.mechanism for s in steps] == ["today: linux", "a", "b", "era: era"]
    assert [round(s.factor, 6) for s in steps] == [1.0, 0.5, 1.0, 0.25]
    assert [round(s.share, 6) for s in steps] == [0.0, 0.5, 0.0, 1.0]
    assert steps[-1].ours[0] == pytest.approx(math.sqrt(0.25 * 1.0))
    lines = ablation.summary([(c, steps)])
    assert lines == ["X.1: diverges today, reproduced on the era stack; most moved by a "
                     "(share 0.50)"]


def test_no_share_where_the_era_stack_does_not_move_the_number():
    c = claim()
    verdicts = [verdict(c, "linux", 2.0), verdict(c, "linux+era-a", 3.0),
                verdict(c, "era", 2.01)]
    steps = ablation.steps(c, verdicts, ORDER, NAMES)
    assert [s.share for s in steps] == [None, None, None]
    assert steps[1].factor == pytest.approx(1.5)


def test_the_four_files(tmp_path):
    c = claim()
    verdicts = [verdict(c, s, v) for s, v in zip(ORDER, (2.0, 1.0, 2.0, 0.5), strict=True)]
    table = ablation.table_of([c, claim("same", 2)], verdicts, ORDER, NAMES)
    assert [t[0].kind for t in table] == ["ratio"]   # the other claim has no verdicts
    paths = ablation.write(table, ORDER, NAMES, tmp_path / "exp" / "ablation", {"folder": "f"})
    rows = list(csv.DictReader(paths["csv"].open()))
    assert [r["mechanism"] for r in rows] == ["today: linux", "a", "b", "era: era"]
    assert [r["verdict"] for r in rows] == [DIVERGES, REPRODUCED, DIVERGES, REPRODUCED]
    record = json.loads(paths["json"].read_text())
    assert record["claims"][0]["steps"][1]["per_point"][0]["estimate"][0] == 1.0
    assert "| a | reproduced | 1 |" in paths["md"].read_text()
    assert paths["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list((tmp_path / "exp" / "ablation").glob("*.partial*"))
    answer, page = ablation.answers(tmp_path)["X.1"]
    assert answer == ("diverges on linux, reproduced on era; most moved by a (x0.5, 50% of "
                      "the era's move)")
    assert page == paths["md"]
    card = scorecard.write(verdicts, tmp_path / "card", {}, explanations={},
                           ablations=ablation.answers(tmp_path))
    shown = list(csv.DictReader(card["csv"].open()))
    assert {r["ablation"] for r in shown} == {answer}
    assert "the steps</a>" in card["html"].read_text()


def value_verdict(c: Claim, stack: str, value: float, half: float) -> Verdict:
    point = PointVerdict("p0", REPRODUCED, Estimate(value, value - half, value + half, True), "",
                         (10, 10))
    return Verdict(c, f"{stack} / tcp-sack-reno", REPRODUCED, [point])


def test_a_value_claim_moves_by_differences_and_shares_only_beyond_the_noise():
    c = claim("value")
    # today +5 +-4; a moves it +3 (inside today's interval), b +12 (outside), the era +16
    verdicts = [value_verdict(c, "linux", 5.0, 4.0), value_verdict(c, "linux+era-a", 8.0, 4.0),
                value_verdict(c, "linux+era-b", 17.0, 4.0), value_verdict(c, "era", 21.0, 4.0)]
    steps = ablation.steps(c, verdicts, ORDER, NAMES)
    assert [s.difference for s in steps] == [0.0, 3.0, 12.0, 16.0]
    assert [s.factor for s in steps] == [None] * 4
    assert [s.share for s in steps] == [None, None, 0.75, 1.0]
    assert ablation.answer(steps) == ("reproduced on linux, reproduced on era; most moved by b "
                                      "(+12, 75% of the era's move)")
    # an era stack inside today's interval gives no share at all
    verdicts[-1] = value_verdict(c, "era", 8.0, 4.0)
    assert all(s.share is None for s in ablation.steps(c, verdicts, ORDER, NAMES))
