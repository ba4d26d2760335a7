"""The scorecard's files: scorecard.csv (a row per claim and stack/profile group),
scorecard.json (the same with every point's verdict, and the counts per study) and
scorecard.html (the page: per study the counts, then per claim published against ours)."""
from __future__ import annotations

import csv
import json
import math
import os
from collections import Counter
from pathlib import Path
from typing import Any

from analysis import html
from analysis.scorecard import beside, explained, rules
from analysis.scorecard.card import Verdict

COLUMNS = ("claim", "study", "section", "kind", "experiment", "metric", "group", "words",
           "published", "ours", "ours_low", "ours_high", "verdict", "points_measured",
           "points", "why", "report", "explained_part", "explanation", "explanation_page",
           "ablation", "ablation_page")


def published_text(verdict: Verdict) -> str:
    claim = verdict.claim
    if claim.published is None:
        return claim.expect and f"a {claim.expect} than b" or ""
    low, high = claim.published
    text = f"{low:g}" if low == high else f"{low:g} to {high:g}"
    return f"about {text}" if claim.about else text


def _why(verdict: Verdict) -> str:
    if verdict.note:
        return verdict.note
    reasons = Counter(p.why for p in verdict.measured)
    return "; ".join(f"{why} ({n})" for why, n in reasons.most_common(3))


def row(verdict: Verdict) -> dict[str, Any]:
    claim = verdict.claim
    ours = verdict.ours()
    return {
        "claim": claim.id, "study": claim.study, "section": claim.section, "kind": claim.kind,
        "experiment": claim.experiment, "metric": claim.metric, "group": verdict.group,
        "words": claim.words, "published": published_text(verdict),
        "ours": ours[0] if ours else math.nan, "ours_low": ours[1] if ours else math.nan,
        "ours_high": ours[2] if ours else math.nan, "verdict": verdict.verdict,
        "points_measured": len(verdict.measured), "points": len(verdict.points),
        "why": _why(verdict),
    }


def counts(verdicts: list[Verdict]) -> dict[str, dict[str, int]]:
    """Per study, how many claim-and-group verdicts of each kind."""
    out: dict[str, dict[str, int]] = {}
    for v in verdicts:
        study = out.setdefault(v.claim.study, dict.fromkeys(rules.VERDICTS, 0))
        study[v.verdict] += 1
    return out


def write(verdicts: list[Verdict], folder: Path, meta: dict[str, Any],
          reports: dict[str, Path] | None = None,
          explanations: dict[str, explained.Explanation] | None = None,
          ablations: dict[str, tuple[str, Path]] | None = None) -> dict[str, Path]:
    """`reports`: each experiment's result folder, whose report/report.html the page links to
    (where it has been drawn); `explanations`: claim id to what explains it (default: the
    findings' explanations.toml); `ablations`: claim id to the ablation's answer and its
    table (analysis/ablation.py, `answers`)."""
    folder.mkdir(parents=True, exist_ok=True)
    links = report_links(folder, reports or {})
    known = explained.read() if explanations is None else explanations
    rows = [{**row(v), "report": links.get(v.claim.experiment, ""),
             **explanation_columns(v, known.get(v.claim.id), folder),
             **ablation_columns((ablations or {}).get(v.claim.id), folder)} for v in verdicts]
    paths = {"csv": folder / "scorecard.csv", "json": folder / "scorecard.json",
             "html": folder / "scorecard.html"}
    tmp = paths["csv"].with_suffix(".csv.tmp")
    with tmp.open("w", newline="") as out:
        writer = csv.DictWriter(out, COLUMNS)
        writer.writeheader()
        for r in rows:
            writer.writerow({k: (f"{v:.6g}" if isinstance(v, float) and not math.isnan(v)
                                 else "" if isinstance(v, float) else v) for k, v in r.items()})
    tmp.replace(paths["csv"])
    document = {"meta": meta, "counts": counts(verdicts), "rules": rule_numbers(),
                "claims": [{**r, "ours": _num(r["ours"]), "ours_low": _num(r["ours_low"]),
                            "ours_high": _num(r["ours_high"]),
                            "point_verdicts": [_point(p) for p in v.points]}
                           for r, v in zip(rows, verdicts, strict=True)]}
    write_whole(paths["json"], json.dumps(document, indent=1) + "\n")
    write_whole(paths["html"], page(verdicts, rows, meta, folder))
    return paths


def explanation_columns(verdict: Verdict, explanation: explained.Explanation | None,
                        folder: Path) -> dict[str, str]:
    """What explains the verdict, from the findings; a claim that diverges with nothing to
    explain it is open."""
    if explanation is None:
        part = "open" if verdict.verdict == "diverges" else ""
        return {"explained_part": part, "explanation": "", "explanation_page": ""}
    return {"explained_part": explanation.part, "explanation": explanation.says,
            "explanation_page": f"{os.path.relpath(explanation.page, folder)}: "
                                f"{explanation.passage}"}


