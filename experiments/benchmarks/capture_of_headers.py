"""`testbed bench capture-of-headers RESULTS`: whether a capture of headers ([run] capture =
"headers") measures what whole packets measure. For every finished run of an experiment whose
pcaps hold whole packets, it makes the capture of headers the run would have written (every
frame cut at HEADERS_SNAPLEN but those the workload's filter names, by runcapture --read: the
filter program a run's capture installs in the kernel), analyses both the same way, and
compares the rows field by field. It prints the
runs compared, those that differ and in which fields, and the bytes of both captures; writes
results/bench-capture-of-headers.json."""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from experiments import spec
from experiments.onhost import analyze
from experiments.onhost.ledger import Ledger
from topology.kernel.base import REPO_ROOT

from ..procedure import HEADERS_SNAPLEN, WHOLE_SNAPLEN
from ..tshark.pcap_records import pcap_format, records
from ..workloads.base import require_programs

OUTPUT = REPO_ROOT / "results" / "bench-capture-of-headers.json"
# fields that describe the capture itself, not what it measured
NOT_MEASURED = ("pcap_bytes",)


def capture_of_headers(whole: Path, keep_whole: str, out: Path) -> int:
    """Writes `out`: what a capture of headers of `whole`'s packets holds; how many of its
    packets longer than the cut it keeps whole."""
    runcapture = require_programs("runcapture")["runcapture"]
    subprocess.run([runcapture, "--read", str(whole), "--write", str(out),
                    "-s", str(WHOLE_SNAPLEN), "--headers", str(HEADERS_SNAPLEN),
                    "--keep", keep_whole], check=True, capture_output=True)
    data = out.read_bytes()
    layout = pcap_format(data)
    assert layout is not None
    return sum(1 for r in records(data, layout[0])
               if r.captured == r.length > HEADERS_SNAPLEN)


def compare_run(experiment: spec.Experiment, run_dir: Path, record: dict[str, Any],
                whole: Path, scratch: Path) -> dict[str, Any]:
    """Both rows of one run and the fields in which they differ. The capture of headers is
    analysed in a copy of the run's folder (the analysis writes files there)."""
    keep_whole = experiment.kind.whole_in_a_capture_of_headers  # type: ignore[attr-defined]
    copy = scratch / "runs" / run_dir.name
    shutil.copytree(run_dir, copy)
    (scratch / "pcaps").mkdir(exist_ok=True)
    headers = scratch / "pcaps" / f"{run_dir.name}.pcap"
    kept = capture_of_headers(whole, keep_whole, headers)
    try:
        whole_row = analyze.analyse(experiment, run_dir, record)
        headers_row = analyze.analyse(experiment, copy, record)
        differing = sorted(k for k in set(whole_row) | set(headers_row)
                           if k not in NOT_MEASURED and whole_row.get(k) != headers_row.get(k))
        return {"run": run_dir.name, "differing": differing, "kept_whole": kept,
                "whole_bytes": whole.stat().st_size, "headers_bytes": headers.stat().st_size,
                "whole": {k: whole_row.get(k) for k in differing},
                "headers": {k: headers_row.get(k) for k in differing}}
    finally:
        shutil.rmtree(copy)
        headers.unlink()


def compare(root: Path) -> dict[str, Any]:
    """Every finished run under `root` (an experiment's results) with a pcap, compared."""
    meta = json.loads((root / "meta.json").read_text())
    experiment = spec.load(meta["experiment"]["file"])
    if not getattr(experiment.kind, "whole_in_a_capture_of_headers", None):
        raise SystemExit(f"the {experiment.workload} workload has no capture of headers")
    ledger = Ledger(root)
    runs = []
    with tempfile.TemporaryDirectory() as scratch:
        for run_id, record in sorted(ledger.finished().items()):
            whole = analyze.capture_of(ledger.run_dir(run_id), record)
            if record["status"] != "ok" or whole is None or not whole.exists():
                continue
            runs.append(compare_run(experiment, ledger.run_dir(run_id), record, whole,
                                    Path(scratch)))
            print(f"{run_id}: {'same' if not runs[-1]['differing'] else runs[-1]['differing']}",
                  flush=True)
    return {"results": str(root), "runs": len(runs),
            "differing_runs": sum(1 for r in runs if r["differing"]),
            "whole_bytes": sum(r["whole_bytes"] for r in runs),
            "headers_bytes": sum(r["headers_bytes"] for r in runs), "per_run": runs}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="testbed bench capture-of-headers", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="example:\n  testbed bench capture-of-headers "
                                            "results/smoke")
    parser.add_argument("results", type=Path, help="an experiment's results folder")
    parser.add_argument("--out", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    report = compare(args.results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    ratio = report["whole_bytes"] / max(1, report["headers_bytes"])
    print(f"{report['runs']} runs compared, {report['differing_runs']} measure differently; "
          f"captures {report['whole_bytes'] / 1e6:.0f} MB whole, "
          f"{report['headers_bytes'] / 1e6:.0f} MB of headers ({ratio:.1f}x less)")
    return 1 if report["differing_runs"] else 0
