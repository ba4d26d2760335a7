"""Experiment files: TOML, one per experiment, read and checked before anything runs.

An experiment is a topology with its link settings, a shaping matrix, and a workload:

    name, description, seed
    topology = "path"          # path | dumbbell | dualpath (networks.py says what [network] holds)
    workload = "ftp-mget"      # what runs on it (experiments/workloads/); its own keys too
    [network] ...              # the link settings per role
    [matrix] loss, tcp_profiles, and the workload's axes
    [repetitions] min, max, target_half_width, confidence, metric
    [sctp] knobs;  [run] timeout_s, snaplen;  [run.slurm] how a Slurm cluster runs it (slurm.py)

A file without `topology` and `workload` is an FTP mget on `path`, as every file was before
workloads existed. Every error names the file, the key and the reason. What a study left open
is given a value here and recorded with every result."""
from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from experiments import networks, workloads
from experiments.cluster.slurm import SETTING_TYPES as SLURM_SETTINGS
from experiments.cluster.slurm import SlurmSettings, read_settings
from experiments.stacks import SCTP_KNOBS, TCP_PROFILES
from experiments.workloads.base import Point, Workload
from topology.net import KINDS as TOPOLOGIES
from topology.net.schedule import shapes_over_time
from topology.params import LinkShape, ParameterError

EXPERIMENTS_DIR = Path(__file__).resolve().parent


class SpecError(ValueError):
    """An experiment file that cannot be run; the message says where and why."""


@dataclass(frozen=True)
class Repetitions:
    min: int = 3
    max: int = 30
    target_half_width: float = 0.05  # of the mean
    confidence: float = 0.90
    metric: str = ""                 # decides tightness; "" until read: the workload's default


@dataclass(frozen=True)
class Experiment:
    name: str
    file: Path
    description: str
    topology: str
    network: networks.Network
    workload: str
    settings: Any                      # the workload's own, as it read them
    losses: tuple[float, ...]
    tcp_profiles: tuple[str, ...]
    sctp: dict[str, int] = field(default_factory=dict)
    repetitions: Repetitions = Repetitions()
    seed: int = 1
    run_timeout_s: float = 900.0
    snaplen: int = 0
    capture: str = "whole"             # or "headers": CAPTURES
    capture_at: tuple[str, ...] = ("client",)   # and "server": CAPTURE_ENDS
    slurm: SlurmSettings = SlurmSettings()
    simulator: str = ""                # "": the pinned kernel; else the workload's model of it

    @property
    def kind(self) -> Workload:
        return workloads.get(self.workload)

    def points(self) -> list[Point]:
        return self.kind.points(self)

    def as_record(self) -> dict[str, Any]:
        """The experiment as it was run, for meta.json."""
        return {
            "name": self.name, "file": str(self.file), "description": self.description,
            "topology": self.topology, "workload": self.workload, **self.network.record(),
            **self.kind.record(self.settings), "losses": list(self.losses),
            "tcp_profiles": list(self.tcp_profiles), "sctp": self.sctp,
            "repetitions": vars(self.repetitions), "seed": self.seed,
            "run_timeout_s": self.run_timeout_s, "snaplen": self.snaplen,
            "capture": self.capture, "capture_at": list(self.capture_at),
            "slurm": self.slurm.record(),
            "simulator": self.simulator or None,
            "metrics": {m.name: m.description for m in self.kind.metrics},
        }


COMMON_SCHEMA: dict[str, Any] = {
    "name": str, "description": str, "seed": int, "topology": str, "workload": str,
    "simulator": str, "network": dict, "matrix": {"loss": list, "tcp_profiles": list},
    "repetitions": {"min": int, "max": int, "target_half_width": float, "confidence": float,
                    "metric": str},
    "sctp": {knob: int for knob in SCTP_KNOBS},
    "run": {"timeout_s": float, "snaplen": int, "capture": str, "capture_at": list,
            "slurm": SLURM_SETTINGS},
}

# What a run's pcap holds. "headers": every packet to its transport headers (procedure's
# HEADERS_SNAPLEN), and whole the packets whose payload the workload's analysis reads (its
# `whole_in_a_capture_of_headers` filter); about a tenth of the bytes, written and stored, of
# whole packets, for the same measured results (tests/harness/test_capture_of_headers.py).
CAPTURES = ("whole", "headers")
# Where a run captures: always at the client, whose pcap every measurement reads; also at the
# server, for its own view of a session (what it sent that the path lost, what reached it),
# in pcaps/<run id>.server.pcap, for a workload with one client and one server.
CAPTURE_ENDS = ("client", "server")


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
    return Reader(path).experiment(data)


