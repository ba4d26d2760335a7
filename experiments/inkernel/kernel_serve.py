"""Inside the kernel under test: run batch after batch in one boot, for as long as the host keeps
the kernel (kernel_session.py). A boot, the Python start and a topology's build and link checks
cost seconds each, and an experiment's rounds would pay them again every round.

The host asks for each batch through files in FOLDER (kernel_inbox.py). The topology stays up
between batches while their runs have its structure. Each batch's own output goes to its log
beside it (BATCH.log), as a batch in a kernel of its own leaves it.

    python3 -m experiments.inkernel.kernel_serve FOLDER"""
from __future__ import annotations

import contextlib
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from experiments.inkernel.kernel_batch import Marks, Topologies, run_batch
from experiments.inkernel.kernel_inbox import DONE, POLL_S, REQUEST, STOP, write_atomically
from topology.kernel import metadata


def serve(folder: str) -> int:
    """Until the host says stop. The topology up then is left to the kernel's halt, which
    follows at once: its teardown would take a second and change nothing kept."""
    inbox = Path(folder)
    kernel_metadata = metadata.collect()
    topologies = Topologies(Marks(None))
    while True:
        batch_file = next_batch(inbox)
        if batch_file is None:
            return 0
        answer = run_one(batch_file, topologies, kernel_metadata)
        write_atomically(inbox / DONE, json.dumps(answer))


def next_batch(inbox: Path) -> str | None:
    """The next batch file the host asks for; None once it says stop."""
    request = inbox / REQUEST
    while True:
        if (inbox / STOP).exists():
            return None
        try:
            batch_file = request.read_text().strip()
        except FileNotFoundError:
            time.sleep(POLL_S)
            continue
        request.unlink()
        return batch_file


def run_one(batch_file: str, topologies: Topologies,
            kernel_metadata: dict[str, Any]) -> dict[str, Any]:
    log = Path(batch_file).with_suffix(".log")
    with log.open("w") as out, contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            run_batch(batch_file, topologies, kernel_metadata)
        except Exception:  # the batch failed; the kernel serves the next on a new topology
            traceback.print_exc()
            with contextlib.suppress(Exception):
                topologies.stop()
            return {"batch": batch_file, "status": 1,
                    "error": traceback.format_exc().strip().splitlines()[-1]}
    return {"batch": batch_file, "status": 0, "error": ""}


if __name__ == "__main__":
    sys.exit(serve(sys.argv[1]))