def ablation_columns(answer: tuple[str, Path] | None, folder: Path) -> dict[str, str]:
    if answer is None:
        return {"ablation": "", "ablation_page": ""}
    return {"ablation": answer[0], "ablation_page": os.path.relpath(answer[1], folder)}


def report_links(folder: Path, reports: dict[str, Path]) -> dict[str, str]:
    links = {}
    for experiment, results in reports.items():
        page = results / "report" / "report.html"
        if page.is_file():
            links[experiment] = os.path.relpath(page, folder)
    return links


def rule_numbers() -> dict[str, float]:
    return {"confidence": rules.CONFIDENCE, "about_tolerance": rules.ABOUT,
            "same_tolerance": rules.SAME}


def _num(value: float) -> float | None:
    return None if math.isnan(value) else value


def _point(p: Any) -> dict[str, Any]:
    est = p.estimate
    return {"points": p.label, "verdict": p.verdict, "why": p.why, "runs": list(p.runs),
            "value": est.value if est else None, "low": est.low if est else None,
            "high": est.high if est else None}


def write_whole(path: Path, text: str) -> None:
    """`text` into `path` whole or not at all (a reader never sees half of it)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def page(verdicts: list[Verdict], rows: list[dict[str, Any]], meta: dict[str, Any],
         folder: Path) -> str:
    sections = [("Verdicts per study", html.table(
        ["study", *rules.VERDICTS],
        [[study, *c.values()] for study, c in sorted(counts(verdicts).items())]))]
    sections.append(("How a claim is judged", RULES_HTML))
    for study in sorted({r["study"] for r in rows}):
        mine = [r for r in rows if r["study"] == study]
        png = beside.draw(verdicts, study, folder)
        shown = html.image(png, f"{study}: ours beside the published numbers") if png else ""
        sections.append((study, shown + html.table(
            ["claim", "section", "words", "kind", "group", "published", "ours",
             "90% interval", "verdict", "points", "why", "what explains it"],
            [[html.cell(r["claim"]), html.cell(r["section"]), html.cell(r["words"]),
              html.cell(r["kind"]), html.cell(r["group"]), html.cell(r["published"]),
              html.cell(r["ours"]), html.cell(_interval(r)), html.cell(r["verdict"]),
              html.cell(f"{r['points_measured']} of {r['points']}"), html.cell(r["why"]),
              _link(r)] for r in mine], raw=True)))
    sections.append(("Where the numbers come from", html.key_values(meta)))
    return html.page("Scorecard: the published findings against this testbed's runs",
                     sections)


def _link(r: dict[str, Any]) -> str:
    parts = []
    if r["report"]:
        parts.append(f'<a href="{html.esc(r["report"])}">{html.esc(r["experiment"])}\'s '
                     "report</a>")
    if r["explanation"]:
        page, passage = r["explanation_page"].split(": ", 1)
        parts.append(f'<b>{html.esc(r["explained_part"])}</b>: {html.esc(r["explanation"])} '
                     f'(<a href="{html.esc(page)}">{html.esc(passage)}</a>)')
    elif r["explained_part"] == "open":
        parts.append("<b>open</b>: not explained yet")
    if r.get("ablation"):
        parts.append(f'<b>ablation</b>: {html.esc(r["ablation"])} '
                     f'(<a href="{html.esc(r["ablation_page"])}">the steps</a>)')
    return f"<td>{'<br>'.join(parts)}</td>"


def _interval(r: dict[str, Any]) -> str:
    if math.isnan(r["ours_low"]):
        return ""
    return f"{r['ours_low']:.4g} to {r['ours_high']:.4g}"


RULES_HTML = (
    f"<p>Intervals are {rules.CONFIDENCE:.0%} and come from the runs: a ratio of means from "
    "both sides' spreads, a difference from Welch's t. <b>direction</b>: a significant "
    "difference the published way reproduces, the other way diverges. <b>ratio</b>, "
    "<b>difference</b>, <b>value</b>: the published number inside our interval (or, for "
    f"\"about\", within {rules.ABOUT:.0%} of ours) reproduces; a significant difference the "
    "published way but of another size is the direction only. <b>same</b>: the ratio's "
    f"interval within {rules.SAME:.0%} of 1 reproduces; a significant difference beyond it "
    "diverges. <b>bound</b>: the interval wholly on the published side. <b>trend</b>: the "
    "ratio at the axis's end clearly beyond its start. <b>optimum</b>: the axis's last value "
    "significantly worse than its best. <b>premise</b>: true in every run. <b>survives</b>: "
    "every run of one side finishes and none of the other's. A claim over "
    "several points diverges if any diverges and reproduces if all do; not significant is "
    "inconclusive; a point with fewer than two runs a side is not measured.</p>")
