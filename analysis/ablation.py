"""The ablation's answer: for each claim of a study, the scorecard's verdict on every step from
today's stack to the era stack (today's with one of the era's mechanisms, experiments/stacks.py
MECHANISMS), and how far that one mechanism moves the number the claim is about.

The number is the scorecard's own (card.Verdict.ours: a ratio of means, the geometric mean of
a claim's points). A step's move is its factor over today's, and its share of the era stack's
whole move on the log scale: 1 is a mechanism that alone makes the whole difference, 0 one that
makes none, a negative share a move the other way. Shares need not add up to 1: mechanisms
interact (a slower timer costs more where fewer losses are repaired by a fast retransmit).
A value claim's number (a gain in %, an index) may be zero or negative: there a step's move is
its difference from today's, and a share is given only for a move beyond the noise, where the
step's 90% interval and today's are apart (and the era stack's too).

Writes ablation.csv (a row per claim and step), ablation.json (the same, with each point's
verdicts), ablation.md (a table per claim) and ablation.png (a panel per claim). The
scorecard shows each claim's answer beside its verdict (`answers`)."""
from __future__ import annotations

import csv
import io
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.scorecard import Verdict, rules
from analysis.scorecard.card import stack_of_group
from analysis.scorecard.write import write_whole
from experiments.claims import Claim

TODAY, ERA = "today", "era"
COLUMNS = ("study", "claim", "words", "published", "step", "stack", "mechanism", "verdict",
           "ours", "low", "high", "factor", "difference", "share", "points")
# A share is only a share of something: beneath this move of the era stack (2%, on the log
# scale), the era stack did not move the claim's number and no mechanism's share is given.
LEAST_ERA_MOVE = math.log(1.02)
# The kinds whose number is a ratio (of means, or of ratios along an axis): a move is a factor
RATIO_KINDS = ("ratio", "same", "direction", "trend", "optimum")


@dataclass(frozen=True)
class Step:
    """One stack of the ablation as the scorecard judged one claim on it."""

    stack: str
    mechanism: str                 # TODAY, ERA, or the mechanism's name
    verdict: Verdict
    ours: tuple[float, float, float] | None
    factor: float | None = None    # ours over today's
    share: float | None = None     # of the era's move (on the log scale for a factor)
    difference: float | None = None   # ours less today's (value claims)


class AblationError(ValueError):
    """A result set that holds no ablation; the message says what it holds."""


def plan_of(meta: dict[str, Any]) -> tuple[list[str], dict[str, str]]:
    """The ablation a result set ran, from the stacks its meta.json records (each step's
    record names today's stack, the era's and its mechanism): the stacks in order, today's
    first and the era's last, and what each one is."""
    stacks = meta.get("experiment", {}).get("stacks") or {}
    steps_run = {name: r["ablation"] for name, r in stacks.items()
                 if isinstance(r, dict) and "ablation" in r}
    pairs = {(a["today"], a["era"]) for a in steps_run.values()}
    if len(pairs) != 1:
        raise AblationError(f"the result set's stacks ({', '.join(stacks) or 'none'}) hold "
                            f"{'no' if not pairs else 'more than one'} ablation: name one as "
                            "TODAY..ERA in its experiment file's [matrix] stacks")
    today, era = pairs.pop()
    missing = [s for s in (today, era) if s not in stacks]
    if missing:
        raise AblationError(f"the ablation's ends did not run: {', '.join(missing)}")
    order = [today, *steps_run, era]
    names = {today: f"{TODAY}: {today}", era: f"{ERA}: {era}",
             **{s: a["mechanism"] for s, a in steps_run.items()}}
    return order, names


def steps(claim: Claim, verdicts: list[Verdict], order: list[str],
          mechanism_of: dict[str, str]) -> list[Step]:
    """The claim's verdicts on the ablation's stacks (`order`, today's first and the era's
    last), with each step's move. `mechanism_of` names each stack's mechanism."""
    by_stack = {stack_of_group(v.group): v for v in verdicts if v.claim.id == claim.id}
    found = [(s, by_stack[s]) for s in order if s in by_stack]
    if not found:
        return []
    ours = {s: v.ours() for s, v in found}
    base, era = ours.get(order[0]), ours.get(order[-1])
    if claim.kind not in RATIO_KINDS:
        return [_value_step(stack, mechanism_of.get(stack, stack), verdict, ours[stack], base,
                            era) for stack, verdict in found]
    era_move = _log_move(era, base)
    out = []
    for stack, verdict in found:
        move = _log_move(ours[stack], base)
        factor = None if move is None else math.exp(move)
        share = (move / era_move if move is not None and era_move is not None
                 and abs(era_move) >= LEAST_ERA_MOVE else None)
        out.append(Step(stack, mechanism_of.get(stack, stack), verdict, ours[stack], factor,
                        share))
    return out


