"""One client-server run on `path`, the shape ftp-mget's and http-page's runs share: the server
and a capture of the client's interface started side by side (each costs a few hundred ms in
the kernel), the client run to its end within the run's limit, and the capture stopped and
moved to the run's pcap however the run went, once the client's connections and associations
have closed (or TEARDOWN_LIMIT_S; VIRTUAL_TEARDOWN_LIMIT_S in virtual time); a capture that
wrote fewer packets than it was handed fails the run (it is redone). The capture is in
immediate mode in real time and in block mode in virtual time (`capture_immediate`)."""
from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import procedure
from ..procedure import RunFailure
from ..tshark.pcap_splice import SpliceError, splice
from .base import capture_immediate

if TYPE_CHECKING:
    from topology.net.base import Topology

CLIENT_IF = "client-eth0"


@contextmanager
def server_and_capture(net: Topology, run: dict[str, Any], record: dict[str, Any],
                       mark: Callable[[str], None], server_argv: Sequence[str],
                       server_log: Path, keep_whole: str = "") -> Iterator[None]:
    """The server on `server` and tcpdump on the client's interface, both ready, for the
    block's length; record["capture"] holds tcpdump's closing counts, record["pcap"] the
    pcap's path once it is in place. A capture of headers (run["capture"]) is two: every
    packet cut at HEADERS_SNAPLEN, and the packets of `keep_whole` (a BPF filter) whole,
    spliced into one pcap once both stopped (record["whole_capture"]: the second's counts)."""
    client, server = net.node("client"), net.node("server")
    pcap_partial = Path(run["pcap"] + ".partial")
    whole_partial = Path(run["pcap"] + ".whole.partial")
    headers = run.get("capture") == "headers"
    process = capture = whole = None
    try:
        process = procedure.launch_logged(server.popen, server_argv, server_log)
        ring_kb = procedure.capture_buffer_kb([shape.get("rate_bps")
                                               for shape in run["links"].values()])
        capture = procedure.launch_capture(
            client.popen, CLIENT_IF, pcap_partial,
            procedure.HEADERS_SNAPLEN if headers else run["snaplen"], buffer_kb=ring_kb,
            immediate=capture_immediate())
        if headers:
            whole = procedure.launch_capture(
                client.popen, CLIENT_IF, whole_partial, procedure.WHOLE_SNAPLEN, keep_whole,
                buffer_kb=procedure.WHOLE_CAPTURE_BUFFER_KB, immediate=capture_immediate())
        record["capture_ring_kb"] = ring_kb
        record["capture_mode"] = "immediate" if capture_immediate() else "block"
        procedure.await_ready(process, server_argv, server_log)
        procedure.await_capture(capture, CLIENT_IF)
        if whole is not None:
            procedure.await_capture(whole, CLIENT_IF)
        mark("server_and_capture_start")
        yield
    finally:
        if capture is not None:
            # the capture ends with the sessions' closing exchanges, not in the middle of them:
            # so it holds the whole session, the next run's capture none of it, and tcpdump is
            # not handed the last packets while it stops (a run redone for nothing)
            record["teardown_s"] = procedure.await_sessions_closed(
                (client.pid, server.pid), procedure.TEARDOWN_LIMIT_S if capture_immediate()
                else procedure.VIRTUAL_TEARDOWN_LIMIT_S)
            if whole is None:
                record["capture"] = procedure.stop_capture(capture)
            else:
                record["capture"], record["whole_capture"] = procedure.stop_captures(
                    [capture, whole])
            _put_in_place(pcap_partial, whole_partial if whole is not None else None, run,
                          record)
        if process is not None:
            procedure.stop(process)
    shortfall = procedure.capture_shortfall(record.get("capture", {}))
    whole_shortfall = procedure.capture_shortfall(record.get("whole_capture", {}))
    if shortfall or whole_shortfall:
        raise RunFailure(shortfall or f"the capture of whole packets: {whole_shortfall}")
    if record.get("splice_error"):
        raise RunFailure(record["splice_error"])


def _put_in_place(pcap_partial: Path, whole_partial: Path | None, run: dict[str, Any],
                  record: dict[str, Any]) -> None:
    """The run's pcap from its capture (and the packets captured whole, spliced in). A splice
    that fails leaves the cut capture as the run's pcap, the whole one beside it until the
    next round, and the run failed (it is redone)."""
    if not pcap_partial.exists():
        return
    if whole_partial is not None and not whole_partial.exists():
        record["splice_error"] = "the capture of whole packets wrote no pcap"
    elif whole_partial is not None:
        spliced = Path(run["pcap"] + ".spliced.partial")
        try:
            record["whole_packets"] = splice(pcap_partial, whole_partial, spliced)
        except SpliceError as error:
            record["splice_error"] = f"the capture of headers could not be made whole: {error}"
        else:
            os.replace(spliced, pcap_partial)
            whole_partial.unlink()
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
