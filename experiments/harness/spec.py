"""Experiment files: TOML, one per experiment, read and checked before anything runs.

Every error names the file, the key and the reason. What a study left open is given a value
here and recorded with every result."""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from topology.params import LinkShape, ParameterError, Queue, parse_queue, parse_rate, parse_time

from .profiles import SCTP_KNOBS, TCP_PROFILES

EXPERIMENTS_DIR = Path(__file__).resolve().parents[1]
VARIANTS = ("tcp", "sctp-naive", "sctp-ms", "sctp-ms-cp")
LATER_VARIANTS = ("xftp", "tcp-pipelined")
METRICS = {
    "nlst150-to-last226": "the client's receipt of the 150 reply to NLST to its receipt of the "
                          "last 226 (E1)",
    "first-packet-to-last226": "the first packet the client sends for mget to its receipt of "
                               "the last 226 (E2)",
}
MAX_FILES = 10_000
MAX_FILE_SIZE = 1 << 30


class SpecError(ValueError):
    """An experiment file that cannot be run; the message says where and why."""


@dataclass(frozen=True)
class PathSpec:
    name: str
    rate_bps: float
    delay_s: float


@dataclass(frozen=True)
class Repetitions:
    min: int = 3
    max: int = 30
    target_half_width: float = 0.05  # of the mean
    confidence: float = 0.90


@dataclass(frozen=True)
class Experiment:
    name: str
    file: Path
    description: str
    metric: str
    paths: tuple[PathSpec, ...]
    losses: tuple[float, ...]
    queue: Queue
    file_sizes: tuple[int, ...]
    files: int
    variants: tuple[str, ...]
    tcp_profiles: tuple[str, ...]
    sctp: dict[str, int] = field(default_factory=dict)
    repetitions: Repetitions = Repetitions()
    seed: int = 1
    run_timeout_s: float = 900.0
    snaplen: int = 0

    def shape(self, path: PathSpec, loss: float) -> LinkShape:
        return LinkShape(path.rate_bps, path.delay_s, loss, self.queue)

    def path(self, name: str) -> PathSpec:
        return next(p for p in self.paths if p.name == name)

    def as_record(self) -> dict[str, Any]:
        """The experiment as it was run, for meta.json."""
        return {
            "name": self.name, "file": str(self.file), "description": self.description,
            "metric": self.metric, "metric_definition": METRICS[self.metric],
            "paths": [vars(p) for p in self.paths], "losses": list(self.losses),
            "queue": {"limit": self.queue.limit, "unit": self.queue.unit},
            "file_sizes": list(self.file_sizes), "files": self.files,
            "variants": list(self.variants), "tcp_profiles": list(self.tcp_profiles),
            "sctp": self.sctp, "repetitions": vars(self.repetitions), "seed": self.seed,
            "run_timeout_s": self.run_timeout_s, "snaplen": self.snaplen,
        }


SCHEMA: dict[str, Any] = {
    "name": str, "description": str, "metric": str, "seed": int,
    "network": {"queue": str, "paths": list},
    "matrix": {"loss": list, "file_sizes": list, "files": int, "variants": list,
               "tcp_profiles": list},
    "repetitions": {"min": int, "max": int, "target_half_width": float, "confidence": float},
    "sctp": {knob: int for knob in SCTP_KNOBS},
    "run": {"timeout_s": float, "snaplen": int},
}
PATH_KEYS = {"name": str, "rate": str, "delay": str}


def find(name_or_file: str) -> Path:
    """An experiment by name (experiments/NAME.toml) or by file path."""
    candidate = Path(name_or_file)
    if candidate.suffix == ".toml" or "/" in name_or_file:
        if not candidate.is_file():
            raise SpecError(f"{candidate}: no such experiment file")
        return candidate.resolve()
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name_or_file):
        raise SpecError(f"{name_or_file!r} is not an experiment name")
    path = EXPERIMENTS_DIR / f"{name_or_file}.toml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in EXPERIMENTS_DIR.glob("*.toml")))
        raise SpecError(f"no experiment called {name_or_file!r} in {EXPERIMENTS_DIR} "
                        f"(known: {known})")
    return path


