"""`testbed reproduce`: the verdict on the studies' published findings.

Plans the points the claims (experiments/claims/) need, runs those not finished yet with the
harness (one experiment after another, each resumable as `testbed run` is), then judges every
claim against the runs (analysis/scorecard) and writes results/reproduce/scorecard.csv, .json
and .html (with --quick, under results/reproduce/quick/). Here because it joins the running
(experiments) and the judging (analysis)."""
from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from analysis import ablation, scorecard
from analysis.scorecard import rules
from experiments import claims, workloads
from experiments.onhost import claims_plan, wall_profile
from experiments.onhost.coordinator import Harness
from experiments.onhost.ledger import RESULTS_ROOT, Ledger
from topology.kernel import BACKEND_NAMES

ERRORS = (claims.ClaimError,)
QUICK_KERNEL = "uml-virtual"


Prepare = Callable[[Any, list[str] | None], list[str]]


def add_command(command: Callable[[str, str, str], argparse.ArgumentParser],
                prepare: Prepare) -> None:
    """`prepare` writes the run files a workload's report reads (testbed/cli.py)."""
    parser = command("reproduce", "run what the studies' published findings need and judge "
                                  "each one: the scorecard",
                     "testbed reproduce --quick --studies E1,E4   # then open "
                     "results/reproduce/quick/scorecard.html")
    parser.add_argument("--studies", default="",
                        help="comma-separated studies (default: all of experiments/claims/)")
    parser.add_argument("--quick", action="store_true",
                        help="a reduced copy of each experiment at the cheapest points that "
                             "still judge every claim, two runs a point, in virtual time")
    parser.add_argument("--kernel", choices=BACKEND_NAMES, default=None,
                        help="kernel backend (default: $KERNEL, or uml-virtual with --quick)")
    parser.add_argument("--workers", type=int, default=None,
                        help="pinned kernels at once (default: one per core)")
    parser.add_argument("--results", type=Path, default=RESULTS_ROOT,
                        help="results root (default: results/)")
    parser.add_argument("--plan", action="store_true",
                        help="print the experiments and points it would run, run nothing")
    parser.add_argument("--score-only", action="store_true",
                        help="judge the runs there are, run nothing")
    parser.add_argument("--bench", type=Path, default=None, metavar="FILE",
                        help="also write the wall time per experiment and study, where it went "
                             "(the wall profile) and the verdict counts to FILE (JSON)")
    parser.add_argument("--no-reports", action="store_true",
                        help="do not draw each experiment's report (the scorecard links to it: "
                             "the phases, the router's drops, the congestion windows)")
    parser.set_defaults(handler=functools.partial(handle, prepare=prepare))


def handle(args: argparse.Namespace, prepare: Prepare) -> int:
    studies = [s.strip() for s in args.studies.split(",") if s.strip()] or None
    every = claims.load_all(studies)
    jobs = claims_plan.plan(every, args.results, args.quick)
    if args.plan:
        for job in jobs:
            print(f"{job.experiment.name}: {len(job.points)} points -> {job.folder}")
            for key in job.points:
                print(f"  {key}")
        return 0
    kernel = args.kernel or (QUICK_KERNEL if args.quick else None)
    started = time.monotonic()
    walls: dict[str, float] = {}
    if not args.score_only:
        for number, job in enumerate(jobs, 1):
            print(f"reproduce: experiment {number} of {len(jobs)}: {job.experiment.name}, "
                  f"{len(job.points)} points", file=sys.stderr)
            began = time.monotonic()
            Harness(job.experiment, args.workers, kernel,
                    Ledger.for_experiment(job.experiment.name, job.results_root),
                    only=job.points).run()
            walls[job.claims_of] = time.monotonic() - began
    folder = args.results / claims_plan.REPRODUCE / ("quick" if args.quick else "")
    folders = {job.claims_of: job.folder for job in jobs}
    verdicts = scorecard.score(every, folders)
    if not args.no_reports:
        draw_reports(folders, prepare)
    meta = {"quick": args.quick, "studies": studies or "all", "kernel": kernel or "default",
            "wall_s": round(time.monotonic() - started, 1),
            "experiments": scorecard.provenance(folders)}
    paths = scorecard.write(verdicts, folder, meta, reports=folders,
                            ablations=ablation.answers(args.results))
    print(summary(verdicts))
    print(f"scorecard: {paths['csv']}, {paths['html']}")
    if args.bench:
        write_bench(args.bench, every, jobs, walls, verdicts, meta)
    return 0


def write_bench(out: Path, every: list[claims.Claim], jobs: list[claims_plan.Job],
                walls: dict[str, float], verdicts: list[scorecard.Verdict],
                meta: dict[str, object]) -> None:
    """The benchmark's record: wall time per experiment and per study (an experiment shared by
    two studies counts in each), where each experiment's went, and the verdict counts."""
    studies: dict[str, float] = {}
    for job in jobs:
        for study in sorted({c.study for c in every if c.experiment == job.claims_of}):
            studies[study] = studies.get(study, 0.0) + walls.get(job.claims_of, 0.0)
    profiles = {}
    for job in jobs:
        _, profile = wall_profile.write(job.folder)
        profiles[job.claims_of] = {"harness_share": profile.harness_share}
    record = {"meta": meta, "wall_s": {k: round(v, 1) for k, v in walls.items()},
              "wall_s_per_study": {k: round(v, 1) for k, v in studies.items()},
              "wall_profile": profiles, "counts": scorecard.write_counts(verdicts)}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n")
    for study, wall in sorted(studies.items()):
        print(f"{study}: {wall / 60:.1f} min of wall time")
    print(f"benchmark: {out}")


def draw_reports(folders: dict[str, Path], prepare: Prepare) -> None:
    """Each experiment's report, which explains its verdicts (a folder without runs is left, and
    a report already drawn from the same runs by the same code)."""
    from analysis import report, results

    for folder in folders.values():
        try:
            result_set = results.load(folder)
        except results.ResultError:
            continue
        module = workloads.report_of(result_set.workload)
        if report.is_current(result_set, module):
            continue
        problems = prepare(result_set, None)
        out = report.write(result_set, module, None, False, None)
        for problem in problems + out.problems:
            print(f"warning: {problem}", file=sys.stderr)


def summary(verdicts: list[scorecard.Verdict]) -> str:
    counts = scorecard.write_counts(verdicts)
    lines = ["study  " + "  ".join(f"{v:>14}" for v in rules.VERDICTS)]
    for study, by in sorted(counts.items()):
        lines.append(f"{study:<6} " + "  ".join(f"{by[v]:>14}" for v in rules.VERDICTS))
    return "\n".join(lines)
