"""The host backend: jobs run directly on this machine's kernel, which must have SCTP and netem."""
from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from .base import REPO_ROOT, BackendError, RunResult, job_environment
from .capabilities import missing_pieces


class HostBackend:
    name = "host"

    def __init__(self) -> None:
        if os.geteuid() != 0:
            raise BackendError("the host backend needs root (it creates network namespaces)")
        missing = missing_pieces()
        if missing:
            raise BackendError(
                f"the host kernel {platform.release()} cannot run the experiments; it lacks: "
                + "; ".join(missing) + ". Use KERNEL=uml (the pinned kernel) or KERNEL=auto.")
        self.release = platform.release()

    def run(self, argv: Sequence[str], *, cwd: Path | None = None,
            env: Mapping[str, str] | None = None, timeout_s: float | None = None,
            stream: bool = False) -> RunResult:
        started = time.time()
        proc = subprocess.Popen(list(argv), cwd=cwd or REPO_ROOT,
                                env=job_environment(env, self.name), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        try:
            out, err = _communicate(proc, timeout_s, stream)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
            raise BackendError(f"the job ran past its {timeout_s:.0f} s wall-time limit") from None
        except BaseException:
            os.killpg(proc.pid, 9)
            proc.wait()
            raise
        return RunResult(backend=self.name, kernel_release=self.release,
                         returncode=proc.returncode, stdout=out, stderr=err,
                         timings_s={"total": time.time() - started})


def _communicate(proc: subprocess.Popen[str], timeout_s: float | None,
                 stream: bool) -> tuple[str, str]:
    if not stream:
        return proc.communicate(timeout=timeout_s)
    import threading

    chunks: dict[str, list[str]] = {"out": [], "err": []}

    def pump(src, sink, key: str) -> None:
        for line in src:
            chunks[key].append(line)
            sink.write(line)
            sink.flush()

    pumps = [threading.Thread(target=pump, args=(proc.stdout, sys.stdout, "out")),
             threading.Thread(target=pump, args=(proc.stderr, sys.stderr, "err"))]
    for t in pumps:
        t.start()
    proc.wait(timeout=timeout_s)
    for t in pumps:
        t.join()
    return "".join(chunks["out"]), "".join(chunks["err"])
