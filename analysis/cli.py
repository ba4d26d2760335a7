"""The analysis layer's command, part of `testbed` (testbed/cli.py):

  testbed report EXP [--results DIR] [--out DIR] [--log] [--run RUN_ID ...]
  testbed ends EXP [--results DIR] [--out DIR]     (both_ends.py: runs captured at both ends)

EXP is an experiment name (results/EXP/), a .toml file (its stem), or a result folder. The
workload's figures and tables come from its own report (experiments/workloads/<name>/report/),
which the `testbed` command hands in as `report_of`, with `prepare`: what writes the run files
that report reads beyond the tables (from the pcaps, by the workload). This layer imports no
workload and reads result files only."""
from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from topology.kernel.base import default_results_root

from . import results

ERRORS = (results.ResultError, KeyError)
ReportOf = Callable[[str], ModuleType | None]
# (result set, the runs asked for) -> what could not be prepared, a line each
Prepare = Callable[[results.ResultSet, list[str] | None], list[str]]


def result_folder(experiment: str, root: Path) -> Path:
    candidate = Path(experiment)
    if candidate.is_dir():
        return candidate
    name = candidate.stem if candidate.suffix == ".toml" else experiment
    return root / name


def add_commands(command: Callable[[str, str, str], argparse.ArgumentParser],
                 report_of: ReportOf, prepare: Prepare) -> None:
    """`command(name, help, example)` makes a subcommand's parser; `report_of(workload)` is
    the workload's report module, `prepare` writes the run files it reads."""
    rep = command("report", "figures, tables and report.html of an experiment's results",
                  "testbed report demo --log   # -> results/demo/report/report.html")
    _result_folder_arguments(rep, "report folder")
    rep.add_argument("--log", action="store_true", help="logarithmic time axis")
    rep.add_argument("--run", action="append", default=None, metavar="RUN_ID",
                     help="a run to draw as time-sequence (repeatable; default: one per "
                          "variant at the highest loss)")
    rep.set_defaults(handler=functools.partial(handle, report_of=report_of, prepare=prepare))
    ends = command("ends", "what the two ends of each run saw: packets sent and arrived per "
                           "direction and kind, SCTP handshakes at both ends",
                   "testbed ends EXP   # -> results/EXP/report/both-ends.csv, handshakes.csv")
    _result_folder_arguments(ends, "folder of the two tables")
    ends.set_defaults(handler=handle_ends)


def _result_folder_arguments(parser: argparse.ArgumentParser, out: str) -> None:
    """EXP, --results and --out, as every command that reads one result folder takes them."""
    parser.add_argument("experiment")
    parser.add_argument("--results", type=Path, default=default_results_root(),
                        help="results root (default: results/)")
    parser.add_argument("--out", type=Path, default=None,
                        help=f"{out} (default: results/EXP/report)")


def handle_ends(args: argparse.Namespace) -> int:
    from . import both_ends

    try:
        result_set = results.load(result_folder(args.experiment, args.results))
        crossings, handshakes = both_ends.read(result_set)
    except results.ResultError as error:
        print(f"testbed ends: {error}", file=sys.stderr)
        return 2
    out = args.out or result_set.root / "report"
    both_ends.write(crossings, out / "both-ends.csv")
    both_ends.write(handshakes, out / "handshakes.csv")
    for line in both_ends.summary(crossings, handshakes):
        print(line)
    print(f"tables: {out / 'both-ends.csv'}, {out / 'handshakes.csv'}")
    return 0


def handle(args: argparse.Namespace, report_of: ReportOf, prepare: Prepare) -> int:
    # matplotlib and scipy load only for the commands that draw or compute
    from . import report

    result_set = results.load(result_folder(args.experiment, args.results))
    unprepared = prepare(result_set, args.run)
    out = report.write(result_set, report_of(result_set.workload), args.out, args.log, args.run)
    for problem in unprepared + out.problems:
        print(f"warning: {problem}", file=sys.stderr)
    if not result_set.complete:
        print(f"{result_set.name}: partial result set: {len(result_set.missing())} points "
              f"missing, {len(result_set.unfinished())} unfinished (marked in the report)",
              file=sys.stderr)
    print(out.html)
    return 0
