"""What a workload is to the harness: the contract every workload module fulfils.

The harness (the run loop, the ledger, resume, rounds, progress, workers, metadata, fan-out,
tables) knows no workload; it asks the experiment's workload, through this interface:

- which keys of the experiment file are its own, and what they mean (`read`);
- the points of the matrix and a rough duration of a run (`points`, `estimate_s`);
- what must exist before any run (`prepare`: data sets, built programs);
- what a kernel needs to run one run (`order`), and how it runs there (`execute`: which
  programs start on which node and in which order, what is captured where, how the run's
  data are verified);
- what a finished run measured (`analyse`: metrics from the pcap through experiments.tshark and
  from the programs' own event logs) and which columns that adds to runs.csv and summary.csv;
- optionally, before a report: the files its report reads beyond the tables, for the runs the
  report draws (`report_data(root, run_ids)`, from their pcaps), so that reports read result
  files only.

A run that cannot count raises `RunFailure` (from experiments.procedure) with its reason; it
is recorded as failed, never as a number."""
from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from experiments.stacks import DEFAULT_STACK, STACKS, expand_stacks
from topology.kernel.base import REAL_CLOCK
from topology.kernel.metadata import clock

if TYPE_CHECKING:
    from experiments.spec import Experiment, Reader
    from topology.net.base import Topology


PROGRAMS_ENV = "TESTBED_PROGRAMS"
# The SCTP implementations the C programs run on (their --sctp-stack): the kernel's, and
# FreeBSD's in user space (usrsctp), which reaches the wire inside UDP (RFC 6951).
KERNEL_SCTP = "kernel"
SCTP_STACKS = (KERNEL_SCTP, "usrsctp")
# The usrsctp sysctls the C programs may set (--usrsctp-sysctl; ftp-impl/common/usxsysctl.c,
# whose table tests/bulkflow/test_usrsctp_bulkflow.py holds this to).
USRSCTP_SYSCTLS = (
    "sctp_max_burst_default", "sctp_fr_max_burst_default", "sctp_use_cwnd_based_maxburst",
    "sctp_initial_cwnd", "sctp_L2_abc_variable", "sctp_default_cc_module", "sctp_cmt_on_off",
    "sctp_nrsack_enable", "sctp_ecn_enable", "sctp_pr_enable", "sctp_buffer_splitting",
    "sctp_delayed_sack_time_default", "sctp_sack_freq_default", "sctp_enable_sack_immediately",
    "sctp_rto_min_default", "sctp_rto_max_default", "sctp_rto_initial_default",
    "sctp_assoc_rtx_max_default", "sctp_path_rtx_max_default", "sctp_path_pf_threshold",
    "sctp_max_retran_chunk", "sctp_heartbeat_interval_default")


def read_stacks(reader: Reader, matrix: dict[str, Any]) -> tuple[str, ...]:
    """[matrix] `stacks`: the stack profiles its points run under (stacks.STACKS; "TODAY..ERA"
    stands for that ablation's steps), DEFAULT_STACK where the file names none."""
    named = matrix.get("stacks", [DEFAULT_STACK])
    if not isinstance(named, list) or not all(isinstance(s, str) for s in named):
        raise reader.fail("matrix.stacks", "must be a list of stack names")
    stacks = expand_stacks(named)
    if not stacks:
        raise reader.fail("matrix.stacks", "needs at least one stack profile")
    for stack in stacks:
        reader.choice("matrix.stacks", stack, STACKS, "stack profile")
    return tuple(stacks)


