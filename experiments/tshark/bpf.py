"""The packets of a capture that a BPF filter keeps, as raw frames with their capture time.

tcpdump runs the filter (compiled, on the raw bytes) and writes what it keeps to a pipe, read
here as the pcap format it writes. For a pass that wants a few hundred packets of a 100 MB
capture, such as the FTP control channel's: tshark's start (about 0.25 s of CPU) and its
dissection of every packet to test a display filter (about 20 µs each) were half of what a
run's analysis cost.

    packets(pcap, bpf)     [(capture time, frame bytes), ...] in capture order
"""
from __future__ import annotations

import subprocess
from pathlib import Path

from . import TIMEOUT_S, TsharkError
from .pcap_records import Unread, pcap_format, records

# tcpdump writes nanosecond time stamps when asked (any capture's pass through unchanged), in
# its own byte order: the pcap file's magic number says which.


def packets(pcap: Path, bpf: str) -> list[tuple[float, bytes]]:
    argv = ["tcpdump", "--time-stamp-precision=nano", "-r", str(pcap), "-w", "-", bpf]
    try:
        proc = subprocess.run(argv, capture_output=True, timeout=TIMEOUT_S)
    except FileNotFoundError:
        raise TsharkError("tcpdump is not installed: run `make setup`") from None
    except subprocess.TimeoutExpired:
        raise TsharkError(f"tcpdump took over {TIMEOUT_S} s on {pcap}") from None
    if proc.returncode != 0:
        said = proc.stderr.decode(errors="replace").strip()[-400:]
        raise TsharkError(f"tcpdump could not read {pcap} with the filter {bpf!r}: {said}")
    return _records(proc.stdout, pcap)


def _records(data: bytes, pcap: Path) -> list[tuple[float, bytes]]:
    found = pcap_format(data)
    if found is None:
        raise TsharkError(f"tcpdump wrote no pcap header for {pcap}")
    layout, nano, _ = found
    if not nano:
        raise TsharkError(f"tcpdump wrote {pcap}'s packets without nanosecond time stamps")
    try:
        # as tshark prints frame.time_epoch, so a time reads the same from either
        return [(float(f"{r.seconds}.{r.fraction:09d}"), data[r.frame:r.frame + r.captured])
                for r in records(data, layout)]
    except Unread:
        raise TsharkError(f"tcpdump's copy of {pcap} ends inside a packet") from None
