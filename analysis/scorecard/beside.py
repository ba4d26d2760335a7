"""The published numbers beside ours, one figure per study: every claim that states a number,
ours over the published one with its 90% interval (1 is the study's number; the band is the
"about" tolerance), a row per claim and stack/profile group, coloured by verdict. Tables II
and III of E3, E1's ratios, E4's and E5's numbers all read on this one scale."""
from __future__ import annotations

import csv
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402

from analysis.scorecard import rules  # noqa: E402
from analysis.scorecard.card import Verdict  # noqa: E402

COLOURS = {rules.REPRODUCED: "#2a7d2a", rules.DIRECTION_ONLY: "#c08a00",
           rules.DIVERGES: "#b02020", rules.INCONCLUSIVE: "#777777"}


def rows_of(verdicts: list[Verdict]) -> list[tuple[str, float, float, float, str]]:
    """(label, ours, low, high) over the published number, and the verdict, for every verdict
    of a claim with a published number (a range: its middle) and a positive one."""
    out = []
    for v in verdicts:
        ours = v.ours()
        if v.claim.published is None or ours is None:
            continue
        published = sum(v.claim.published) / 2
        if published <= 0 or v.claim.kind == "bound":
            continue
        out.append((f"{v.claim.id} {v.group}", ours[0] / published, ours[1] / published,
                    ours[2] / published, v.verdict))
    return out


def draw(verdicts: list[Verdict], study: str, folder: Path) -> Path | None:
    rows = rows_of([v for v in verdicts if v.claim.study == study])
    if not rows:
        return None
    fig = Figure(figsize=(8, 0.3 * len(rows) + 1.2))
    ax = fig.add_subplot()
    ax.axvspan(1 - rules.ABOUT, 1 + rules.ABOUT, color="#e8e8f8", zorder=0)
    ax.axvline(1.0, color="#333333", linewidth=1)
    for y, (_, ours, low, high, verdict) in enumerate(rows):
        colour = COLOURS.get(verdict, "#777777")
        ax.plot([low, high], [y, y], color=colour, linewidth=2)
        ax.plot([ours], [y], "o", color=colour)
    ax.set_yticks(range(len(rows)), [r[0] for r in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xscale("symlog", linthresh=0.1)
    ax.set_xlabel(f"{study}: ours over the published number (1: the study's; band: ±"
                  f"{rules.ABOUT:.0%})")
    fig.tight_layout()
    png = folder / f"beside_{study}.png"
    fig.savefig(png, dpi=110)
    with (folder / f"beside_{study}.data.csv").open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["claim_group", "ours_over_published", "low", "high", "verdict"])
        writer.writerows(rows)
    return png