def read_sctp_stacks(reader: Reader, matrix: dict[str, Any]) -> tuple[str, ...]:
    """[matrix] `sctp_stacks`: which SCTP implementation its points' SCTP endpoints run
    (SCTP_STACKS), the kernel's where the file names none. usrsctp may carry settings of its
    sysctls: "usrsctp:NAME=VALUE,NAME=VALUE" (USRSCTP_SYSCTLS)."""
    named = matrix.get("sctp_stacks", [KERNEL_SCTP])
    if not isinstance(named, list) or not named or not all(isinstance(s, str) for s in named):
        raise reader.fail("matrix.sctp_stacks", "must be a non-empty list of SCTP stacks "
                                                f"({', '.join(SCTP_STACKS)})")
    for stack in named:
        base, _, settings = stack.partition(":")
        reader.choice("matrix.sctp_stacks", base, SCTP_STACKS, "SCTP stack")
        if settings and base != "usrsctp":
            raise reader.fail("matrix.sctp_stacks", f"{stack!r}: only usrsctp takes sysctls "
                                                    "here (the kernel's are [sctp]'s)")
        if ":" in stack:
            try:
                usrsctp_sysctls(stack)
            except ValueError as error:
                raise reader.fail("matrix.sctp_stacks", f"{stack!r}: {error}") from None
    if len(set(named)) != len(named):
        raise reader.fail("matrix.sctp_stacks", "names a stack twice")
    return tuple(named)


def usrsctp_sysctls(sctp_stack: str) -> list[tuple[str, int]]:
    """The sysctl settings an "usrsctp:NAME=VALUE,..." SCTP stack carries; ValueError names
    what is wrong."""
    _, _, text = sctp_stack.partition(":")
    out = []
    for item in text.split(","):
        name, eq, value = item.partition("=")
        if not eq or not value.isdigit() or int(value) >= 1 << 32:
            raise ValueError(f"{item!r} is not NAME=VALUE (VALUE from 0 to 2^32 - 1)")
        if name not in USRSCTP_SYSCTLS:
            raise ValueError(f"unknown usrsctp sysctl {name!r} (known: "
                             f"{', '.join(USRSCTP_SYSCTLS)})")
        out.append((name, int(value)))
    if len({name for name, _ in out}) != len(out):
        raise ValueError("sets a sysctl twice")
    return out


def sctp_stack_key_suffix(sctp_stack: str) -> str:
    """The end of a point's key that names its SCTP stack: none for the kernel's, so that the
    keys of result sets from before the axis stay theirs; a usrsctp with settings names them
    ("_usrsctp+sctp_max_burst_default-0")."""
    if sctp_stack == KERNEL_SCTP:
        return ""
    return "_" + sctp_stack.replace(":", "+").replace(",", "+").replace("=", "-")


