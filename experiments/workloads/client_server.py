"""One client-server run on `path` (or `dualpath`), the shape ftp-mget's and http-page's runs
share: the server started and the client's interfaces captured into the run's pcap (on
`dualpath` one capture per path, merged into one pcap in time order at the end, so every
reading of a pcap sees both paths; a path's packets are told by their addresses), the client
run to its end
within the run's limit, and the run's pcap closed however the run went, once the client's
connections and associations have closed (or TEARDOWN_LIMIT_S; VIRTUAL_TEARDOWN_LIMIT_S in
virtual time) and every packet the kernel handed the capture is written; a capture that wrote
fewer packets than it was handed fails the run (it is redone).

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
CAPTURE = "client capture"
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


def held_captures(net: Topology, run: dict[str, Any], keep_whole: str) -> list[RunCapture]:
    """The topology's captures of the client's interfaces, one each, started if it has none
    like the run's (or one of them has stopped)."""
    settings = capture_settings(run, keep_whole)
    interfaces = client_interfaces(net)
    held = [net.held.get(_name(i)) for i in range(len(interfaces))]
    if all(isinstance(h, RunCapture) and h.settings == settings and h.alive() for h in held):
        return held  # type: ignore[return-value]
    _let_go(net)
    captures = []
    for i, iface in enumerate(interfaces):
        capture = RunCapture(net.node("client").popen, iface, settings,
                             run["workload"]["runcapture"])
        net.held[_name(i)] = capture
        captures.append(capture)
    return captures


def _name(index: int) -> str:
    return CAPTURE if index == 0 else f"{CAPTURE} {index + 1}"


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
    place."""
    client, server = net.node("client"), net.node("server")
    pcap_partial = Path(run["pcap"] + ".partial")
    process = None
    captures: list[RunCapture] = []
    try:
        process = procedure.launch_logged(server.popen, server_argv, server_log)
        try:
            captures = held_captures(net, run, keep_whole)
            for i, capture in enumerate(captures):
                capture.open(_part(pcap_partial, i, len(captures)))
        except RunFailure:
            _let_go(net)
            raise
        record["capture_ring_kb"] = captures[0].settings.buffer_kb
        record["capture_mode"] = "immediate" if captures[0].settings.immediate else "block"
        if len(captures) > 1:
            record["capture_interfaces"] = list(client_interfaces(net))
        procedure.await_ready(process, server_argv, server_log)
        mark("server_and_capture_start")
        yield
    finally:
        if any(capture.is_open for capture in captures):
            # the pcap ends with the sessions' closing exchanges, not in the middle of them:
            # so it holds the whole session and the next run's none of it
            record["teardown_s"] = procedure.await_sessions_closed(
                (client.pid, server.pid), procedure.TEARDOWN_LIMIT_S if capture_immediate()
                else procedure.VIRTUAL_TEARDOWN_LIMIT_S)
            _close(net, captures, pcap_partial, run, record)
        if process is not None:
            procedure.stop(process)
    if record.get("capture_error"):
        raise RunFailure(record["capture_error"])
    shortfall = procedure.capture_shortfall(record.get("capture", {}))
    if shortfall:
        raise RunFailure(shortfall)


def _let_go(net: Topology) -> None:
    for name in [n for n in net.held if n.startswith(CAPTURE)]:
        net.held.pop(name).stop()


def _close(net: Topology, captures: list[RunCapture], pcap_partial: Path, run: dict[str, Any],
           record: dict[str, Any]) -> None:
    """The run's pcap closed (the captures' pcaps merged into it) and moved into place; a
    capture that fails is recorded (the run fails after its server stopped) and let go, the
    next run starts another."""
    started = time.monotonic()
    counts: dict[str, int] = {}
    for capture in captures:
        try:
            for key, value in capture.close().items():
                counts[key] = counts.get(key, 0) + value
        except RunFailure as failure:
            record["capture_error"] = f"{capture.iface}: {failure}"
            _let_go(net)
            break
    if "capture_error" not in record:
        record["capture"] = counts
    parts = [_part(pcap_partial, i, len(captures)) for i in range(len(captures))]
    if len(parts) > 1 and all(p.exists() for p in parts):
        _merge(parts, pcap_partial, record)
    record["capture_close_s"] = time.monotonic() - started
    if pcap_partial.exists():
        os.replace(pcap_partial, run["pcap"])
        record["pcap"] = run["pcap"]


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
