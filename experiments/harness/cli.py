"""The harness's command line.

  python3 -m experiments.harness run NAME [--workers N] [--kernel K]   run (or resume) it
          [--points FILE] [--host NAME]                                  only these points
  python3 -m experiments.harness validate NAME                         check the file only
  python3 -m experiments.harness plan NAME [--json]                    points and first round
  python3 -m experiments.harness tables NAME                           rebuild the CSVs
  python3 -m experiments.harness assign|bundle|merge NAME ...          fan-out over hosts
                                                                       (see fanout.py)"""
from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from pathlib import Path

from topology.kernel import BACKEND_NAMES, BackendError
from topology.params import ParameterError

from . import fanout, merge, spec
from .analyze import AnalysisError
from .coordinator import Harness, HarnessError
from .ledger import RESULTS_ROOT, Ledger


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python3 -m experiments.harness", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run or resume an experiment")
    run.add_argument("experiment", help="a name in experiments/ or a .toml file")
    run.add_argument("--workers", type=int, default=None,
                     help="pinned kernels at once (default: one per core)")
    run.add_argument("--kernel", choices=BACKEND_NAMES, default=None,
                     help="kernel backend (default: $KERNEL or uml)")
    run.add_argument("--results", type=Path, default=RESULTS_ROOT,
                     help="results root (default: results/)")
    run.add_argument("--points", type=Path, default=None,
                     help="run only the point keys in this file (one a line); the runs of "
                          "other points are left as they are")
    run.add_argument("--host", default=None,
                     help="the name each run records as the host that ran it "
                          "(default: this machine's hostname)")
    for name in ("validate", "plan", "tables"):
        command = sub.add_parser(name)
        command.add_argument("experiment")
        command.add_argument("--results", type=Path, default=RESULTS_ROOT)
        if name == "plan":
            command.add_argument("--json", action="store_true",
                                 help="points with their finished and still needed runs, and "
                                      "the finished run ids, as one JSON object")
    fanout.add_commands(sub, RESULTS_ROOT)
    return parser


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    args = build_parser().parse_args(argv)
    try:
        experiment = spec.load(args.experiment)
        only = getattr(args, "points", None)
        harness = Harness(experiment, getattr(args, "workers", None),
                          getattr(args, "kernel", None),
                          Ledger.for_experiment(experiment.name, args.results),
                          only=sorted(merge.read_ids(only)) if only else None,
                          host=getattr(args, "host", None))
        if args.command == "validate":
            print(f"{experiment.file}: valid, {len(harness.points)} points")
            return 0
        if args.command in fanout.COMMANDS:
            return fanout.main(args, harness)
        if args.command == "plan" and args.json:
            print(json.dumps({"name": experiment.name, "file": str(experiment.file),
                              "points": fanout.pending(harness),
                              "finished": sorted(harness.ledger.finished())}))
            return 0
        if args.command == "plan":
            for key in harness.points:
                print(key)
            reps = experiment.repetitions
            print(f"{len(harness.points)} points; {reps.min} to {reps.max} runs each, until the "
                  f"{reps.confidence:.0%} interval is within {reps.target_half_width:.0%} "
                  "of the mean")
            return 0
        if args.command == "tables":
            from . import tables
            print(tables.write(experiment, harness.ledger, harness.states()))
            return 0
        started = time.monotonic()
        out = harness.run()
        print(f"{experiment.name}: done in {time.monotonic() - started:.0f} s; results in {out}")
        return 0
    except (spec.SpecError, ParameterError, HarnessError, BackendError,
            merge.MergeError, AnalysisError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: finished runs are kept; run the same command to resume",
              file=sys.stderr)
        return 130
