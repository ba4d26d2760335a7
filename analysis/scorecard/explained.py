"""What explains a claim's verdict: analysis/findings/explanations.toml, read and checked
(every claim it names exists, every page and passage it points at is there), for the
scorecard to show beside the verdicts."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

FINDINGS = Path(__file__).resolve().parents[1] / "findings"
FILE = FINDINGS / "explanations.toml"
PARTS = ("transport", "programs", "both", "open")
KEYS = {"claims", "page", "passage", "part", "says"}


class ExplanationError(ValueError):
    """An explanations file that points at nothing; the message names the entry and why."""


@dataclass(frozen=True)
class Explanation:
    claims: tuple[str, ...]
    page: Path
    passage: str
    part: str
    says: str


def read(path: Path = FILE, known_claims: set[str] | None = None) -> dict[str, Explanation]:
    """Claim id to its explanation; `known_claims`, when given, must hold every id named."""
    try:
        entries = tomllib.loads(path.read_text()).get("explanation", [])
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ExplanationError(f"{path}: {error}") from None
    out: dict[str, Explanation] = {}
    for i, entry in enumerate(entries):
        explanation = _entry(path, i, entry, known_claims)
        for claim in explanation.claims:
            if claim in out:
                raise ExplanationError(f"{path}: explanation {i}: claim {claim} is explained "
                                       "twice")
            out[claim] = explanation
    return out


def _entry(path: Path, i: int, entry: dict, known: set[str] | None) -> Explanation:
    where = f"{path}: explanation {i}"
    if set(entry) != KEYS:
        raise ExplanationError(f"{where}: needs exactly {', '.join(sorted(KEYS))}, has "
                               f"{', '.join(sorted(entry))}")
    if entry["part"] not in PARTS:
        raise ExplanationError(f"{where}: part {entry['part']!r} is not one of {PARTS}")
    unknown = [c for c in entry["claims"] if known is not None and c not in known]
    if unknown:
        raise ExplanationError(f"{where}: no claim {unknown[0]!r} in experiments/claims/")
    page = path.parent / entry["page"]
    if not page.is_file():
        raise ExplanationError(f"{where}: no page {page}")
    if entry["passage"] not in page.read_text():
        raise ExplanationError(f"{where}: {page.name} has no passage {entry['passage']!r}")
    return Explanation(tuple(entry["claims"]), page, entry["passage"], entry["part"],
                       " ".join(entry["says"].split()))
