"""The published findings judged against the runs: one rule per kind of claim (rules.py),
applied per claim, point and stack (card.py), written as scorecard.csv, .json and a page
(write.py). The claims are experiments/claims/; the runs, the experiments' result folders."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from analysis.results import ResultError, load
from analysis.scorecard.card import Samples, Verdict, judge
from analysis.scorecard.write import counts as write_counts
from analysis.scorecard.write import write
from experiments.claims import Claim

__all__ = ["score", "write", "write_counts", "provenance", "Verdict"]


def score(claims: list[Claim], folders: dict[str, Path]) -> list[Verdict]:
    """Every claim judged against the result folder of its experiment (`folders`: experiment
    name to folder); an experiment without a readable folder leaves its claims not measured."""
    samples: dict[str, Samples | None] = {}
    for name in {c.experiment for c in claims}:
        folder = folders.get(name)
        try:
            samples[name] = Samples(load(folder)) if folder else None
        except ResultError:
            samples[name] = None
    return [v for c in claims for v in judge(c, samples[c.experiment])]


def provenance(folders: dict[str, Path]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, folder in sorted(folders.items()):
        try:
            meta = load(folder).meta
        except ResultError:
            continue
        out[name] = {k: meta.get(k) for k in ("backend", "kernel", "clock", "testbed")
                     if k in meta} | {"folder": str(folder)}
    return out
