"""One client-server run on `path` (or `dualpath`), the shape ftp-mget's and http-page's runs
share: the server started and the client's interfaces captured into the run's pcap (on
`dualpath` one capture per path, merged into one pcap in time order at the end, so every
reading of a pcap sees both paths; a path's packets are told by their addresses), and with
run.capture_at's "server" the server's interfaces the same way into pcaps/<run id>.server.pcap;
the client run to its end within the run's limit, and the run's pcaps closed however the run
went, once the client's connections and associations have closed (or TEARDOWN_LIMIT_S;
VIRTUAL_TEARDOWN_LIMIT_S in virtual time) and every packet the kernel handed the captures is
written; a capture that wrote fewer packets than it was handed fails the run (it is redone).

The capture lives as long as the topology (`run_capture.RunCapture`, held in `net.held`): one
start per topology instead of a tcpdump per run. It is in immediate mode in real time and in
block mode in virtual time (`capture_immediate`); a run whose ring or capture differs from the
held one's starts a new one."""
from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from experiments.inkernel.run_capture import CaptureSettings, RunCapture
from topology.net.initial_rto import InitialRto

from .. import procedure
from ..procedure import RunFailure
from . import dataset
from .base import capture_immediate

if TYPE_CHECKING:
    from topology.net.base import Topology

CLIENT_IF = "client-eth0"
SERVER_IF = "server-eth0"
CAPTURE = "client capture"
SERVER_CAPTURE = "server capture"
# wireshark-common's, beside tshark: merges pcaps by their packets' times
MERGECAP = "mergecap"


def capture_settings(run: dict[str, Any], keep_whole: str) -> CaptureSettings:
    """The run's capture: whole packets (up to [run] snaplen), or with [run] capture =
    "headers" every packet cut at HEADERS_SNAPLEN but those `keep_whole` (a pcap filter) names;
    a ring sized to the run's links."""
    ring_kb = procedure.capture_buffer_kb([shape.get("rate_bps")
                                           for shape in run["links"].values()])
    if run.get("capture") == "headers":
        return CaptureSettings(procedure.WHOLE_SNAPLEN, ring_kb, capture_immediate(),
                               procedure.HEADERS_SNAPLEN, keep_whole)
    return CaptureSettings(run["snaplen"], ring_kb, capture_immediate())


def client_interfaces(net: Topology) -> tuple[str, ...]:
    return net.client_interfaces or (CLIENT_IF,)


@dataclass(frozen=True)
class _Side:
    """One end's captures: its node, its interfaces and where its pcap goes."""

    node: str
    interfaces: tuple[str, ...]
    key: str          # its captures' names in net.held
    pcap: str         # the pcap's final path; it is written beside it as .partial first
    recorded_as: str = ""   # the prefix of its keys in the run's record ("server_")

    @property
    def partial(self) -> Path:
        return Path(self.pcap + ".partial")


def _sides(net: Topology, run: dict[str, Any]) -> list[_Side]:
    """The client's captures, and the server's where the run asks for them (server_pcap)."""
    sides = [_Side("client", client_interfaces(net), CAPTURE, run.get("pcap", ""))]
    if run.get("server_pcap"):
        sides.append(_Side("server", net.server_interfaces or (SERVER_IF,), SERVER_CAPTURE,
                           run["server_pcap"], "server_"))
    return sides


def held_captures(net: Topology, run: dict[str, Any], keep_whole: str,
                  side: _Side | None = None) -> list[RunCapture]:
    """The captures of one end's interfaces (the client's unless told), one each, started if
    it has none like the run's (or one of them has stopped)."""
    side = side or _sides(net, run)[0]
    settings = capture_settings(run, keep_whole)
    held = [net.held.get(_name(side.key, i)) for i in range(len(side.interfaces))]
    if all(isinstance(h, RunCapture) and h.settings == settings and h.alive() for h in held):
        return held  # type: ignore[return-value]
    _let_go(net, side.key)
    captures = []
    for i, iface in enumerate(side.interfaces):
        capture = RunCapture(net.node(side.node).popen, iface, settings,
                             run["workload"]["runcapture"])
        net.held[_name(side.key, i)] = capture
        captures.append(capture)
    return captures


def _name(key: str, index: int) -> str:
    return key if index == 0 else f"{key} {index + 1}"


def _part(pcap_partial: Path, index: int, count: int) -> Path:
    """Where capture `index` of `count` writes: the run's pcap itself when it is the only one."""
    return pcap_partial if count == 1 else pcap_partial.with_name(
        f"{pcap_partial.name}.{index + 1}")


