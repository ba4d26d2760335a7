"""Whether the results disk has room, asked by writing to it: the host's harness before a
round and when a write fails (onhost/disk.py), the kernel's batch when a run fails
(inkernel/kernel_batch.py). A file system's free space alone would not do: a quota or reserved
blocks may refuse a write where space is free, and inside the kernel hostfs reports the host
root's space, not the results disk's."""
from __future__ import annotations

import contextlib
import errno
from pathlib import Path

PROBE_BYTES = 1024**2     # a disk that cannot take this cannot take a run's record and pcap
PROBE = ".space-probe"
FULL = (errno.ENOSPC, errno.EDQUOT)


def refuses_a_write(folder: Path) -> bool:
    """Whether PROBE_BYTES cannot be written into `folder` for want of room."""
    probe = folder / PROBE
    try:
        with open(probe, "wb") as out:
            out.write(b"\0" * PROBE_BYTES)
    except OSError as error:
        return error.errno in FULL
    finally:
        with contextlib.suppress(OSError):
            probe.unlink()
    return False
