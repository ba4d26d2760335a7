"""ftp-mget's own commands, part of `testbed` (testbed/cli.py):

  testbed speedup EXP [--results DIR]       the speed-up tables of an ftp-mget experiment
  testbed decode PCAP                       FTP over SCTP lines, per stream

EXP is an experiment name (results/EXP/), a .toml file (its stem), or a result folder."""
from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from analysis import results
from analysis.cli import result_folder
from analysis.wireshark import DISSECTOR
from experiments.tshark import TsharkError
from topology.kernel.base import default_results_root

from ..measure import over_sctp

ERRORS = (results.ResultError, TsharkError)


def add_commands(command: Callable[[str, str, str], argparse.ArgumentParser]) -> None:
    """`command(name, help, example)` makes a subcommand's parser."""
    spd = command("speedup", "print the speed-up tables of an FTP experiment",
                  "testbed speedup smoke")
    spd.add_argument("experiment")
    spd.add_argument("--results", type=Path, default=default_results_root())
    dec = command("decode", "FTP over SCTP in a pcap, through the Lua dissector",
                  "testbed decode results/smoke/pcaps/RUN.pcap")
    dec.add_argument("pcap", type=Path)
    for parser in (spd, dec):
        parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    if args.command == "decode":
        for line in over_sctp(args.pcap, DISSECTOR):
            print(f"{line.frame:6d} {line.variant:11s} stream {line.stream} {line.role:7s} "
                  f"{' '.join(line.commands)} {' '.join(map(str, line.reply_codes))}")
        return 0
    from . import speedup
    from .points import FtpResults

    result_set = results.load(result_folder(args.experiment, args.results))
    if result_set.workload != "ftp-mget":
        raise results.ResultError(f"{result_set.root}: speed-ups compare FTP variants; "
                                  f"this is a {result_set.workload} experiment")
    for s in speedup.speedups(FtpResults(result_set)):
        print(f"{s.comparison:36s} {speedup.describe_cell(s.variant.key):32s} "
              f"{speedup.format_ratio(s)}")
    return 0