@contextmanager
def server_and_capture(net: Topology, run: dict[str, Any], record: dict[str, Any],
                       mark: Callable[[str], None], server_argv: Sequence[str],
                       server_log: Path, keep_whole: str = "") -> Iterator[None]:
    """The server on `server` and the run's pcap open, for the block's length;
    record["capture"] holds the capture's counts, record["pcap"] the pcap's path once it is in
    place (and record["server_capture"], record["server_pcap"] the server's, when the run has
    one: the server's own view of the session, read by no measurement)."""
    client, server = net.node("client"), net.node("server")
    process = None
    sides = _sides(net, run)
    opened: list[tuple[_Side, list[RunCapture]]] = []
    try:
        process = procedure.launch_logged(server.popen, server_argv, server_log)
        try:
            for side in sides:
                captures = held_captures(net, run, keep_whole, side)
                opened.append((side, captures))
                for i, capture in enumerate(captures):
                    capture.open(_part(side.partial, i, len(captures)))
        except RunFailure:
            for side in sides:
                _let_go(net, side.key)
            raise
        first = opened[0][1][0]
        record["capture_ring_kb"] = first.settings.buffer_kb
        record["capture_mode"] = "immediate" if first.settings.immediate else "block"
        if len(opened[0][1]) > 1:
            record["capture_interfaces"] = list(client_interfaces(net))
        procedure.await_ready(process, server_argv, server_log)
        mark("server_and_capture_start")
        yield
    finally:
        if any(capture.is_open for _, captures in opened for capture in captures):
            # the pcap ends with the sessions' closing exchanges, not in the middle of them:
            # so it holds the whole session and the next run's none of it
            record["teardown_s"] = procedure.await_sessions_closed(
                (client.pid, server.pid), procedure.TEARDOWN_LIMIT_S if capture_immediate()
                else procedure.VIRTUAL_TEARDOWN_LIMIT_S)
            for side, captures in opened:
                _close(net, side, captures, record)
        if process is not None:
            procedure.stop(process)
    if record.get("capture_error"):
        raise RunFailure(record["capture_error"])
    for side in sides:
        shortfall = procedure.capture_shortfall(record.get(f"{side.recorded_as}capture", {}))
        if shortfall:
            raise RunFailure(f"{side.recorded_as.replace('_', ' ')}{shortfall}")


def _let_go(net: Topology, key: str = CAPTURE) -> None:
    for name in [n for n in net.held if n == key or n.startswith(f"{key} ")]:
        net.held.pop(name).stop()


def _close(net: Topology, side: _Side, captures: list[RunCapture],
           record: dict[str, Any]) -> None:
    """One end's pcap closed (its captures' pcaps merged into it) and moved into place; a
    capture that fails is recorded (the run fails after its server stopped) and let go, the
    next run starts another."""
    prefix = side.recorded_as
    started = time.monotonic()
    counts: dict[str, int] = {}
    for capture in captures:
        try:
            for key, value in capture.close().items():
                counts[key] = counts.get(key, 0) + value
        except RunFailure as failure:
            record["capture_error"] = f"{capture.iface}: {failure}"
            _let_go(net, side.key)
            break
    if "capture_error" not in record:
        record[f"{prefix}capture"] = counts
    parts = [_part(side.partial, i, len(captures)) for i in range(len(captures))]
    if len(parts) > 1 and all(p.exists() for p in parts):
        _merge(parts, side.partial, record)
    record[f"{prefix}capture_close_s"] = time.monotonic() - started
    if side.partial.exists():
        os.replace(side.partial, side.pcap)
        record[f"{prefix}pcap"] = side.pcap


def _merge(parts: list[Path], into: Path, record: dict[str, Any]) -> None:
    """The interfaces' pcaps as one, in time order (each keeps its own packets' times)."""
    merged = subprocess.run([MERGECAP, "-F", "pcap", "-w", str(into), *map(str, parts)],
                            capture_output=True, text=True, check=False)
    if merged.returncode != 0:
        record["capture_error"] = f"merging the interfaces' pcaps: {merged.stderr.strip()}"
        into.unlink(missing_ok=True)
        return
    for part in parts:
        part.unlink()


def require_intact(download: Path, expected: dict[str, str], what: str,
                   mark: Callable[[str], None]) -> None:
    """Every file of the data set downloaded with its SHA-256, or the run fails (`what`: the
    files' name in its reason)."""
    problems = dataset.verify_download(download, expected)
    if problems:
        raise RunFailure(f"downloaded {what} do not match: " + "; ".join(problems[:5]))
    mark("verify")


def run_client(net: Topology, argv: Sequence[str], run_dir: Path, timeout_s: float,
               record: dict[str, Any], mark: Callable[[str], None]) -> None:
    """The client on `client` to its end: its events into client.jsonl, its complaints into
    client.err; a non-zero exit fails the run with the client's last words."""
    started = time.monotonic()
    record["client_status"] = procedure.run(
        net.node("client").popen, argv, run_dir / "client.jsonl", run_dir / "client.err",
        timeout_s + procedure.RUN_GRACE_S)
    record["client_wall_s"] = time.monotonic() - started
    mark("client")
    if record["client_status"] != 0:
        reason = (run_dir / "client.err").read_text(errors="replace").strip()
        raise RunFailure(f"the client failed ({record['client_status']}): {reason[-300:]}")


# Linux's own initial RTO (TCP_TIMEOUT_INIT): a stack that keeps it needs no sock_ops program.
LINUX_TCP_INITIAL_RTO_MS = 1000


def under_initial_rto(initial_rto_ms: int | None, record: dict[str, Any],
                      session: Callable[[Callable[[list[str]], list[str]]], None]) -> None:
    """`session(wrap)`, where `wrap` puts a program's argv in a cgroup whose sock_ops program
    answers TCP's initial RTO (topology/net/initial_rto.py) when the stack wants another than
    Linux's; the run records it. Otherwise `wrap` leaves an argv as it is."""
    if not initial_rto_ms or initial_rto_ms == LINUX_TCP_INITIAL_RTO_MS:
        session(list)
        return
    with InitialRto(initial_rto_ms) as timer:
        record["tcp_initial_rto"] = {"ms": initial_rto_ms, "cgroup": str(timer.cgroup)}
        session(timer.wrap)
