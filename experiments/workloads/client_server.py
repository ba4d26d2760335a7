"""One client-server run on `path`, the shape ftp-mget's and http-page's runs share: the server
started and the client's interface captured into the run's pcap, the client run to its end
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
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from experiments.inkernel.run_capture import CaptureSettings, RunCapture

from .. import procedure
from ..procedure import RunFailure
from .base import capture_immediate

if TYPE_CHECKING:
    from topology.net.base import Topology

CLIENT_IF = "client-eth0"
CAPTURE = "client capture"


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


def held_capture(net: Topology, run: dict[str, Any], keep_whole: str) -> RunCapture:
    """The topology's capture of the client's interface, started if it has none like the
    run's (or the one it has stopped)."""
    settings = capture_settings(run, keep_whole)
    held = net.held.get(CAPTURE)
    if isinstance(held, RunCapture) and held.settings == settings and held.alive():
        return held
    _let_go(net)
    capture = RunCapture(net.node("client").popen, CLIENT_IF, settings,
                         run["workload"]["runcapture"])
    net.held[CAPTURE] = capture
    return capture


@contextmanager
def server_and_capture(net: Topology, run: dict[str, Any], record: dict[str, Any],
                       mark: Callable[[str], None], server_argv: Sequence[str],
                       server_log: Path, keep_whole: str = "") -> Iterator[None]:
    """The server on `server` and the run's pcap open, for the block's length;
    record["capture"] holds the capture's counts, record["pcap"] the pcap's path once it is in
    place."""
    client, server = net.node("client"), net.node("server")
    pcap_partial = Path(run["pcap"] + ".partial")
    process = capture = None
    try:
        process = procedure.launch_logged(server.popen, server_argv, server_log)
        try:
            capture = held_capture(net, run, keep_whole)
            capture.open(pcap_partial)
        except RunFailure:
            _let_go(net)
            raise
        record["capture_ring_kb"] = capture.settings.buffer_kb
        record["capture_mode"] = "immediate" if capture.settings.immediate else "block"
        procedure.await_ready(process, server_argv, server_log)
        mark("server_and_capture_start")
        yield
    finally:
        if capture is not None and capture.is_open:
            # the pcap ends with the sessions' closing exchanges, not in the middle of them:
            # so it holds the whole session and the next run's none of it
            record["teardown_s"] = procedure.await_sessions_closed(
                (client.pid, server.pid), procedure.TEARDOWN_LIMIT_S if capture_immediate()
                else procedure.VIRTUAL_TEARDOWN_LIMIT_S)
            _close(net, capture, pcap_partial, run, record)
        if process is not None:
            procedure.stop(process)
    if record.get("capture_error"):
        raise RunFailure(record["capture_error"])
    shortfall = procedure.capture_shortfall(record.get("capture", {}))
    if shortfall:
        raise RunFailure(shortfall)


def _let_go(net: Topology) -> None:
    held = net.held.pop(CAPTURE, None)
    if held is not None:
        held.stop()


def _close(net: Topology, capture: RunCapture, pcap_partial: Path, run: dict[str, Any],
           record: dict[str, Any]) -> None:
    """The run's pcap closed and moved into place; a capture that fails is recorded (the run
    fails after its server stopped) and let go, the next run starts another."""
    started = time.monotonic()
    try:
        record["capture"] = capture.close()
    except RunFailure as failure:
        record["capture_error"] = str(failure)
        _let_go(net)
    record["capture_close_s"] = time.monotonic() - started
    if pcap_partial.exists():
        os.replace(pcap_partial, run["pcap"])
        record["pcap"] = run["pcap"]


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
