"""The harness's commands, part of `testbed` (testbed/cli.py):

  testbed run EXP [--workers N] [--kernel K] [--points FILE] [--host NAME]   run or resume
                 [--slurm [--slurm-partition P] ...]     each round as a Slurm job array
  testbed batch FILE [--kernel K]         one batch of runs in one kernel (what a task runs)
  testbed validate EXP                    check the file, run nothing
  testbed plan EXP [--json]               the points and what the first round runs
  testbed tables EXP                      rebuild runs.csv, summary.csv, matrix.json, meta.json
  testbed profile EXP                     where the wall time went, by phase (wall_profile.py)
  testbed assign|bundle|merge EXP ...     fan an experiment out over hosts (fanout.py)"""
from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path

from experiments import spec
from experiments.cluster import fanout, merge, slurm
from experiments.onhost import launch, wall_profile
from experiments.onhost.analyze import AnalysisError
from experiments.onhost.coordinator import Harness, HarnessError
from experiments.onhost.ledger import RESULTS_ROOT, Ledger
from topology.kernel import BACKEND_NAMES, BackendError
from topology.kernel.uml import exit_on_sigterm
from topology.params import ParameterError

ERRORS = (spec.SpecError, ParameterError, HarnessError, BackendError, merge.MergeError,
          AnalysisError, slurm.SlurmError)
Command = Callable[[str, str, str], argparse.ArgumentParser]


def add_commands(command: Command) -> None:
    """`command(name, help, example)` makes a subcommand's parser."""
    run = command("run", "run or resume an experiment",
                  "testbed run demo --workers 2   # interrupted? the same command resumes")
    _experiment_arguments(run)
    run.add_argument("--workers", type=int, default=None,
                     help="pinned kernels at once (default: one per core)")
    run.add_argument("--kernel", choices=BACKEND_NAMES, default=None,
                     help="kernel backend (default: $KERNEL or uml)")
    run.add_argument("--points", type=Path, default=None,
                     help="run only the point keys in this file (one a line); the runs of "
                          "other points are left as they are")
    run.add_argument("--host", default=None,
                     help="the name each run records as the host that ran it "
                          "(default: this machine's hostname)")
    _slurm_arguments(run)
    batch = command("batch", "run one batch file of runs in one pinned kernel (what a worker "
                             "or a Slurm task runs)",
                    "testbed batch results/smoke/.work/vm-round-1-slurm-1-task0.json")
    batch.add_argument("batch_file", type=Path)
    batch.add_argument("--kernel", choices=BACKEND_NAMES, default=None,
                       help="kernel backend (default: $KERNEL or uml)")
    batch.add_argument("--host", default=None,
                       help="record this host name with the runs instead of the one the batch "
                            "file names (a Slurm task gives its node's)")
    batch.set_defaults(handler=handle_batch)
    _experiment_arguments(command("validate", "check an experiment file, run nothing",
                                  "testbed validate experiments/fairness.toml"))
    plan = command("plan", "list an experiment's points and what its first round runs",
                   "testbed plan smoke --json")
    _experiment_arguments(plan)
    plan.add_argument("--json", action="store_true",
                      help="points with their finished and still needed runs, and the "
                           "finished run ids, as one JSON object")
    _experiment_arguments(command("tables", "rebuild runs.csv, summary.csv, matrix.json and "
                                            "meta.json from the finished runs",
                                  "testbed tables multistream"))
    _experiment_arguments(command("profile", "where an experiment's wall time went, by phase "
                                             "(boot, topology, per-run set-up, transfer, stop, "
                                             "analysis), from its ledger; writes "
                                             "wall-profile.json beside its tables",
                                  "testbed profile smoke"))
    fanout.add_commands(command, _experiment_arguments)


