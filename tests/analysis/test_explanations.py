"""The findings' explanations of the verdicts: the shipped file points at claims, pages and
passages that exist, a file that points at nothing is refused with the entry and the reason,
and the scorecard shows an explanation beside its claims and marks a diverging claim without
one as open."""
from pathlib import Path
from types import SimpleNamespace

import pytest

from analysis.scorecard import explained
from analysis.scorecard.write import explanation_columns
from experiments.claims import load_all

ENTRY = """
[[explanation]]
claims = ["{claim}"]
page = "{page}"
passage = "{passage}"
part = "{part}"
says = "A window."
"""


def test_the_shipped_explanations_point_at_what_exists():
    known = {c.id for c in load_all()}
    explanations = explained.read(known_claims=known)
    assert "E2.4" in explanations
    for claim, explanation in explanations.items():
        assert explanation.part in explained.PARTS, claim
        assert explanation.passage in explanation.page.read_text(), claim


@pytest.mark.parametrize("change, reason", [
    ({"claim": "E9.9"}, "no claim 'E9.9'"),
    ({"page": "nowhere.md"}, "no page"),
    ({"passage": "a heading nobody wrote"}, "has no passage"),
    ({"part": "weather"}, "is not one of"),
])
def test_an_explanation_that_points_at_nothing_is_refused(tmp_path, change, reason):
    (tmp_path / "page.md").write_text("# E2\n\n**Why.** Because.\n")
    values = {"claim": "E2.4", "page": "page.md", "passage": "**Why.**", "part": "transport",
              **change}
    path = tmp_path / "explanations.toml"
    path.write_text(ENTRY.format(**values))
    with pytest.raises(explained.ExplanationError, match=reason) as refused:
        explained.read(path, known_claims={"E2.4"})
    assert "explanation 0" in str(refused.value)


def test_a_claim_explained_twice_is_refused(tmp_path):
    (tmp_path / "page.md").write_text("**Why.**")
    one = ENTRY.format(claim="E2.4", page="page.md", passage="**Why.**", part="open")
    path = tmp_path / "explanations.toml"
    path.write_text(one + one)
    with pytest.raises(explained.ExplanationError, match="explained twice"):
        explained.read(path)


def test_the_scorecard_shows_the_explanation_or_says_open(tmp_path: Path):
    (tmp_path / "page.md").write_text("**Why.** Because.")
    path = tmp_path / "explanations.toml"
    path.write_text(ENTRY.format(claim="E2.4", page="page.md", passage="**Why.**",
                                 part="transport"))
    explanation = explained.read(path)["E2.4"]
    diverges = SimpleNamespace(verdict="diverges")
    shown = explanation_columns(diverges, explanation, tmp_path / "results")
    assert shown == {"explained_part": "transport", "explanation": "A window.",
                     "explanation_page": "../page.md: **Why.**"}
    assert explanation_columns(diverges, None, tmp_path)["explained_part"] == "open"
    reproduced = SimpleNamespace(verdict="reproduced")
    assert explanation_columns(reproduced, None, tmp_path)["explained_part"] == ""
