"""testbed: re-run published TCP vs SCTP studies on real Linux stacks, in a pinned kernel.

Run an experiment, then draw its report:
  testbed run demo                 # results/demo/: runs.csv, summary.csv, pcaps/, meta.json
  testbed report demo              # results/demo/report/report.html
Check or list an experiment file without running it:
  testbed validate experiments/fairness.toml
  testbed plan smoke
Try a network by hand:
  testbed net path --rate 1Mbit --delay 35ms -- ping -c 3 10.0.2.1

`testbed COMMAND --help` says more about each command, with an example."""
from __future__ import annotations

import argparse
import os
import signal
import sys
from typing import Any

# Mininet imports distutils; the standard library's is fast, setuptools' shim is not.
os.environ.setdefault("SETUPTOOLS_USE_DISTUTILS", "stdlib")

from analysis import cli as analysis_cli  # noqa: E402
from experiments import workloads  # noqa: E402
from experiments.benchmarks import cli as benchmarks_cli  # noqa: E402
from experiments.deploy import cli as deploy_cli  # noqa: E402
from experiments.onhost import cli as harness_cli  # noqa: E402
from experiments.workloads.ftp_mget.report import cli as ftp_cli  # noqa: E402
from testbed import ablate, reproduce  # noqa: E402
from topology import cli as topology_cli  # noqa: E402

LAYERS = (harness_cli, analysis_cli, ftp_cli, topology_cli, benchmarks_cli, deploy_cli)
# Commands that run something after `--` take everything behind it verbatim.
PASSTHROUGH = ("kernel", "net")
# Commands that hand their options on to a program of their own (`testbed controller tc
# --rate ...`, `testbed bench virtual-clock --e1`): how many words name them.
FORWARDING = {"controller": 1, "deploy-emulated": 1, "bench": 2}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="testbed", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help_text: str, example: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help_text, description=help_text.capitalize() + ".",
                              epilog=f"example:\n  {example}",
                              formatter_class=argparse.RawDescriptionHelpFormatter)

    for layer in LAYERS:
        if layer is analysis_cli:
            # the report draws each workload's figures, handed in from the workloads' registry
            layer.add_commands(command, workloads.report_of, report_data)
        else:
            layer.add_commands(command)
    reproduce.add_command(command, report_data)
    ablate.add_command(command)
    return parser


def report_data(result_set: Any, run_ids: list[str] | None) -> list[str]:
    """Before a report: the run files its workload's report reads beyond the tables (`runs_drawn`
    names the runs), written by the workload from their pcaps (`report_data`); what could not
    be, a line each. Here because it joins a report (analysis) and its workload (experiments)."""
    kind = result_set.workload
    report = workloads.report_of(kind)
    if report is None or not hasattr(report, "runs_drawn"):
        return []
    workload = workloads.get(kind)
    if not hasattr(workload, "report_data"):
        return []
    return workload.report_data(result_set.root, report.runs_drawn(result_set, run_ids))


def split_command(argv: list[str]) -> tuple[list[str], list[str]]:
    """What argparse reads, and what goes on verbatim: for `kernel` and `net` the command
    after `--`; for a forwarding command everything after its name (but its own --help)."""
    if argv and argv[0] in PASSTHROUGH and "--" in argv:
        cut = argv.index("--")
        return argv[:cut], argv[cut + 1:]
    words = FORWARDING.get(argv[0], 0) if argv else 0
    if words and len(argv) > words and argv[words - 1] not in ("-h", "--help"):
        return argv[:words], argv[words:]
    return argv, []


def _interrupt(*_: Any) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    # A termination request ends the run the same way Ctrl-C does: through cleanup, which
    # stops every kernel this process started.
    signal.signal(signal.SIGTERM, _interrupt)
    # Output piped into `head` ends quietly, as other command-line tools do.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    options, command = split_command(list(sys.argv[1:] if argv is None else argv))
    args = build_parser().parse_args(options)
    args.argv = command
    if args.command in FORWARDING:
        args.options = command
    errors = tuple(error for layer in (*LAYERS, reproduce, ablate) for error in layer.ERRORS)
    try:
        return args.handler(args)
    except errors as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: finished runs are kept and every kernel was stopped; run the same "
              "command to resume", file=sys.stderr)
        return 130
