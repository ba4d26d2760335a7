"""The studies' published findings as data: one TOML file per study (E1.toml ... E5.toml), one
`[[claim]]` per finding, read and checked against the experiment it names before anything
runs. README.md in this folder gives the keys and the one rule per kind of claim.

A claim that names a point column, value, metric or variant its experiment does not have is
refused with its file, the key and the reason, as experiment files are."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from experiments import spec
from experiments.workloads.base import Point

CLAIMS_DIR = Path(__file__).resolve().parent

# kind: the keys it needs beyond id, section, words (README.md says what each judges)
KINDS: dict[str, tuple[str, ...]] = {
    "direction": ("compare", "a", "b", "expect"),
    "ratio": ("compare", "a", "b", "published"),
    "difference": ("compare", "a", "b", "published"),
    "same": ("compare", "a", "b"),
    "trend": ("compare", "a", "b", "axis", "expect"),
    "value": ("published",),
    "bound": ("published", "expect"),
    "optimum": ("axis",),
    "premise": (),
    "survives": ("compare", "a", "b"),
}
CLAIM_KEYS = ("id", "section", "words", "kind", "experiment", "metric", "compare", "a", "b",
              "expect", "points", "except", "axis", "best", "published", "about", "sign",
              "unmeasured")
FILE_KEYS = ("study", "experiment", "metric", "where", "claim", "quick", "also")
ALSO_KEYS = ("experiment", "suffix", "as")
EXPECTS = ("less", "greater")
BEST = "best"    # a side's value that means: the axis value with the best mean
# Point columns only SCTP points fill (a TCP point's cell is empty): a TCP point pairs with
# an SCTP point of any value, two SCTP points only with the same one (the scorecard's
# pairs, and the quick plan's choice of the points they need)
SCTP_ONLY = ("sctp_settings", "sctp_stack")
# columns every run has beside its workload's metrics (runs.csv), and metrics the scorecard
# derives from a run's columns
RUN_COLUMNS = ("queue_drops_data", "queue_drops_other", "loss_drops_data")
DERIVED = {"ftp-mget": ("utilization",)}


class ClaimError(ValueError):
    """A claims file that cannot be judged; the message says where and why."""


@dataclass(frozen=True)
class Claim:
    id: str
    study: str
    file: Path
    section: str
    words: str
    kind: str
    experiment: str
    metric: str
    compare: tuple[str, ...] = ()       # the columns the two sides differ in
    a: dict[str, Any] = field(default_factory=dict)
    b: dict[str, Any] = field(default_factory=dict)
    points: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    excepted: tuple[dict[str, Any], ...] = ()
    expect: str = ""
    axis: str = ""
    best: str = ""                      # value, bound: judged at this axis's best value
    published: tuple[float, float] | None = None   # a number is (x, x); a range (low, high)
    about: bool = False
    sign: bool = False
    unmeasured: str = ""
    copy_of: str = ""                   # an [[also]] copy: the id of the claim it copies

    @property
    def measurable(self) -> bool:
        return not self.unmeasured

    def selects(self, columns: dict[str, Any]) -> bool:
        """Whether a point with these columns is one the claim reads (either side)."""
        if not all(_member(columns.get(k), values) for k, values in self.points.items()):
            return False
        if any(all(_same(columns.get(k), v) for k, v in rule.items())
               for rule in self.excepted):
            return False
        if self.compare:
            return self.side(columns) != ""
        return True

    def side(self, columns: dict[str, Any]) -> str:
        """"a", "b" or "" for a point's columns (a value of "best" matches any)."""
        for name, wanted in (("a", self.a), ("b", self.b)):
            if all(v == BEST or _same(columns.get(k), v) for k, v in wanted.items()):
                return name
        return ""


def _same(value: Any, wanted: Any) -> bool:
    if isinstance(value, (int, float)) and isinstance(wanted, (int, float)) \
            and not isinstance(value, bool) and not isinstance(wanted, bool):
        return abs(float(value) - float(wanted)) <= 1e-9 * max(1.0, abs(float(wanted)))
    return value == wanted


def _member(value: Any, values: tuple[Any, ...]) -> bool:
    return any(_same(value, v) for v in values)


def files() -> list[Path]:
    return sorted(CLAIMS_DIR.glob("*.toml"))


def load_all(studies: list[str] | None = None) -> list[Claim]:
    """Every claim of the studies named (all when None), each checked against its experiment."""
    known = {p.stem: p for p in files()}
    if studies:
        unknown = [s for s in studies if s not in known]
        if unknown:
            raise ClaimError(f"no claims for {', '.join(unknown)} in {CLAIMS_DIR} "
                             f"(known: {', '.join(known)})")
    chosen = [known[s] for s in studies] if studies else list(known.values())
    return [claim for path in chosen for claim in load(path)]