def _value_step(stack: str, mechanism: str, verdict: Verdict,
                ours: tuple[float, float, float] | None, base: tuple[float, float, float] | None,
                era: tuple[float, float, float] | None) -> Step:
    """A value claim's step: its difference from today's, and its share of the era's
    difference where both moves lie beyond today's interval."""
    if ours is None or base is None:
        return Step(stack, mechanism, verdict, ours)
    difference = ours[0] - base[0]
    share = None
    if era is not None and _apart(era, base) and _apart(ours, base):
        share = difference / (era[0] - base[0])
    return Step(stack, mechanism, verdict, ours, share=share, difference=difference)


def _apart(one: tuple[float, float, float], other: tuple[float, float, float]) -> bool:
    """Whether two 90% intervals (centre, low, high) do not overlap."""
    return one[1] > other[2] or one[2] < other[1]


def _log_move(ours: tuple[float, float, float] | None,
              base: tuple[float, float, float] | None) -> float | None:
    if ours is None or base is None or ours[0] <= 0 or base[0] <= 0:
        return None
    return math.log(ours[0] / base[0])


def row(claim: Claim, step: Step, number: int) -> dict[str, Any]:
    """The step's line of ablation.csv; `number`: its place, today's 0."""
    published = "" if claim.published is None else (
        f"{claim.published[0]:g}" if claim.published[0] == claim.published[1]
        else f"{claim.published[0]:g}-{claim.published[1]:g}")
    centre, low, high = step.ours if step.ours else (None, None, None)
    return {"study": claim.study, "claim": claim.id, "words": claim.words,
            "published": published, "step": number, "stack": step.stack,
            "mechanism": step.mechanism, "verdict": step.verdict.verdict, "ours": centre,
            "low": low, "high": high, "factor": step.factor, "difference": step.difference,
            "share": step.share,
            "points": len(step.verdict.measured)}


Table = list[tuple[Claim, list[Step]]]


def table_of(claims: list[Claim], verdicts: list[Verdict], order: list[str],
             mechanism_of: dict[str, str]) -> Table:
    """Each claim measured on the ablation's stacks, with its steps."""
    table = [(c, steps(c, verdicts, order, mechanism_of)) for c in claims]
    return [(c, s) for c, s in table if any(x.ours for x in s)]


def summary(table: Table) -> list[str]:
    """A line per claim: its verdict today and on the era stack, and the mechanism whose
    share of the era's move is largest."""
    lines = []
    for claim, claim_steps in table:
        line = (f"{claim.id}: {claim_steps[0].verdict.verdict} today, "
                f"{claim_steps[-1].verdict.verdict} on the era stack")
        top = _top_mover(claim_steps)
        if top is not None:
            line += f"; most moved by {top.mechanism} (share {top.share:.2f})"
        lines.append(line)
    return lines


def _top_mover(claim_steps: list[Step]) -> Step | None:
    """The mechanism's step (neither end) with the largest share of the era's move."""
    movers = [s for s in claim_steps[1:-1] if s.share is not None]
    return max(movers, key=lambda s: abs(s.share or 0.0)) if movers else None


def answer(claim_steps: list[Step]) -> str:
    """The claim's answer in a line, as the scorecard shows it beside the claim's verdict."""
    today, era = claim_steps[0], claim_steps[-1]
    line = f"{today.verdict.verdict} on {today.stack}, {era.verdict.verdict} on {era.stack}"
    top = _top_mover(claim_steps)
    if top is not None and top.factor is not None and top.share is not None:
        line += (f"; most moved by {top.mechanism} (x{top.factor:.3g}, "
                 f"{top.share:.0%} of the era's move)")
    elif top is not None and top.difference is not None and top.share is not None:
        line += (f"; most moved by {top.mechanism} ({top.difference:+.3g}, "
                 f"{top.share:.0%} of the era's move)")
    return line


def write(table: Table, order: list[str], mechanism_of: dict[str, str], out: Path,
          meta: dict[str, Any]) -> dict[str, Path]:
    """The four files under `out`, each written whole or not at all."""
    out.mkdir(parents=True, exist_ok=True)
    rows = [row(claim, step, number) for claim, claim_steps in table
            for number, step in enumerate(claim_steps)]
    paths = {"csv": out / "ablation.csv", "json": out / "ablation.json",
             "md": out / "ablation.md", "png": out / "ablation.png"}
    write_whole(paths["csv"], _csv(rows))
    record = {"meta": meta, "order": order, "mechanisms": mechanism_of,
              "claims": [{"claim": c.id, "study": c.study, "words": c.words,
                          "answer": answer(s), "steps": [
                              {**row(c, x, i), "per_point": [_point(p) for p in x.verdict.points]}
                              for i, x in enumerate(s)]}
                         for c, s in table]}
    write_whole(paths["json"], json.dumps(record, indent=1, default=str) + "\n")
    write_whole(paths["md"], markdown(table, meta))
    figure(table, paths["png"])
    return paths