def _slurm_arguments(run: argparse.ArgumentParser) -> None:
    group = run.add_argument_group(
        "Slurm", "each round's runs as one `sbatch --array` job into the shared results "
                 "folder; these override the experiment's [run.slurm] table")
    group.add_argument("--slurm", action="store_true",
                       help="submit to Slurm instead of booting kernels here")
    group.add_argument("--slurm-partition", metavar="NAME", help="partition to queue in")
    group.add_argument("--slurm-task-runs", type=int, metavar="N", help="runs per array task")
    group.add_argument("--slurm-time-limit-min", type=int, metavar="MINUTES",
                       help="time limit per task in minutes (default: from the plan's estimate)")
    group.add_argument("--slurm-memory", metavar="SIZE", help="memory per task (default 2G)")
    group.add_argument("--slurm-cpus", type=int, metavar="N", help="CPUs per task (default 1)")
    group.add_argument("--slurm-option", action="append", dest="slurm_sbatch_options",
                       metavar="OPTION", help="one more sbatch option, verbatim (repeatable)")


def _slurm_settings(args: argparse.Namespace,
                    experiment: spec.Experiment) -> slurm.SlurmSettings | None:
    if not getattr(args, "slurm", False):
        return None
    return slurm.overridden(
        experiment.slurm, partition=args.slurm_partition, task_runs=args.slurm_task_runs,
        time_limit_min=args.slurm_time_limit_min, memory=args.slurm_memory,
        cpus=args.slurm_cpus,
        sbatch_options=[*experiment.slurm.sbatch_options, *args.slurm_sbatch_options]
        if args.slurm_sbatch_options else None)


def handle_batch(args: argparse.Namespace) -> int:
    if not args.batch_file.is_file():
        raise HarnessError(f"{args.batch_file}: no such batch file")
    launch.annotate(args.batch_file, args.host)
    exit_on_sigterm()  # a cancelled Slurm task takes its kernel with it
    error = launch.run_batch_file(args.batch_file, args.kernel)
    if error:
        raise HarnessError(f"{args.batch_file.name}: {error}")
    return 0


def _experiment_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("experiment", help="a name in experiments/ or a .toml file")
    parser.add_argument("--results", type=Path, default=RESULTS_ROOT,
                        help="results root (default: results/)")
    parser.set_defaults(handler=handle)
    return parser


def handle(args: argparse.Namespace) -> int:
    experiment = spec.load(args.experiment)
    only = getattr(args, "points", None)
    harness = Harness(experiment, getattr(args, "workers", None), getattr(args, "kernel", None),
                      Ledger.for_experiment(experiment.name, args.results),
                      only=sorted(merge.read_ids(only)) if only else None,
                      host=getattr(args, "host", None),
                      slurm_settings=_slurm_settings(args, experiment))
    if args.command == "validate":
        where = f" in {experiment.simulator}" if experiment.simulator else ""
        print(f"{experiment.file}: valid, a {experiment.workload} workload on "
              f"{experiment.topology}{where}, {len(harness.points)} points")
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
              f"{reps.confidence:.0%} interval of {reps.metric} is within "
              f"{reps.target_half_width:.0%} of the mean")
        return 0
    if args.command == "tables":
        return write_tables(harness)
    if args.command == "profile":
        return show_profile(harness.ledger.root)
    started = time.monotonic()
    out = harness.run()
    written, profile = wall_profile.write(harness.ledger.root)
    print(f"{experiment.name}: done in {time.monotonic() - started:.0f} s; results in {out}; "
          f"{100 * profile.harness_share:.0f}% of the wall time was not the transfers "
          f"(testbed profile {experiment.name}: by phase)")
    return 0


def write_tables(harness: Harness) -> int:
    """`testbed tables`: a record that cannot count is set aside and named (ledger.py); a full
    disk is an error that says what to do."""
    from experiments.onhost import disk, tables
    try:
        print(tables.write(harness.experiment, harness.ledger, harness.states()))
    except Exception as error:
        refused = disk.no_space(error)
        if refused is None:
            raise
        raise HarnessError(disk.full_message(harness.ledger, refused)) from None
    return 0


def show_profile(root: Path) -> int:
    if not (root / ".work" / wall_profile.COORDINATOR).exists():
        raise HarnessError(f"{root} has no record of its wall time: run the experiment with "
                           "this version of the harness first")
    written, profile = wall_profile.write(root)
    for line in wall_profile.table(profile):
        print(line)
    print(f"written to {written}")
    return 0
