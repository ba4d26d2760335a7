"""Every reading of a pcap goes through this package, and every tshark process is started here.

    fields(pcap, [field, ...], filter)   rows of tshark's field output
    frames(pcap, filter)                 raw frames with their capture time
    tcp_headers.py, sctp_headers.py      the shared passes from the capture's bytes
    pcap_records.py                      the IPv4 packets of a pcap file, for those two
    bpf.py                               raw frames that a BPF filter keeps, without tshark
    ftp.py                               FTP control channels, the Lua dissector's FTP over SCTP
    transport.py                         connections, retransmissions, time-sequences, per-flow
                                         delivered bytes"""
from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from functools import lru_cache
from operator import itemgetter
from pathlib import Path

from . import sctp_headers, tcp_headers
from .pcap_records import holds_cut_frames

# Reassembly off: with it, a frame that completes a stream-1 message hides the other chunks
# bundled with it (a stream-0 reply among them). Relative TSNs start at 0 per direction.
SCTP_OPTIONS = ("-o", "sctp.reassembly:FALSE", "-o", "sctp.relative_tsns:TRUE")
TIMEOUT_S = 1800
# No TCP reassembly: the analysis reads each segment's own fields, and a heuristic dissector
# that mistakes a data connection's random bytes for its protocol (Thrift, in one of E5's
# pcaps) then waits for a message of megabytes, reassembling every later segment again: one
# 4 MB connection took tshark 90 s instead of 0.3 s.
QUICK = ("-o", "tcp.desegment_tcp_streams:FALSE")


# What the analyses read of every TCP or every SCTP packet of a capture, as (options, fields):
# flows, counters and the FTP session's first connection take theirs from one tshark pass per
# capture and protocol (`fields` below), instead of one pass each. tshark's start and its
# dissection of the whole capture are most of what a pass costs; a field's values do not depend
# on which others are asked for.
SHARED_PASSES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "tcp": ((), ("frame.time_epoch", "ip.src", "tcp.stream", "tcp.srcport", "tcp.dstport",
                 "tcp.flags.syn", "tcp.flags.ack", "tcp.flags.fin", "tcp.seq", "tcp.seq_raw",
                 "tcp.len")),
    "sctp": (SCTP_OPTIONS, ("frame.time_epoch", "ip.src", "sctp.srcport", "sctp.dstport",
                            "sctp.chunk_type", "sctp.chunk_length", "sctp.data_tsn_raw",
                            "sctp.data_sid", "sctp.init_initiate_tag")),
}


class TsharkError(RuntimeError):
    """tshark could not read a capture; the message says which and why."""


def _run(argv: list[str], pcap: Path) -> str:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S)
    except FileNotFoundError:
        raise TsharkError("tshark is not installed: run `make setup`") from None
    except subprocess.TimeoutExpired:
        raise TsharkError(f"tshark took over {TIMEOUT_S} s on {pcap}") from None
    if proc.returncode != 0:
        raise TsharkError(f"tshark failed on {pcap}: {proc.stderr.strip()[-400:]}")
    return proc.stdout


def fields(pcap: Path, names: list[str], display_filter: str = "",
           options: tuple[str, ...] = ()) -> list[Sequence[str]]:
    """One row per matching packet, one cell per field; a field that occurs several times in a
    packet (bundled SCTP chunks) has its values joined by `|`. Every TCP (or SCTP) packet with
    fields of SHARED_PASSES comes from the capture's shared pass, whose rows every caller shares:
    read them, do not change them."""
    shared = SHARED_PASSES.get(display_filter)
    if shared is not None and shared[0] == tuple(options) and set(names) <= set(shared[1]):
        stat = pcap.stat()
        rows = _shared_pass(str(pcap), stat.st_mtime_ns, stat.st_size, display_filter)
        if list(names) == list(shared[1]):
            return rows
        # itemgetter picks the columns in C: a listcomp per row cost a second on 400,000 rows
        pick = itemgetter(*(shared[1].index(name) for name in names))
        if len(names) == 1:
            return [(pick(row),) for row in rows]
        return list(map(pick, rows))
    return _fields(pcap, names, display_filter, options)


@lru_cache(maxsize=2)
def _shared_pass(pcap: str, _mtime_ns: int, _size: int, protocol: str) -> list[Sequence[str]]:
    """The shared pass of one capture (its modification time and size in the key: a capture
    written again is read again). Their fields are read from the capture's bytes where
    tcp_headers.py or sctp_headers.py reads them as tshark would, by tshark elsewhere."""
    options, names = SHARED_PASSES[protocol]
    rows = (sctp_headers if protocol == "sctp" else tcp_headers).shared_rows(Path(pcap))
    if rows is not None:
        return rows
    if protocol == "sctp" and holds_cut_frames(Path(pcap)):
        # tshark reads no chunk of an SCTP packet cut short: those frames' rows are read here
        return sctp_headers.rows_beside_tshark(
            Path(pcap), _fields(Path(pcap), ["frame.number", *names], protocol, options))
    return _fields(Path(pcap), list(names), protocol, options)


def _fields(pcap: Path, names: list[str], display_filter: str,
            options: tuple[str, ...]) -> list[list[str]]:
    argv = ["tshark", "-r", str(pcap), "-n", *QUICK, *options, "-T", "fields",
            "-E", "occurrence=a", "-E", "aggregator=|", "-E", "separator=\t"]
    if display_filter:
        argv += ["-Y", display_filter]
    for name in names:
        argv += ["-e", name]
    return [line.split("\t") for line in _run(argv, pcap).splitlines() if line]


def frames(pcap: Path, display_filter: str, options: tuple[str, ...] = ()
           ) -> list[tuple[float, bytes]]:
    """(capture time, the frame's bytes) of every matching packet: for what tshark's field
    output cannot pair up, such as a bundled SCTP chunk and its payload."""
    argv = ["tshark", "-r", str(pcap), "-n", *QUICK, *options, "-Y", display_filter,
            "-T", "json",
            "-x", "-j", "frame"]
    out = []
    for packet in json.loads(_run(argv, pcap) or "[]"):
        layers = packet["_source"]["layers"]
        out.append((float(layers["frame"]["frame.time_epoch"]),
                    bytes.fromhex(layers["frame_raw"][0])))
    return out


# One host's addresses as a reader of a pcap takes them: one address, or every address of a
# multihomed host (dualpath's client), whose packets are its own on either path.
Host = str | frozenset[str]


def addresses(host: Host) -> frozenset[str]:
    return frozenset((host,)) if isinstance(host, str) else host


def values(cell: str) -> list[str]:
    """The values of one cell of `fields` output."""
    if "|" not in cell:   # most cells: one value or none
        return [cell] if cell else []
    return [v for v in cell.split("|") if v != ""]


def is_true(cell: str) -> bool:
    """A boolean field as tshark prints it (1/0 or True/False, depending on the field)."""
    return cell in ("1", "True")
