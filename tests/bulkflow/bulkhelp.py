"""Helpers for the bulkflow tests: start `bulkflow recv`, run `bulkflow send`, read the JSON
event lines, check that a sanitizer said nothing, and read fields out of pcaps with tshark."""
from __future__ import annotations

import json
import os
import selectors
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from tests.ftp.ftphelp import SAN_ENV

SANITIZER_MARKS = ("AddressSanitizer", "LeakSanitizer", "runtime error")


def free_udp_port() -> int:
    """A UDP port free on 127.0.0.1 now: usrsctp's own, one per program."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def events(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def of(evs: list[dict], name: str) -> list[dict]:
    return [e for e in evs if e["event"] == name]


def one(evs: list[dict], name: str) -> dict:
    found = of(evs, name)
    assert len(found) == 1, f"expected one {name} event, got {len(found)}: {evs[-3:]}"
    return found[0]


def clean(stderr: str) -> None:
    assert not any(m in stderr for m in SANITIZER_MARKS), stderr


def bulkflow(bindir: Path, *args) -> list[str]:
    return [str(Path(bindir) / "bulkflow"), *map(str, args)]


class Receiver:
    """`bulkflow recv` on the host; its port from the `ready` event."""

    def __init__(self, bindir: Path, *args) -> None:
        self.proc = subprocess.Popen(bulkflow(bindir, "recv", *args), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True,
                                     env=dict(os.environ, **SAN_ENV))
        self.lines = [self._line(10)]
        self.ready = json.loads(self.lines[0])
        assert self.ready["event"] == "ready", self.lines
        self.port = int(self.ready["listen"].rsplit(":", 1)[1])

    def _line(self, timeout: float) -> str:
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            self.proc.kill()
            raise AssertionError("bulkflow recv printed nothing")
        return self.proc.stdout.readline()

    def finish(self, timeout: float = 60) -> tuple[int, list[dict], str]:
        out, err = self.proc.communicate(timeout=timeout)
        clean(err)
        return self.proc.returncode, events("".join(self.lines) + out), err

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


@dataclass
class Result:
    status: int
    events: list[dict]
    stderr: str
    cpu_s: float    # user + system CPU time the process used
    wall_s: float


def run(bindir: Path, *args, timeout: float = 60) -> Result:
    """Run bulkflow to its end (killed after timeout), with its CPU time from wait4."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.monotonic()
        proc = subprocess.Popen(bulkflow(bindir, *args), stdout=out, stderr=err, text=True,
                                env=dict(os.environ, **SAN_ENV))
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.monotonic() - started
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    clean(stderr)
    assert wall < timeout, f"bulkflow {' '.join(map(str, args))} was killed after {timeout} s"
    return Result(proc.returncode, events(stdout), stderr, usage.ru_utime + usage.ru_stime, wall)


def tshark(pcap: Path, display_filter: str, *fields: str,
           options: tuple[str, ...] = ()) -> list[list[str]]:
    """`options`: tshark's own, e.g. ("-o", "sctp.checksum:CRC-32C") to have it check SCTP's
    checksum."""
    r = subprocess.run(["tshark", "-r", str(pcap), *options, "-Y", display_filter, "-T", "fields",
                        *sum((["-e", f] for f in fields), [])],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return [line.split("\t") for line in r.stdout.splitlines()]
