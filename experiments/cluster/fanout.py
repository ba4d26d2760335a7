"""Fanning an experiment out over worker hosts (playbooks/fanout.yml drives it).

Points are statistically independent and repeated adaptively, so the unit of work is a point:
each pending point goes wholly to one host, which repeats it until its interval is tight or
capped. Longest first onto the host that would finish earliest, counting each host's pinned
kernels, as the coordinator spreads one round's runs over its own kernels.

The commands (of `testbed`):

  plan NAME --json                        points, what each still needs, finished run ids
  assign NAME --hosts HOSTS.json --out D  D/<host>.points and D/<host>.tar.gz (the finished
         [--exclude POINTS]               runs of those points, to push), D/assignment.json
  bundle NAME --out FILE [--points F] [--skip F]   finished runs into one file (and whether a
                                          harness is still running on that ledger)
  merge NAME SRC... [--no-tables]         finished runs of bundles or result folders, merged"""
from __future__ import annotations

import argparse
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from experiments.cluster import merge
from experiments.onhost import tables
from experiments.onhost.coordinator import Harness, HarnessError
from experiments.onhost.ledger import LedgerBusy

HOST_NAME = re.compile(r"[A-Za-z0-9_.:@-]+")


@dataclass
class Share:
    host: str
    kernels: int
    points: list[str] = field(default_factory=list)
    runs: int = 0          # what its points need in their next round
    load_s: float = 0.0    # those runs' estimated seconds


def pending(harness: Harness) -> list[dict[str, Any]]:
    """Every point of the harness with its finished runs, the runs its next round needs and
    their estimated seconds."""
    rows = []
    for key, state in harness.states().items():
        needed = state.needed(harness.experiment)
        rows.append({"key": key, "finished": len(state.reps), "ok": len(state.samples),
                     "needed": needed,
                     "estimate_s": needed * harness.workload.estimate_s(harness.experiment,
                                                                        state.point)})
    return rows


def assign(rows: list[dict[str, Any]], hosts: dict[str, int],
           exclude: set[str] | None = None) -> list[Share]:
    """`exclude`: points a host is still running from an earlier fan-out; given to nobody, so
    no point runs in two places."""
    shares = [Share(host, kernels) for host, kernels in hosts.items()]
    todo = [r for r in rows if r["needed"] and r["key"] not in (exclude or set())]
    for row in sorted(todo, key=lambda r: (-r["estimate_s"], r["key"])):
        share = min(shares, key=lambda s: (s.load_s + row["estimate_s"]) / s.kernels)
        share.points.append(row["key"])
        share.runs += row["needed"]
        share.load_s += row["estimate_s"]
    return shares


def read_hosts(text_or_file: str) -> dict[str, int]:
    """{"host": pinned kernels, ...} from JSON text or a JSON file."""
    path = Path(text_or_file)
    text = path.read_text() if path.is_file() else text_or_file
    try:
        hosts = json.loads(text)
    except json.JSONDecodeError:
        raise HarnessError(f"--hosts: {text_or_file!r} is neither a JSON object nor a file "
                           'holding one, e.g. {"worker1": 2, "worker2": 1}') from None
    if not isinstance(hosts, dict) or not hosts:
        raise HarnessError('--hosts: needs at least one host, e.g. {"worker1": 2}')
    for host, kernels in hosts.items():
        if not HOST_NAME.fullmatch(host):
            raise HarnessError(f"--hosts: {host!r} is not a usable host name")
        if isinstance(kernels, bool) or not isinstance(kernels, int) or kernels < 1:
            raise HarnessError(f"--hosts: {host}: pinned kernels must be a whole number >= 1")
    return hosts


def write_assignment(harness: Harness, shares: list[Share], out: Path) -> dict[str, Any]:
    """Per host: its point list and a bundle of the merged finished runs of its points, so the
    host goes on from wherever any host left those points."""
    out.mkdir(parents=True, exist_ok=True)
    finished = sorted(harness.ledger.finished())
    hosts = {}
    for share in shares:
        (out / f"{share.host}.points").write_text("".join(f"{k}\n" for k in share.points))
        pushed = merge.bundle(harness.ledger, out / f"{share.host}.tar.gz", set(share.points))
        hosts[share.host] = {**asdict(share), "pushed_runs": len(pushed)}
    assignment = {"experiment": {"name": harness.experiment.name,
                                 "file": str(harness.experiment.file)},
                  "hosts": hosts, "finished": finished}
    (out / "assignment.json").write_text(json.dumps(assignment, indent=1) + "\n")
    return assignment


