"""The files through which the host hands batches to a kernel it keeps (kernel_session.py) and
the kernel answers (kernel_serve.py), in the kernel's folder on the host's filesystem: the
kernel's root is the host's, so each side sees the other's writes at once. Each file appears
whole, by an atomic rename after an fsync: the kernel's hostfs passes a rename to the host at
once but keeps the data in its page cache, so a kernel killed between the two would leave the
host an empty file.

    request   the host: the path of the next batch file to run
    done      the kernel: {"batch": path, "status": 0 or 1, "error": why it failed}
    stop      the host: run no more batches and halt"""
from __future__ import annotations

import os
from pathlib import Path

REQUEST = "request"
DONE = "done"
STOP = "stop"
POLL_S = 0.05      # how often each side looks for the other's file


def write_atomically(path: Path, text: str) -> None:
    partial = path.with_name(path.name + ".tmp")
    with partial.open("w") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    os.replace(partial, path)
