"""The analysis layer's commands, part of `testbed` (testbed/cli.py):

  testbed report EXP [--results DIR] [--out DIR] [--log] [--run RUN_ID ...]
  testbed speedup EXP [--results DIR]       the speed-up tables of an ftp-mget experiment
  testbed decode PCAP                       FTP over SCTP lines, per stream

EXP is an experiment name (results/EXP/), a .toml file (its stem), or a result folder."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from experiments.tshark import TsharkError
from experiments.tshark.ftp import over_sctp
from topology.kernel.base import default_results_root

from . import results
from .wireshark import DISSECTOR

ERRORS = (results.ResultError, TsharkError, KeyError)


def result_folder(experiment: str, root: Path) -> Path:
    candidate = Path(experiment)
    if candidate.is_dir():
        return candidate
    name = candidate.stem if candidate.suffix == ".toml" else experiment
    return root / name


def add_commands(command: Callable[[str, str, str], argparse.ArgumentParser]) -> None:
    """`command(name, help, example)` makes a subcommand's parser."""
    rep = command("report", "figures, tables and report.html of an experiment's results",
                  "testbed report demo --log   # -> results/demo/report/report.html")
    rep.add_argument("experiment")
    rep.add_argument("--results", type=Path, default=default_results_root(),
                     help="results root (default: results/)")
    rep.add_argument("--out", type=Path, default=None,
                     help="report folder (default: results/EXP/report)")
    rep.add_argument("--log", action="store_true", help="logarithmic time axis")
    rep.add_argument("--run", action="append", default=None, metavar="RUN_ID",
                     help="a run to draw as time-sequence (repeatable; default: one per "
                          "variant at the highest loss)")
    spd = command("speedup", "print the speed-up tables of an FTP experiment",
                  "testbed speedup smoke")
    spd.add_argument("experiment")
    spd.add_argument("--results", type=Path, default=default_results_root())
    dec = command("decode", "FTP over SCTP in a pcap, through the Lua dissector",
                  "testbed decode results/smoke/pcaps/RUN.pcap")
    dec.add_argument("pcap", type=Path)
    for parser in (rep, spd, dec):
        parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    if args.command == "decode":
        for line in over_sctp(args.pcap, DISSECTOR):
            print(f"{line.frame:6d} {line.variant:11s} stream {line.stream} {line.role:7s} "
                  f"{' '.join(line.commands)} {' '.join(map(str, line.reply_codes))}")
        return 0
    # matplotlib and scipy load only for the commands that draw or compute
    from . import report
    from .ftp_mget import speedup
    from .ftp_mget.points import FtpResults

    result_set = results.load(result_folder(args.experiment, args.results))
    if args.command == "speedup":
        if result_set.workload != "ftp-mget":
            raise results.ResultError(f"{result_set.root}: speed-ups compare FTP variants; "
                                      f"this is a {result_set.workload} experiment")
        for s in speedup.speedups(FtpResults(result_set)):
            print(f"{s.comparison:36s} {speedup.describe_cell(s.variant.key):32s} "
                  f"{speedup.format_ratio(s)}")
        return 0
    out = report.write(result_set, args.out, args.log, args.run)
    for problem in out.problems:
        print(f"warning: {problem}", file=sys.stderr)
    if not result_set.complete:
        print(f"{result_set.name}: partial result set: {len(result_set.missing())} points "
              f"missing, {len(result_set.unfinished())} unfinished (marked in the report)",
              file=sys.stderr)
    print(out.html)
    return 0