def _point(p: Any) -> dict[str, Any]:
    est = p.estimate
    return {"label": p.label, "verdict": p.verdict, "runs": list(p.runs),
            "estimate": None if est is None else [est.value, est.low, est.high]}


def _csv(rows: list[dict[str, Any]]) -> str:
    text = io.StringIO()
    writer = csv.DictWriter(text, COLUMNS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in r.items()})
    return text.getvalue()


def _number(value: float | None, fmt: str = "{:.3g}") -> str:
    return "" if value is None or math.isnan(value) else fmt.format(value)


def markdown(table: Table, meta: dict[str, Any]) -> str:
    lines = ["# Ablation: from today's stack to the era stack, one mechanism at a time", "",
             f"Results: `{meta.get('folder', '')}`; kernel {meta.get('kernel_release', '?')}, "
             f"clock {meta.get('clock', '?')}. Ours: the scorecard's number with its 90% "
             "interval; factor: over today's; difference: less today's (value claims); "
             "share: of the era stack's move (log scale for a factor; for a difference only "
             "where the step's interval and today's are apart).",
             ""]
    for claim, claim_steps in table:
        published = row(claim, claim_steps[0], 0)["published"] or "-"
        lines += [f"## {claim.id}: {claim.words}", "",
                  f"Published: {published}. Kind: {claim.kind}.", "",
                  "| step | verdict | ours | 90% interval | factor | difference | share | "
                  "points |",
                  "|---|---|---|---|---|---|---|---|"]
        for step in claim_steps:
            centre, low, high = step.ours if step.ours else (None, None, None)
            interval = f"{_number(low)} to {_number(high)}" if low is not None else ""
            lines.append(f"| {step.mechanism} | {step.verdict.verdict} | {_number(centre)} | "
                         f"{interval} | {_number(step.factor)} | "
                         f"{_number(step.difference, '{:+.3g}')} | "
                         f"{_number(step.share, '{:.2f}')} | {len(step.verdict.measured)} |")
        lines.append("")
    return "\n".join(lines)


COLOURS = {rules.REPRODUCED: "#2e7d32", rules.DIRECTION_ONLY: "#9e9d24",
           rules.DIVERGES: "#c62828", rules.INCONCLUSIVE: "#757575",
           rules.NOT_MEASURED: "#bdbdbd"}


def figure(table: Table, path: Path) -> None:
    """A panel per claim whose number is a ratio: ours with its interval on every step, on a
    log axis, coloured by verdict, with the published number as a line (the other claims are
    in the table only)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    table = [(c, s) for c, s in table if c.kind in RATIO_KINDS] or table[:1]
    panels = max(1, len(table))
    fig, axes = plt.subplots(panels, 1, figsize=(7, 0.32 * sum(len(s) + 3 for _, s in table)
                                                 + 0.5), squeeze=False)
    for ax, (claim, claim_steps) in zip(axes[:, 0], table, strict=False):
        shown = [s for s in claim_steps if s.ours and s.ours[0] > 0]
        for y, step in enumerate(shown):
            centre, low, high = step.ours  # type: ignore[misc]
            colour = COLOURS.get(step.verdict.verdict, "black")
            ax.errorbar([centre], [y], xerr=[[max(centre - low, 0)], [max(high - centre, 0)]],
                        fmt="o", color=colour, capsize=3)
        ax.set_yticks(range(len(shown)), [s.mechanism for s in shown], fontsize=7)
        ax.invert_yaxis()
        if claim.published is not None and claim.published[0] > 0:
            ax.axvline(claim.published[0], color="black", linestyle="--", linewidth=0.8,
                       label="published")
            ax.legend(fontsize=7, loc="best")
        if all(s.ours and s.ours[1] > 0 for s in shown) and shown:
            ax.set_xscale("log")
            ax.xaxis.set_major_formatter(ScalarFormatter())
            ax.xaxis.set_minor_formatter(NullFormatter())
        ax.axvline(1.0, color="#9e9e9e", linewidth=0.6)
        ax.set_title(f"{claim.id}: {claim.words}", fontsize=8, loc="left")
        ax.tick_params(axis="x", labelsize=7)
    fig.tight_layout()
    partial = path.with_name(path.name + ".partial.png")
    fig.savefig(partial, dpi=120)
    plt.close(fig)
    os.replace(partial, path)


def answers(results_root: Path) -> dict[str, tuple[str, Path]]:
    """Per claim, the ablation's answer in a line (`answer`, as written into ablation.json),
    and the table it comes from: every results/<experiment>/ablation/ablation.json under
    `results_root`. A file that cannot be read is passed over."""
    out: dict[str, tuple[str, Path]] = {}
    for path in sorted(results_root.glob("*/ablation/ablation.json")):
        try:
            record = json.loads(path.read_text())
            out.update({c["claim"]: (c["answer"], path.with_suffix(".md"))
                        for c in record["claims"]})
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return out
