"""A batch of runs in a simulator instead of a kernel (an experiment's `simulator` key): each
run is handed to its workload's model of that simulator on this host, and recorded as a kernel
run is (runs/<id>/result.json, written last), so the ledger, the tables, the analysis and the
scorecard read it as any other. The batch's metadata names the simulator, its package version
and the clock `simulated` where a kernel batch names its kernel."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from experiments import workloads
from experiments.onhost.ledger import RECORD
from experiments.onhost.tables import write_json

CLOCK = "simulated"
# The package each simulator comes from, the upstream release the results are pinned to, and
# the program it installs.
PACKAGES = {"ns-2": ("ns2", "2.35", "ns")}


class SimulatorMissing(RuntimeError):
    """The simulator is not installed or is not the pinned release."""


def package_version(simulator: str) -> str:
    """The installed package's Debian version; refused when missing or not the pinned
    upstream release (a mean over two simulators' releases would measure neither)."""
    package, release, program = PACKAGES[simulator]
    found = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", package],
                           capture_output=True, text=True)
    version = found.stdout.strip()
    if found.returncode != 0 or not version or shutil.which(program) is None:
        raise SimulatorMissing(f"{simulator} is not installed: run `make setup` (Debian "
                               f"package {package})")
    if not version.startswith(release + "+") and version.split("-")[0] != release:
        raise SimulatorMissing(f"{simulator}: the package {package} is {version}; the "
                               f"testbed's results are pinned to release {release}")
    return version


def metadata(simulator: str, provenance: dict[str, Any]) -> dict[str, Any]:
    version = package_version(simulator)
    return {"backend": simulator, "kernel_release": f"{simulator} {version}",
            "clock": CLOCK, "host_cpu": None, "machine": os.uname().machine,
            "sysctls": None, "tools": {PACKAGES[simulator][0]: version},
            "host": socket.gethostname(), **provenance,
            "topology_build_s": [], "link_checks": [], "tcp_metrics_cached": []}


def run_batch_file(batch_file: Path, simulator: str) -> str | None:
    """Every run of the batch not finished yet, one after the other; an error message when
    the simulator cannot run at all (a run that fails is recorded as failed)."""
    batch = json.loads(batch_file.read_text())
    try:
        written = metadata(simulator, batch.get("provenance", {}))
    except SimulatorMissing as missing:
        return str(missing)
    write_json(Path(batch["metadata_file"]), written)
    for run in batch["runs"]:
        if not (Path(run["dir"]) / RECORD).exists():
            execute(run, simulator, batch_file.stem)
    return None


def execute(run: dict[str, Any], simulator: str, batch: str) -> dict[str, Any]:
    run_dir = Path(run["dir"])
    run_dir.mkdir(parents=True, exist_ok=True)
    record: dict[str, Any] = {"id": run["id"], "point": run["point"], "rep": run["rep"],
                              "workload": run["workload_kind"], "params": run["params"],
                              "links": run["links"], "status": "failed", "reasons": [],
                              "host": run.get("host"), "batch": batch,
                              "started": time.time(), "simulator": {"name": simulator}}
    workload = workloads.get(run["workload_kind"])
    try:
        workload.simulate(simulator, run, run_dir, record)
        record["status"] = "ok"
    except Exception as error:  # any fault fails this run, not the batch
        record["reasons"].append(f"{type(error).__name__}: {error}")
    record["ended"] = time.time()
    write_json(run_dir / RECORD, record)
    return record
