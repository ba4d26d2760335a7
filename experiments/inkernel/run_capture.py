"""A capture that lives as long as a topology and writes one pcap per run: ftp-impl's
`runcapture`, started once on a node's interface and told where each run's packets go. A
tcpdump started per run cost a few hundred ms inside the pinned kernel before it captured (its
ring's pages mapped one by one) and its stop as much again; this is paid once per topology.

    capture = RunCapture(node.popen, "client-eth0", CaptureSettings(...), binary)
    capture.open(pcap)      # the run's packets from now on
    counts = capture.close()  # once every packet handed over is written: tcpdump's counts
    capture.stop()          # the topology's end

With `headers` it writes the packets `keep` (a pcap filter) names whole and every other one cut
after `headers` bytes, in one pass: the kernel cuts a packet to what the socket filter returns,
and runcapture's filter returns `headers` where the compiled `keep` rejects.

Standard library only, as procedure.py."""
from __future__ import annotations

import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from experiments.procedure import STARTUP_TIMEOUT_S, Launch, RunFailure, read_line, stop

# `close` waits for the kernel to hand over the last packets: in block mode up to its block
# timer (tcpdump's 1 s timeout: within 2 s), then answers; a little more for the answer.
ANSWER_LIMIT_S = 30.0
QUIT_LIMIT_S = 10.0


@dataclass(frozen=True)
class CaptureSettings:
    snaplen: int = 0            # bytes kept of a packet (0: 262144, as tcpdump's -s 0)
    buffer_kb: int = 2048       # the kernel's ring
    immediate: bool = True      # handed each packet at once, not in blocks
    headers: int = 0            # with keep: bytes kept of the packets keep does not name
    keep: str = ""              # a pcap filter: the packets kept up to snaplen

    def argv(self, binary: str, iface: str) -> list[str]:
        argv = [binary, "-i", iface, "-s", str(self.snaplen), "-B", str(self.buffer_kb)]
        if self.immediate:
            argv.append("--immediate-mode")
        if self.headers:
            argv += ["--headers", str(self.headers), "--keep", self.keep]
        return argv


class RunCapture:
    """One runcapture process on a node: `open` and `close` a pcap per run; any failure is a
    RunFailure, after which the capture is stopped (start a new one for the next run)."""

    def __init__(self, launch: Launch, iface: str, settings: CaptureSettings,
                 binary: str) -> None:
        self.iface, self.settings = iface, settings
        self.argv = settings.argv(binary, iface)
        self.process = launch(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
        self.is_open = False
        self._answer("listening on", STARTUP_TIMEOUT_S)

    def alive(self) -> bool:
        return self.process.poll() is None

    def open(self, pcap: Path) -> None:
        if "\n" in str(pcap):
            raise RunFailure(f"a pcap path with a line break: {pcap!r}")
        self._ask(f"open {pcap}", "opened")
        self.is_open = True

    def close(self) -> dict[str, int]:
        """The run's pcap closed, once every packet the kernel handed over was written:
        captured (written), received (handed over while it was open), dropped (the ring was
        full), drain_ms (the wait for the last ones, -1 if runcapture's limit came first)."""
        self.is_open = False
        answer = self._ask("close", "closed")
        return {key: int(value) for key, value in
                (field.split("=", 1) for field in answer.split())}

    def stop(self) -> None:
        """Asked to quit (an open pcap is closed as `close` does); signalled if it does not."""
        if self.process.stdin is not None and self.alive():
            try:
                self.process.stdin.write(b"quit\n")
                self.process.stdin.close()
                self.process.wait(timeout=QUIT_LIMIT_S)
            except (OSError, subprocess.TimeoutExpired):
                pass
        stop(self.process)
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()

    def _ask(self, command: str, expected: str) -> str:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(command.encode() + b"\n")
            self.process.stdin.flush()
        except OSError:
            self._fail(f"runcapture on {self.iface} is gone")
        return self._answer(expected, ANSWER_LIMIT_S)

    def _answer(self, expected: str, limit_s: float) -> str:
        """The next answer line (one per command); what follows `expected`, or RunFailure."""
        assert self.process.stdout is not None
        said = read_line(self.process.stdout.fileno(), limit_s)
        if not said.endswith("\n"):
            self._fail(f"runcapture on {self.iface} exited" if not self.alive() else
                       f"runcapture on {self.iface} did not answer within {limit_s:.0f} s")
        if not said.startswith(expected):
            self._fail(f"runcapture on {self.iface}: {said.strip()[:300]}")
        return said[len(expected):].strip()

    def _fail(self, reason: str) -> None:
        if self.alive():
            stop(self.process, signal.SIGKILL)
        said = self.process.stderr.read() if self.process.stderr is not None else b""
        tail = said.decode(errors="replace").strip()[-300:]
        raise RunFailure(f"{reason}{': ' + tail if tail else ''}")
