"""`testbed ablation STUDY`: which of the era stack's mechanisms moves each of a study's
findings, and by how much.

Runs the study's ablation experiment (experiments/ablation-<study>.toml: the points of its
diverging findings, on today's stack, on today's with each one of the era stack's mechanisms,
and on the era stack; resumable as `testbed run` is), judges every claim of the study on each
step as the scorecard does (analysis/scorecard), and writes results/<experiment>/ablation/:
ablation.csv, .json, .md and .png (analysis/ablation.py). Here because it joins the running
(experiments) and the judging (analysis)."""
from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path

from analysis import ablation, results, scorecard
from experiments import claims, spec
from experiments.onhost.coordinator import Harness
from experiments.onhost.ledger import RESULTS_ROOT, Ledger
from topology.kernel import BACKEND_NAMES

ERRORS = (claims.ClaimError, ablation.AblationError, results.ResultError)
# The era stacks need the switches of the project's kernel; virtual time keeps the long runs
# of the era's slow recoveries short.
DEFAULT_KERNEL = "uml-virtual"


def add_command(command: Callable[[str, str, str], argparse.ArgumentParser]) -> None:
    parser = command("ablation", "run a study's findings from today's stack to the era stack, "
                                 "one mechanism at a time, and say which moves each finding",
                     "testbed ablation E1   # then open results/ablation-e1/ablation/"
                     "ablation.md")
    parser.add_argument("study", help="a study of experiments/claims/ (E1, ...)")
    parser.add_argument("--experiment", default=None, metavar="NAME_OR_FILE",
                        help="the ablation's experiment (default: ablation-<study>)")
    parser.add_argument("--kernel", choices=BACKEND_NAMES, default=None,
                        help=f"kernel backend (default: $KERNEL, else {DEFAULT_KERNEL})")
    parser.add_argument("--workers", type=int, default=None,
                        help="pinned kernels at once (default: one per core)")
    parser.add_argument("--results", type=Path, default=RESULTS_ROOT,
                        help="results root (default: results/)")
    parser.add_argument("--score-only", action="store_true",
                        help="judge the runs there are, run nothing")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    # each finding once: an [[also]] copy is the same claim on another setup, and here every
    # claim is judged on the ablation's own runs
    every = [c for c in claims.load_all([args.study]) if not c.copy_of]
    experiment = spec.load(args.experiment or f"ablation-{args.study.lower()}")
    kernel = args.kernel or os.environ.get("KERNEL") or DEFAULT_KERNEL
    if not args.score_only:
        Harness(experiment, args.workers, kernel,
                Ledger.for_experiment(experiment.name, args.results)).run()
    folder = args.results / experiment.name
    result_set = results.load(folder)
    order, names = ablation.plan_of(result_set.meta)
    verdicts = scorecard.score(every, {c.experiment: folder for c in every})
    meta = {"study": args.study, "experiment": experiment.name, "folder": str(folder),
            **{k: result_set.meta.get(k) for k in ("backend", "kernel_release", "clock")}}
    table = ablation.table_of(every, verdicts, order, names)
    paths = ablation.write(table, order, names, folder / "ablation", meta)
    print("\n".join(ablation.summary(table)))
    print(f"ablation: {paths['md']}, {paths['png']}")
    if not result_set.complete:
        print(f"{experiment.name}: partial result set: {len(result_set.missing())} points "
              "missing (run the command again to finish them)", file=sys.stderr)
    return 0