class Reader:
    """Reads one experiment file; the topology's and the workload's readers use its checks,
    so every error reads alike."""

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
            elif expected is dict:
                if not isinstance(value, dict):
                    raise self.fail(full, "must be a table")
            elif expected is float:
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise self.fail(full, f"must be a number, got {value!r}")
            elif isinstance(value, bool) != (expected is bool) or not isinstance(value, expected):
                raise self.fail(full, f"must be {expected.__name__}, got {value!r}")

    def required(self, table: dict[str, Any], key: str, where: str) -> Any:
        if key not in table:
            raise self.fail(f"{where}.{key}" if where else key, "missing")
        return table[key]

    def guard(self, key: str, parse: Callable[[Any], Any], value: Any) -> Any:
        try:
            return parse(value)
        except ParameterError as error:
            raise self.fail(key, str(error)) from None

    def choice(self, key: str, value: Any, known: tuple[str, ...] | dict[str, Any],
               what: str) -> None:
        if value not in known:
            raise self.fail(key, f"unknown {what} {value!r} (one of: {', '.join(known)})")

    def number_list(self, key: str, values: list[Any], within: Callable[[float], bool],
                    what: str) -> tuple[float, ...]:
        """A non-empty list of numbers, each `within` its range; `what` names one with its
        range ("loss ratio in [0, 1)")."""
        if not values:
            raise self.fail(key, f"needs at least one {what.split(' in ')[0]}")
        for value in values:
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not within(value):
                raise self.fail(key, f"{value!r} is not a {what}")
        return tuple(float(v) for v in values)

    def experiment(self, data: dict[str, Any]) -> Experiment:
        topology = data.get("topology", "path")
        kind = data.get("workload", workloads.DEFAULT)
        for key, value, known in (("topology", topology, TOPOLOGIES),
                                  ("workload", kind, tuple(workloads.PACKAGES))):
            if not isinstance(value, str):
                raise self.fail(key, f"must be a string, got {value!r}")
            self.choice(key, value, known, key)
        workload = workloads.get(kind)
        if topology not in workload.topologies:
            raise self.fail("topology", f"the {kind} workload runs on "
                                        f"{' or '.join(workload.topologies)}, not {topology}")
        self.check_keys(data, self.schema(topology, workload), "")
        name = self.required(data, "name", "")
        if name != self.file.stem:
            raise self.fail("name", f"{name!r} must match the file name {self.file.stem!r}")
        network = networks.read(self, topology, self.required(data, "network", ""))
        matrix = self.required(data, "matrix", "")
        run = data.get("run", {})
        experiment = Experiment(
            name=name, file=self.file, description=data.get("description", ""),
            topology=topology, network=network, workload=kind,
            settings=workload.read(self, data),
            losses=self.number_list("matrix.loss", self.required(matrix, "loss", "matrix"),
                                    lambda v: 0 <= v < 1, "loss ratio in [0, 1)"),
            tcp_profiles=self.profiles(matrix.get("tcp_profiles", ["tcp-newreno"])),
            sctp=self.sctp(data.get("sctp", {})),
            repetitions=self.repetitions(data.get("repetitions", {}), workload),
            seed=data.get("seed", 1), run_timeout_s=float(run.get("timeout_s", 900.0)),
            snaplen=run.get("snaplen", 0), capture=run.get("capture", "whole"),
            capture_at=self.capture_ends(run.get("capture_at", ["client"]), workload),
            slurm=read_settings(run.get("slurm", {}), self.fail),
            simulator=data.get("simulator", ""))
        if not 10 <= experiment.run_timeout_s <= 86_400:
            raise self.fail("run.timeout_s", "must be between 10 s and one day")
        if experiment.snaplen != 0 and experiment.snaplen < 64:
            raise self.fail("run.snaplen", "0 (whole packets) or at least 64 bytes")
        self.check_capture(experiment, workload)
        self.check_loss_burst(experiment)
        self.check_schedule(experiment)
        self.check_simulator(experiment, workload)
        return experiment

    def check_simulator(self, experiment: Experiment, workload: Workload) -> None:
        """`simulator`: the runs go to the workload's model of that simulator, not a kernel."""
        if not experiment.simulator:
            return
        known = getattr(workload, "simulators", ())
        if experiment.simulator not in known:
            runs_in = f"only in {', '.join(map(repr, known))}" if known else "only in a kernel"
            raise self.fail("simulator", f"the {experiment.workload} workload runs {runs_in}, "
                                         f"not {experiment.simulator!r}")
        workload.check_simulated(self, experiment)

    def check_schedule(self, experiment: Experiment) -> None:
        """Every change falls inside a run and gives a possible link on every entry at every
        loss of the matrix."""
        network = experiment.network
        limit = f"past the run's limit (run.timeout_s = {experiment.run_timeout_s:g} s)"
        for i, read_trace in enumerate(network.traces):
            last = read_trace.changes[-1].at_s
            if last >= experiment.run_timeout_s:
                raise self.fail(f"network.trace[{i}].file",
                                f"{read_trace.file}: its last row, at {last:g} s, is {limit}")
        for i, change in enumerate(network.listed):
            if change.at_s >= experiment.run_timeout_s:
                raise self.fail(f"network.schedule[{i}].at", f"{change.at_s:g} s is {limit}")
        for entry in network.entries if network.schedule else ():
            for loss in experiment.losses:
                self.guard("network.schedule",
                           lambda links: shapes_over_time(links, list(network.schedule)),
                           network.links(entry, loss))

    def check_loss_burst(self, experiment: Experiment) -> None:
        """Bursts must fit every loss of the matrix: a mean loss L in bursts of B packets needs
        L <= B/(B+1)."""
        burst = experiment.network.loss_burst
        if burst is not None:
            self.guard("network.loss_burst",
                       lambda b: LinkShape(loss=max(experiment.losses), loss_burst=b), burst)

    def capture_ends(self, ends: list[Any], workload: Workload) -> tuple[str, ...]:
        if ends[:1] != ["client"] or len(set(ends)) != len(ends) or any(
                end not in CAPTURE_ENDS for end in ends):
            raise self.fail("run.capture_at", f'["client"] or ["client", "server"], not {ends!r}'
                                              " (the client's pcap is the one measured)")
        if "server" in ends and not getattr(workload, "captures_the_server", False):
            raise self.fail("run.capture_at", f"the {workload.kind} workload captures only at "
                                               'its client: ["client"]')
        return tuple(ends)

    def check_capture(self, experiment: Experiment, workload: Workload) -> None:
        if experiment.capture not in CAPTURES:
            raise self.fail("run.capture", f"one of {', '.join(map(repr, CAPTURES))}, not "
                                           f"{experiment.capture!r}")
        if experiment.capture != "headers":
            return
        if experiment.snaplen:
            raise self.fail("run.snaplen", 'capture = "headers" sets the snaplen itself: drop '
                                           f"snaplen (it is {experiment.snaplen})")
        if not getattr(workload, "whole_in_a_capture_of_headers", None):
            raise self.fail("run.capture", f"the {experiment.workload} workload reads payloads "
                                            'that a capture of headers cuts: use "whole"')

    def schema(self, topology: str, workload: Workload) -> dict[str, Any]:
        schema = {**COMMON_SCHEMA, **workload.top_keys,
                  "network": networks.SCHEMAS[topology],
                  "matrix": {**COMMON_SCHEMA["matrix"], **workload.matrix_keys}}
        if workload.table:
            schema[workload.table] = workload.table_keys
        return schema

    def profiles(self, values: list[Any]) -> tuple[str, ...]:
        if not values:
            raise self.fail("matrix.tcp_profiles", "needs at least one TCP profile")
        for value in values:
            self.choice("matrix.tcp_profiles", value, TCP_PROFILES, "profile")
        return tuple(values)

    def sctp(self, knobs: dict[str, int], where: str = "sctp") -> dict[str, int]:
        """SCTP knobs (their keys and types already checked) within their ranges; `where`:
        the table they stand in."""
        for knob, value in knobs.items():
            low, high = SCTP_KNOBS[knob]["range"]
            if not low <= value <= high:
                raise self.fail(f"{where}.{knob}", f"{value} is out of range ({low} to {high})")
        return dict(knobs)

    def repetitions(self, table: dict[str, Any], workload: Workload) -> Repetitions:
        reps = Repetitions(**{"metric": workload.default_metric, **table})
        self.choice("repetitions.metric", reps.metric,
                    tuple(m.name for m in workload.metrics), "metric")
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