def stack_records(stacks: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """What meta.json keeps of each stack an experiment runs under (stacks.Stack.record)."""
    return {name: STACKS[name].record() for name in stacks}


def stack_key_suffix(stack: str) -> str:
    """The end of a point's key that names its stack: none for DEFAULT_STACK, so that the keys
    of result sets from before a workload's stack axis stay theirs."""
    return "" if stack == DEFAULT_STACK else f"_{stack}"


class WorkloadError(RuntimeError):
    """A workload cannot start: what it needs is missing; the message says what to do."""


def program(name: str) -> Path:
    """A C program of the testbed, built by `make build` into ftp-impl/build (or the folder
    $TESTBED_PROGRAMS names, for an installed testbed)."""
    from topology.kernel.base import REPO_ROOT

    folder = Path(os.environ.get(PROGRAMS_ENV) or REPO_ROOT / "ftp-impl" / "build")
    return folder / name


def require_programs(*names: str) -> dict[str, str]:
    """The programs' paths, or WorkloadError naming the missing ones."""
    paths = {name: program(name) for name in names}
    missing = [str(p) for p in paths.values() if not os.access(p, os.X_OK)]
    if missing:
        raise WorkloadError(f"the testbed's programs are not built ({', '.join(missing)}): run "
                            f"`make build` (or point ${PROGRAMS_ENV} at their folder)")
    return {name: str(path) for name, path in paths.items()}


@functools.cache
def capture_immediate() -> bool:
    """Whether this kernel's captures run in immediate mode (procedure.capture_argv). In real
    time they do: tcpdump's wake-ups per packet cost no wall time the transfer does not take
    anyway, and a block mode capture would wait up to 2 s at the end of every run for its last
    block. In virtual time they do not: there each wake-up costs real time (a coast-path TCP
    run of 20 MB took 5.2 s with them and 4.0 s without, an SCTP one 4.0 s and 2.2 s), and the
    wait for the last block is on the kernel's clock, which skips it."""
    return clock() == REAL_CLOCK


def read_events(log: Path) -> list[dict[str, Any]]:
    """A program's JSON event lines (ftpc, bulkflow: one object per line); a line cut short
    by a killed program is skipped, a missing log is no events."""
    out = []
    if log.exists():
        for line in log.read_text(errors="replace").splitlines():
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(event, dict):
                out.append(event)
    return out


@dataclass(frozen=True)
class Metric:
    """One number a run measures. Summaries give each metric's mean and 90% interval."""

    name: str          # a runs.csv column, unit in the name (transfer_time_s, jain_index)
    description: str


@dataclass(frozen=True)
class Point:
    """One cell of the matrix: every run of it has the same parameters."""

    key: str                                  # names its runs: <key>_r<rep>
    network: str                              # the name of its entry in [network]
    loss: float
    profile: str                              # the hosts' TCP profile (profiles.py)
    columns: tuple[tuple[str, Any], ...]      # its columns in runs.csv and summary.csv
    stack: str = DEFAULT_STACK                # windows and timers (profiles.STACKS)
    # SCTP knobs of this point's own (stacks.SCTP_KNOBS), over the experiment's [sctp]
    sctp_knobs: tuple[tuple[str, int], ...] = ()

    def run_id(self, rep: int) -> str:
        return f"{self.key}_r{rep:03d}"

    def as_row(self) -> dict[str, Any]:
        return dict(self.columns)

    def get(self, column: str) -> Any:
        return dict(self.columns)[column]

    def sctp_over(self, knobs: dict[str, int]) -> dict[str, int]:
        """The SCTP knobs its runs get: the experiment's `knobs`, this point's own over them."""
        return {**knobs, **dict(self.sctp_knobs)}


class Workload(Protocol):
    kind: str
    topologies: tuple[str, ...]          # the topologies it can run on
    data_direction: dict[str, str]       # per topology, the shaped direction its data take
    top_keys: dict[str, Any]             # top-level keys of the experiment file it owns
    matrix_keys: dict[str, Any]          # its axes in [matrix], beside loss and tcp_profiles
    table: str | None                    # the table of its own settings ([flows]), if any
    table_keys: dict[str, Any]
    metrics: tuple[Metric, ...]
    default_metric: str                  # what decides that a point is tight, unless the
                                         # experiment's [repetitions] metric says otherwise
    point_columns: tuple[str, ...]       # the point's columns, in order
    run_columns: tuple[str, ...]         # its columns of runs.csv after status (metrics first)
    summary_aliases: dict[str, str]      # extra summary.csv names for generic columns
    analysis_version: int                # bumped when `analyse` reads runs differently

    def read(self, reader: Reader, data: dict[str, Any]) -> Any:
        """Its settings from the whole file (already checked against its keys' types)."""

    def record(self, settings: Any) -> dict[str, Any]:
        """Its settings as meta.json records them."""

    def points(self, experiment: Experiment) -> list[Point]: ...

    def estimate_s(self, experiment: Experiment, point: Point) -> float: ...

    def prepare(self, experiment: Experiment, data_root: Path) -> Any:
        """Before the first run: make what runs need (data sets under data_root), check that
        what they use exists (WorkloadError otherwise). What it returns is given to `order`."""

    def order(self, experiment: Experiment, point: Point, prepared: Any) -> dict[str, Any]:
        """Its part of a run's order (JSON), read by `execute` inside the kernel."""

    def execute(self, net: Topology, run: dict[str, Any], run_dir: Path,
                record: dict[str, Any], mark: Callable[[str], None]) -> None:
        """Inside the kernel, on the built topology with the run's links and sysctls applied:
        run it, write what it produced into run_dir and record (its pcap moved to
        run["pcap"], named in record["pcap"]), call mark(phase) at the end of each phase,
        raise RunFailure when the run cannot count."""

    def analyse(self, experiment: Experiment, run_dir: Path, record: dict[str, Any],
                capture: Path | None) -> dict[str, Any]:
        """On the host: its run_columns (None where not measured), "flagged" when a
        cross-check failed, and "notes" (a list of what the reading noticed). `capture` is the
        run's pcap, None when there is none."""
