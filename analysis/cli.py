"""The analysis command line.

  python3 -m analysis report EXP [--results DIR] [--out DIR] [--log] [--run RUN_ID ...]
  python3 -m analysis speedup EXP [--results DIR]       the speed-up tables as text
  python3 -m analysis decode PCAP                       FTP over SCTP lines, per stream

EXP is an experiment name (results/EXP/), a .toml file (its stem), or a result folder."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import report, results, speedup, tshark

REPO = Path(__file__).resolve().parents[1]
RESULTS_ROOT = REPO / "results"


def result_folder(experiment: str, root: Path) -> Path:
    candidate = Path(experiment)
    if candidate.is_dir():
        return candidate
    name = candidate.stem if candidate.suffix == ".toml" else experiment
    return root / name


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python3 -m analysis", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("report", help="figures, tables and report.html of an experiment")
    rep.add_argument("experiment")
    rep.add_argument("--results", type=Path, default=RESULTS_ROOT, help="results root")
    rep.add_argument("--out", type=Path, default=None,
                     help="report folder (default: results/EXP/report)")
    rep.add_argument("--log", action="store_true", help="logarithmic time axis")
    rep.add_argument("--run", action="append", default=None, metavar="RUN_ID",
                     help="a run to draw as time-sequence (repeatable; default: one per "
                          "variant at the highest loss)")
    spd = sub.add_parser("speedup", help="print the speed-up tables")
    spd.add_argument("experiment")
    spd.add_argument("--results", type=Path, default=RESULTS_ROOT)
    dec = sub.add_parser("decode", help="FTP over SCTP in a pcap, through the Lua dissector")
    dec.add_argument("pcap", type=Path)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "decode":
            for line in tshark.ftp_over_sctp(args.pcap):
                print(f"{line.frame:6d} {line.variant:11s} stream {line.stream} {line.role:7s} "
                      f"{' '.join(line.commands)} {' '.join(map(str, line.reply_codes))}")
            return 0
        result_set = results.load(result_folder(args.experiment, args.results))
        if args.command == "speedup":
            for s in speedup.speedups(result_set):
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
    except (results.ResultError, tshark.TsharkError, KeyError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