def load(path: Path) -> list[Claim]:
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as error:
        raise ClaimError(f"{path}: not valid TOML: {error}") from None
    return ClaimReader(path).read(data)


class ClaimReader:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.experiments: dict[str, spec.Experiment] = {}

    def fail(self, where: str, reason: str) -> ClaimError:
        return ClaimError(f"{self.path}: {where}: {reason}")

    def read(self, data: dict[str, Any]) -> list[Claim]:
        for key in data:
            if key not in FILE_KEYS:
                raise self.fail(key, f"unknown key (expected one of: {', '.join(FILE_KEYS)})")
        study = data.get("study")
        if study != self.path.stem:
            raise self.fail("study", f"{study!r} must match the file name {self.path.stem!r}")
        entries = data.get("claim", [])
        if not isinstance(entries, list) or not entries:
            raise self.fail("claim", "needs at least one [[claim]]")
        claims, seen = [], set()
        for index, entry in enumerate(entries):
            claim = self.claim(data, entry, index)
            if claim.id in seen:
                raise self.fail(f"claim {claim.id}", "id used twice")
            seen.add(claim.id)
            claims.append(claim)
        for where, also in self.also(data):
            for index, entry in enumerate(entries):
                if "experiment" in entry or "unmeasured" in entry:
                    continue
                copy = {**entry, "id": entry["id"] + also["suffix"],
                        "experiment": also["experiment"],
                        "words": f"{entry['words']} ({also['as']})"}
                claim = replace(self.claim(data, copy, index), copy_of=entry["id"])
                if claim.id in seen:
                    raise self.fail(f"{where}.suffix", f"claim {claim.id}: id used twice")
                seen.add(claim.id)
                claims.append(claim)
        return claims

    def also(self, data: dict[str, Any]) -> list[tuple[str, dict[str, str]]]:
        """`[[also]]`: another experiment every claim of the file (but those naming their own
        experiment, and the unmeasured) is judged on too, as a copy whose id has `suffix` and
        whose words end with `as`: the same finding on the setup as the study ran it."""
        tables = data.get("also", [])
        if not isinstance(tables, list):
            raise self.fail("also", "a list of [[also]] tables")
        out = []
        for index, table in enumerate(tables):
            where = f"also[{index}]"
            if not isinstance(table, dict):
                raise self.fail(where, f"a table of {', '.join(ALSO_KEYS)}")
            for key in table:
                if key not in ALSO_KEYS:
                    raise self.fail(f"{where}.{key}", "unknown key (expected one of: "
                                                      f"{', '.join(ALSO_KEYS)})")
            for key in ALSO_KEYS:
                if not isinstance(table.get(key), str) or not table[key]:
                    raise self.fail(f"{where}.{key}", "missing (words)")
            out.append((where, table))
        return out

    def claim(self, defaults: dict[str, Any], entry: dict[str, Any], index: int) -> Claim:
        ident = entry.get("id")
        where = f"claim {ident}" if isinstance(ident, str) else f"claim #{index + 1}"
        if not isinstance(ident, str) or not ident:
            raise self.fail(where, "id: missing")
        for key in entry:
            if key not in CLAIM_KEYS:
                raise self.fail(where, f"{key}: unknown key (expected one of: "
                                       f"{', '.join(CLAIM_KEYS)})")
        kind = entry.get("kind")
        if kind not in KINDS:
            raise self.fail(where, f"kind: {kind!r} is not one of {', '.join(KINDS)}")
        for key in ("section", "words"):
            if not isinstance(entry.get(key), str) or not entry[key]:
                raise self.fail(where, f"{key}: missing")
        name = entry.get("experiment", defaults.get("experiment"))
        if not isinstance(name, str):
            raise self.fail(where, "experiment: missing (in the claim or at the file's top)")
        unmeasured = entry.get("unmeasured", "")
        base = dict(id=ident, study=self.path.stem, file=self.path, section=entry["section"],
                    words=entry["words"], kind=kind, experiment=name,
                    metric=entry.get("metric", defaults.get("metric", "")))
        if unmeasured:
            if not isinstance(unmeasured, str):
                raise self.fail(where, "unmeasured: the reason, as words")
            return Claim(**base, unmeasured=unmeasured)
        for key in KINDS[kind]:
            if key not in entry:
                raise self.fail(where, f"{key}: missing (a {kind} claim needs "
                                       f"{', '.join(KINDS[kind]) or 'no more keys'})")
        experiment = self.experiment(where, name)
        columns = self.point_values(experiment)
        selector = {**defaults.get("where", {}), **entry.get("points", {})}
        claim = Claim(
            **base, points=self.selector(where, "points", selector, columns),
            excepted=tuple(self.rule(where, rule, columns) for rule in entry.get("except", [])),
            expect=self.expect(where, entry), axis=self.column(where, "axis", entry, columns),
            best=self.column(where, "best", entry, columns),
            published=self.published(where, entry.get("published")),
            about=bool(entry.get("about", False)), sign=bool(entry.get("sign", False)),
            **self.sides(where, entry, columns))
        if not claim.metric:
            raise self.fail(where, "metric: missing (in the claim or at the file's top)")
        self.check_metric(where, claim, experiment)
        if not any(claim.selects(dict(p.columns)) for p in experiment.points()):
            raise self.fail(where, f"points: no point of {name} matches the claim")
        return claim

    def experiment(self, where: str, name: str) -> spec.Experiment:
        if name not in self.experiments:
            try:
                self.experiments[name] = spec.load(name)
            except spec.SpecError as error:
                raise self.fail(where, f"experiment: {error}") from None
        return self.experiments[name]

    @staticmethod
    def point_values(experiment: spec.Experiment) -> dict[str, list[Any]]:
        values: dict[str, list[Any]] = {}
        for point in experiment.points():
            for column, value in point.columns:
                if not _member(value, tuple(values.setdefault(column, []))):
                    values[column].append(value)
        return values

    def value(self, where: str, key: str, column: str, value: Any,
              columns: dict[str, list[Any]], allow_best: bool = False) -> Any:
        if column not in columns:
            raise self.fail(where, f"{key}: {column!r} is not a point column of the experiment "
                                   f"(its columns: {', '.join(columns)})")
        if allow_best and value == BEST:
            return value
        if not _member(value, tuple(columns[column])):
            shown = ", ".join(repr(v) for v in columns[column])
            raise self.fail(where, f"{key}: {column} = {value!r} is not in the experiment "
                                   f"(it has: {shown})")
        return value

    def selector(self, where: str, key: str, table: Any, columns: dict[str, list[Any]]
                 ) -> dict[str, tuple[Any, ...]]:
        if not isinstance(table, dict):
            raise self.fail(where, f"{key}: must be a table of column = [values]")
        out = {}
        for column, values in table.items():
            values = values if isinstance(values, list) else [values]
            out[column] = tuple(self.value(where, f"{key}.{column}", column, v, columns)
                                for v in values)
        return out

    def rule(self, where: str, rule: Any, columns: dict[str, list[Any]]) -> dict[str, Any]:
        if not isinstance(rule, dict) or not rule:
            raise self.fail(where, "except: a list of tables of column = value")
        return {c: self.value(where, f"except.{c}", c, v, columns) for c, v in rule.items()}

    def sides(self, where: str, entry: dict[str, Any], columns: dict[str, list[Any]]
              ) -> dict[str, Any]:
        if "compare" not in entry:
            return {}
        compare = entry["compare"]
        sides = {}
        for name in ("a", "b"):
            side = entry[name]
            if not isinstance(side, dict):
                side = {compare: side}
            sides[name] = {c: self.value(where, f"{name}.{c}", c, v, columns, allow_best=True)
                           for c, v in side.items()}
        if sides["a"] == sides["b"]:
            raise self.fail(where, "a and b name the same points")
        compared = tuple(dict.fromkeys([*sides["a"], *sides["b"]]))
        return {"compare": compared, **sides}

    def column(self, where: str, key: str, entry: dict[str, Any],
               columns: dict[str, list[Any]]) -> str:
        column = entry.get(key, "")
        if column and column not in columns:
            raise self.fail(where, f"{key}: {column!r} is not a point column of the experiment "
                                   f"(its columns: {', '.join(columns)})")
        return column

    def expect(self, where: str, entry: dict[str, Any]) -> str:
        expect = entry.get("expect", "")
        if expect and expect not in EXPECTS:
            raise self.fail(where, f"expect: {expect!r} is not one of {', '.join(EXPECTS)}")
        return expect

    def published(self, where: str, value: Any) -> tuple[float, float] | None:
        if value is None:
            return None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return (float(value), float(value))
        if isinstance(value, list) and len(value) == 2 \
                and all(isinstance(v, (int, float)) for v in value) and value[0] <= value[1]:
            return (float(value[0]), float(value[1]))
        raise self.fail(where, f"published: a number or [low, high], not {value!r}")

    def check_metric(self, where: str, claim: Claim, experiment: spec.Experiment) -> None:
        known = [m.name for m in experiment.kind.metrics] + list(RUN_COLUMNS) \
            + list(DERIVED.get(experiment.workload, ()))
        if claim.metric not in known:
            raise self.fail(where, f"metric: {experiment.name} measures no {claim.metric!r} "
                                   f"(it has: {', '.join(known)})")


def needed_points(claims: list[Claim], experiment: spec.Experiment) -> list[Point]:
    """The experiment's points some measurable claim reads, in the experiment's order."""
    mine = [c for c in claims if c.measurable and c.experiment == experiment.name]
    return [p for p in experiment.points() if any(c.selects(dict(p.columns)) for c in mine)]
