"""On the host: one batch file run in one freshly booted pinned kernel. A local worker thread
and a Slurm array task (`testbed batch FILE`) both come here, so a run is the same run
wherever it was scheduled.

The batch file (written by the coordinator) lists the runs and where the kernel's metadata go;
the kernel's own output is kept beside it as FILE.log."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from experiments.onhost import stamps
from topology.kernel import BackendError, metadata, open_backend

PYTHON = "/usr/bin/python3"
KERNEL_MEMORY = "640M"          # downloads of a session are held in the kernel's tmpfs
BATCH_OVERHEAD_S = 300.0


def timeout_s(runs: list[dict]) -> float:
    """No run outlasts its time-out; the batch gets theirs and a boot's worth on top."""
    return sum(run["timeout_s"] + 60 for run in runs) + BATCH_OVERHEAD_S


def runs_it_may_run(batch: dict) -> list[dict]:
    """Its own runs, and the other workers' it may take (sharing.py)."""
    return batch["runs"] + [run for other in batch.get("stealable", []) for run in other]


def run_batch_file(batch_file: Path, kernel: str | None) -> str | None:
    """Boots a kernel for the batch and waits for it; None when it ran to its end, else why
    not. The runs it finished are in the ledger either way."""
    stamper = stamps.Stamper(stamps.marks_file(batch_file))
    launched = time.time()
    stamper.start()
    try:
        backend = open_backend(kernel, memory=KERNEL_MEMORY)
        result = backend.run(
            [PYTHON, "-m", "experiments.inkernel.kernel_batch", str(batch_file)],
            timeout_s=timeout_s(runs_it_may_run(json.loads(batch_file.read_text()))))
    except BackendError as error:
        return str(error)
    finally:
        stamper.stop()
    stamps.write(batch_file, launched, time.time(), stamper, result.timings_s, result.clock)
    batch_file.with_suffix(".log").write_text(result.stdout + result.stderr)
    if result.returncode != 0:
        tail = "\n".join(result.stderr.strip().splitlines()[-8:])
        return f"stopped early (exit {result.returncode}):\n{tail}"
    return None


def annotate(batch_file: Path, host: str | None) -> None:
    """What the coordinator could not know when it wrote the batch, recorded with its runs:
    `host`, the node a scheduler chose (every run and the metadata name it), whether this task
    runs in a container, and under Slurm the job and task."""
    batch = json.loads(batch_file.read_text())
    provenance = batch.setdefault("provenance", {})
    if host:
        for run in batch["runs"]:
            run["host"] = host
        provenance["host"] = host
    provenance["container"] = metadata.container()
    if os.environ.get("SLURM_JOB_ID"):
        provenance["slurm"] = {key: os.environ.get(f"SLURM_{key.upper()}") for key in
                               ("job_id", "array_job_id", "array_task_id", "job_partition")}
    partial = batch_file.with_name(batch_file.name + ".tmp")
    partial.write_text(json.dumps(batch))
    partial.replace(batch_file)