# -- command line -------------------------------------------------------------------------------
def add_commands(command, experiment_arguments) -> None:
    """The fan-out subcommands of `testbed` (see experiments/onhost/cli.py)."""
    assign_cmd = experiment_arguments(command(
        "assign", "split the pending points over worker hosts",
        """testbed assign multistream --hosts '{"w1": 2, "w2": 1}' --out shares/"""))
    assign_cmd.add_argument("--hosts", required=True,
                            help='JSON object (or a file holding one): {"host": pinned kernels}')
    assign_cmd.add_argument("--out", type=Path, required=True, help="folder for the shares")
    assign_cmd.add_argument("--exclude", type=Path,
                            help="point keys to give nobody (still running on some host)")
    bundle_cmd = experiment_arguments(command(
        "bundle", "pack finished runs into one .tar.gz",
        "testbed bundle multistream --out w1.tar.gz --points shares/w1.points"))
    bundle_cmd.add_argument("--out", type=Path, required=True)
    bundle_cmd.add_argument("--points", type=Path, help="only runs of these point keys")
    bundle_cmd.add_argument("--skip", type=Path, help="leave out these run ids (one a line)")
    merge_cmd = experiment_arguments(command(
        "merge", "merge the finished runs of bundles or result folders",
        "testbed merge multistream w1.tar.gz other-host/results"))
    merge_cmd.add_argument("sources", nargs="*", type=Path,
                           help="bundles, results/<experiment> folders or results roots "
                                "(none: only rebuild the tables); give them before the options")
    merge_cmd.add_argument("--no-tables", action="store_true",
                           help="do not rebuild runs.csv, summary.csv and meta.json")


COMMANDS = ("assign", "bundle", "merge")


def main(args: argparse.Namespace, harness: Harness) -> int:
    try:
        if args.command == "assign":
            shares = assign(pending(harness), read_hosts(args.hosts),
                            merge.read_ids(args.exclude))
            assignment = write_assignment(harness, shares, args.out)
            for host, share in assignment["hosts"].items():
                print(f"{host}: {len(share['points'])} points, {share['runs']} runs next, "
                      f"about {share['load_s'] / share['kernels']:.0f} s; "
                      f"{share['pushed_runs']} finished runs pushed")
            return 0
        if args.command == "bundle":
            ids = merge.bundle(harness.ledger, args.out, merge.read_ids(args.points),
                               merge.read_ids(args.skip))
            # busy: a harness still runs there, its runs so far are in the bundle all the same
            print(json.dumps({"bundle": str(args.out), "runs": len(ids),
                              "busy": harness.ledger.busy()}))
            return 0
        return merge_sources(args, harness)
    except merge.MergeError as error:
        raise HarnessError(str(error)) from None
    except LedgerBusy as error:
        raise HarnessError(str(error)) from None


def merge_sources(args: argparse.Namespace, harness: Harness) -> int:
    name = harness.experiment.name
    sources = [_ledger_folder(source, name) for source in args.sources]
    totals: dict[str, Any] = {"sources": [], "copied": 0, "already": 0, "metadata_files": 0}
    with harness.ledger.lock():
        for source in sources:
            report = merge.merge(source, harness.ledger)
            totals["sources"].append({"source": str(source), **report.as_dict()})
            for key in ("copied", "already", "metadata_files"):
                totals[key] += report.as_dict()[key]
        # merged all the same (nothing is lost), but no tables over two kernels or clocks
        harness.refuse_mixed_kernels()
        if not args.no_tables:
            totals["tables"] = str(tables.write(harness.experiment, harness.ledger,
                                                harness.states()))
    totals["pending_points"] = sum(1 for row in pending(harness) if row["needed"])
    print(json.dumps(totals))
    return 0


def _ledger_folder(source: Path, name: str) -> Path:
    """A bundle file, results/<name> itself or a results root holding <name>/."""
    if source.is_file():
        return source
    if (source / "runs").is_dir():
        return source
    if (source / name / "runs").is_dir():
        return source / name
    raise HarnessError(f"{source}: no runs of {name} there: give a bundle (.tar.gz), a "
                       f"results/{name} folder or a results root holding {name}/")