def load(name_or_file: str) -> Experiment:
    path = find(name_or_file)
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as error:
        raise SpecError(f"{path}: not valid TOML: {error}") from None
    return _Reader(path).experiment(data)


def parse_size(text: str | int) -> int:
    """'10K' -> 10240 bytes, '1M' -> 1048576 (K and M are binary, as ls -h prints them)."""
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    match = re.fullmatch(r"\s*(\d+)\s*([KMG]?)i?B?\s*", str(text), re.IGNORECASE)
    if not match:
        raise ParameterError(f"cannot read file size {text!r}: use e.g. 10K, 200K, 1M")
    return int(match.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[
        match.group(2).upper()]


def size_label(size: int) -> str:
    for unit, factor in (("M", 1 << 20), ("K", 1 << 10)):
        if size % factor == 0:
            return f"{size // factor}{unit}"
    return str(size)


class _Reader:
    def __init__(self, file: Path) -> None:
        self.file = file

    def fail(self, key: str, reason: str) -> SpecError:
        return SpecError(f"{self.file}: {key}: {reason}")

    def check_keys(self, table: dict[str, Any], schema: dict[str, Any], where: str) -> None:
        for key, value in table.items():
            full = f"{where}.{key}" if where else key
            if key not in schema:
                raise self.fail(full, f"unknown key (expected one of: {', '.join(schema)})")
            expected = schema[key]
            if isinstance(expected, dict):
                if not isinstance(value, dict):
                    raise self.fail(full, "must be a table")
                self.check_keys(value, expected, full)
            elif expected is float:
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise self.fail(full, f"must be a number, got {value!r}")
            elif isinstance(value, bool) or not isinstance(value, expected):
                raise self.fail(full, f"must be {expected.__name__}, got {value!r}")

    def required(self, table: dict[str, Any], key: str, where: str) -> Any:
        if key not in table:
            raise self.fail(f"{where}.{key}" if where else key, "missing")
        return table[key]

    def experiment(self, data: dict[str, Any]) -> Experiment:
        self.check_keys(data, SCHEMA, "")
        name = self.required(data, "name", "")
        if name != self.file.stem:
            raise self.fail("name", f"{name!r} must match the file name {self.file.stem!r}")
        metric = data.get("metric", "nlst150-to-last226")
        if metric not in METRICS:
            raise self.fail("metric", f"unknown metric {metric!r} (one of: {', '.join(METRICS)})")
        network = self.required(data, "network", "")
        matrix = self.required(data, "matrix", "")
        repetitions = self.repetitions(data.get("repetitions", {}))
        run = data.get("run", {})
        experiment = Experiment(
            name=name, file=self.file, description=data.get("description", ""), metric=metric,
            paths=self.paths(self.required(network, "paths", "network")),
            losses=self.losses(self.required(matrix, "loss", "matrix")),
            queue=self.guard("network.queue", parse_queue,
                             self.required(network, "queue", "network")),
            file_sizes=self.sizes(self.required(matrix, "file_sizes", "matrix")),
            files=self.count(self.required(matrix, "files", "matrix")),
            variants=self.variants(self.required(matrix, "variants", "matrix")),
            tcp_profiles=self.profiles(matrix.get("tcp_profiles", ["tcp-newreno"])),
            sctp=self.sctp(data.get("sctp", {})), repetitions=repetitions,
            seed=data.get("seed", 1), run_timeout_s=float(run.get("timeout_s", 900.0)),
            snaplen=run.get("snaplen", 0))
        if not 10 <= experiment.run_timeout_s <= 86_400:
            raise self.fail("run.timeout_s", "must be between 10 s and one day")
        if experiment.snaplen != 0 and experiment.snaplen < 256:
            raise self.fail("run.snaplen", "0 (whole packets) or at least 256 bytes")
        return experiment

    def guard(self, key: str, parse, value: Any) -> Any:
        try:
            return parse(value)
        except ParameterError as error:
            raise self.fail(key, str(error)) from None

    def paths(self, entries: list[Any]) -> tuple[PathSpec, ...]:
        if not entries:
            raise self.fail("network.paths", "needs at least one path")
        paths = []
        for i, entry in enumerate(entries):
            where = f"network.paths[{i}]"
            if not isinstance(entry, dict):
                raise self.fail(where, "must be a table with name, rate, delay")
            self.check_keys(entry, PATH_KEYS, where)
            name = self.required(entry, "name", where)
            if not re.fullmatch(r"[a-z0-9-]+", name):
                raise self.fail(f"{where}.name", "lower-case letters, digits and - only")
            rate = self.guard(f"{where}.rate", parse_rate, self.required(entry, "rate", where))
            delay = self.guard(f"{where}.delay", parse_time, self.required(entry, "delay", where))
            self.guard(f"{where}.rate", lambda v: LinkShape(rate_bps=v), rate)
            self.guard(f"{where}.delay", lambda v: LinkShape(delay_s=v), delay)
            paths.append(PathSpec(name, rate, delay))
        if len({p.name for p in paths}) != len(paths):
            raise self.fail("network.paths", "path names must be unique")
        return tuple(paths)

    def losses(self, values: list[Any]) -> tuple[float, ...]:
        if not values:
            raise self.fail("matrix.loss", "needs at least one loss ratio")
        for value in values:
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not 0 <= value < 1:
                raise self.fail("matrix.loss", f"{value!r} is not a loss ratio in [0, 1)")
        return tuple(float(v) for v in values)

    def sizes(self, values: list[Any]) -> tuple[int, ...]:
        if not values:
            raise self.fail("matrix.file_sizes", "needs at least one size")
        sizes = tuple(self.guard("matrix.file_sizes", parse_size, v) for v in values)
        for size in sizes:
            if not 1 <= size <= MAX_FILE_SIZE:
                raise self.fail("matrix.file_sizes", f"{size} bytes is out of range (1 B to 1 GiB)")
        return sizes

    def count(self, value: int) -> int:
        if not 1 <= value <= MAX_FILES:
            raise self.fail("matrix.files", f"{value} is out of range (1 to {MAX_FILES})")
        return value

    def variants(self, values: list[Any]) -> tuple[str, ...]:
        if not values:
            raise self.fail("matrix.variants", "needs at least one variant")
        for value in values:
            if value in LATER_VARIANTS:
                raise self.fail("matrix.variants", f"{value!r} is not implemented yet")
            if value not in VARIANTS:
                raise self.fail("matrix.variants",
                                f"unknown variant {value!r} (one of: {', '.join(VARIANTS)})")
        return tuple(values)

    def profiles(self, values: list[Any]) -> tuple[str, ...]:
        for value in values:
            if value not in TCP_PROFILES:
                raise self.fail("matrix.tcp_profiles",
                                f"unknown profile {value!r} (one of: {', '.join(TCP_PROFILES)})")
        if not values:
            raise self.fail("matrix.tcp_profiles", "needs at least one TCP profile")
        return tuple(values)

    def sctp(self, knobs: dict[str, int]) -> dict[str, int]:
        for knob, value in knobs.items():
            low, high = SCTP_KNOBS[knob]["range"]
            if not low <= value <= high:
                raise self.fail(f"sctp.{knob}", f"{value} is out of range ({low} to {high})")
        return dict(knobs)

    def repetitions(self, table: dict[str, Any]) -> Repetitions:
        reps = Repetitions(**{k: table[k] for k in table})
        if not 2 <= reps.min <= reps.max:
            raise self.fail("repetitions", "need 2 <= min <= max (a confidence interval needs "
                                           "two runs)")
        if reps.max > 1000:
            raise self.fail("repetitions.max", "at most 1000")
        if not 0 < reps.target_half_width < 1:
            raise self.fail("repetitions.target_half_width", "a fraction of the mean in (0, 1)")
        if not 0.5 <= reps.confidence < 1:
            raise self.fail("repetitions.confidence", "a level in [0.5, 1)")
        return reps
