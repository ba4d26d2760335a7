"""HTTP pages as the client's capture saw them: for each object, when its request first left the
client, when the first byte of its answer arrived, and when its last byte became deliverable to
the application - in order on TCP's one byte stream, in order on its own stream over SCTP.

Delivery, not arrival, is what the study measures: a byte that arrives after a hole waits for
the hole's retransmission on TCP whatever answer it belongs to (head-of-line blocking), and on
SCTP only when the hole is on its own stream. So an answer completes when every byte up to its
last is in: TCP's in-order prefix reaches its end, or every message of its stream up to its
last is whole.

Requests and answers are paired in order: over TCP the k-th answer is the k-th request's, over
SCTP the j-th answer on a stream is the j-th request sent on it (httpc and httpd keep one
request per stream in flight). Needs whole packets (snaplen 0)."""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from pathlib import Path

from experiments.tshark import fields
from experiments.tshark.transport import sctp_frames

HEAD_END = b"\r\n\r\n"
CONTENT_LENGTH = re.compile(rb"\r\ncontent-length:[ \t]*(\d+)[ \t]*\r\n", re.IGNORECASE)
STATUS = re.compile(rb"HTTP/1\.\d (\d{3})")


@dataclass(frozen=True)
class ObjectTimes:
    index: int                 # the request's place in the page (its order on the wire)
    target: str
    stream: int                # SCTP stream (TCP: 0)
    request_s: float           # capture time its request's first byte first left the client
    first_byte_s: float | None  # the first byte of its answer arrived
    complete_s: float | None   # its last byte became deliverable
    status: int | None
    body_bytes: int | None


class HttpCaptureError(ValueError):
    """The capture does not hold what the reading needs; the message says what."""


@dataclass(frozen=True)
class _Answer:
    first_byte_s: float
    complete_s: float | None
    status: int | None
    body_bytes: int | None


# -- both transports -----------------------------------------------------------------------------
def _requests(data: bytes) -> list[tuple[int, str]]:
    """(offset, target) of each request head in a client's byte stream."""
    out, offset = [], 0
    while True:
        end = data.find(HEAD_END, offset)
        if end < 0:
            return out
        line = data[offset:data.find(b"\r\n", offset)].split(b" ")
        out.append((offset, line[1].decode(errors="replace") if len(line) > 1 else ""))
        offset = end + len(HEAD_END)


def _answers(data: bytes) -> list[tuple[int, int, int | None, int | None]]:
    """(start, end, status, body bytes) of each answer in a server's byte stream, as far as the
    stream holds whole heads; an answer cut short ends at the stream's end."""
    out, offset = [], 0
    while offset < len(data):
        end = data.find(HEAD_END, offset)
        if end < 0:
            out.append((offset, len(data), None, None))
            return out
        head = data[offset:end + 2]
        status = STATUS.match(head)
        length = CONTENT_LENGTH.search(head)
        body = int(length.group(1)) if length else 0
        stop = end + len(HEAD_END) + body
        out.append((offset, min(stop, len(data)), int(status.group(1)) if status else None,
                    body if stop <= len(data) else None))
        offset = stop
    return out


def _pair(requests: list[tuple[float, str, int]], answers: dict[int, list[_Answer]]
          ) -> list[ObjectTimes]:
    """Requests (time, target, stream) in wire order with each stream's answers in order."""
    taken: dict[int, int] = {}
    out = []
    for index, (sent, target, stream) in enumerate(sorted(requests, key=lambda r: r[0])):
        k = taken.get(stream, 0)
        taken[stream] = k + 1
        answer = answers.get(stream, [])[k] if k < len(answers.get(stream, [])) else None
        out.append(ObjectTimes(index, target, stream, sent,
                               answer.first_byte_s if answer else None,
                               answer.complete_s if answer else None,
                               answer.status if answer else None,
                               answer.body_bytes if answer else None))
    return out


# -- TCP -------------------------------------------------------------------------------------------
class _ByteStream:
    """One direction of a TCP connection: its bytes, when each segment's bytes first arrived,
    and the instants its in-order prefix grew."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.first_seen: list[tuple[int, int, float]] = []   # (start, end, time), new bytes
        self.prefix: list[tuple[float, int]] = []            # (time, bytes in order)
        self._have: list[tuple[int, int]] = []

    def add(self, t: float, start: int, payload: bytes) -> None:
        end = start + len(payload)
        if len(self.data) < end:
            self.data.extend(bytes(end - len(self.data)))
        self.data[start:end] = payload
        if not any(a <= start and end <= b for a, b in self._have):
            self.first_seen.append((start, end, t))
        self._have = _merge([*self._have, (start, end)])
        reach = self._have[0][1] if self._have and self._have[0][0] == 0 else 0
        if not self.prefix or reach > self.prefix[-1][1]:
            self.prefix.append((t, reach))

    def arrived(self, offset: int) -> float | None:
        return min((t for a, b, t in self.first_seen if a <= offset < b), default=None)

    def in_order_by(self, offset: int) -> float | None:
        """When the in-order prefix first covered bytes [0, offset)."""
        reaches = [reach for _, reach in self.prefix]
        i = bisect.bisect_left(reaches, offset)
        return self.prefix[i][0] if i < len(self.prefix) else None


def _merge(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _tcp_objects(pcap: Path, client_ip: str) -> list[ObjectTimes]:
    rows = fields(pcap, ["frame.time_epoch", "ip.src", "tcp.stream", "tcp.seq", "tcp.payload"],
                  "tcp.len > 0")
    if not rows:
        return []
    stream = rows[0][2]
    sent, received = _ByteStream(), _ByteStream()
    for time_s, src, tcp_stream, seq, payload in rows:
        if tcp_stream != stream:
            continue
        side = sent if src == client_ip else received
        side.add(float(time_s), int(seq) - 1, bytes.fromhex(payload.replace(":", "")))
    requests = [(sent.arrived(offset) or 0.0, target, 0)
                for offset, target in _requests(bytes(sent.data))]
    answers = [_Answer(received.arrived(start) or 0.0, received.in_order_by(end)
                       if body is not None else None, status, body)
               for start, end, status, body in _answers(bytes(received.data))]
    return _pair(requests, {0: answers})


# -- SCTP ------------------------------------------------------------------------------------------
@dataclass
class _Message:
    ssn: int
    data: bytes
    arrived_s: float          # its first chunk's first copy
    whole_s: float            # its last missing chunk's first copy


def _sctp_messages(pcap: Path, src_ip: str) -> dict[int, list[_Message]]:
    """Each stream's messages from src_ip in SSN order, from the first copy of each chunk."""
    chunks: dict[tuple[int, int], dict[int, tuple[float, bytes, bool]]] = {}
    for time_s, frame in sctp_frames(pcap, "sctp.chunk_type == 0"):
        if frame.src != src_ip:
            continue
        for chunk in frame.chunks:
            if len(chunk.payload) < chunk.length:
                raise HttpCaptureError(f"{pcap}: DATA chunks cut short by the snaplen; the "
                                       "HTTP reading needs whole packets (snaplen = 0)")
            parts = chunks.setdefault((chunk.sid, chunk.ssn), {})
            parts.setdefault(chunk.tsn, (time_s, chunk.payload, chunk.ends_message))
    streams: dict[int, list[_Message]] = {}
    for (sid, ssn), parts in sorted(chunks.items()):
        ordered = [parts[tsn] for tsn in sorted(parts)]
        streams.setdefault(sid, []).append(_Message(
            ssn, b"".join(p for _, p, _ in ordered), min(t for t, _, _ in ordered),
            max(t for t, _, _ in ordered)))
    return streams


def _stream_answers(messages: list[_Message]) -> list[_Answer]:
    """A stream's answers: a message is delivered once it is whole and so is every earlier
    message on its stream; an answer completes with the message holding its last byte."""
    data, ends, delivered, clock = b"", [], [], 0.0
    for message in messages:
        clock = max(clock, message.whole_s)
        data += message.data
        ends.append(len(data))
        delivered.append(clock)
    arrivals = [m.arrived_s for m in messages]
    out = []
    for start, end, status, body in _answers(data):
        first = bisect.bisect_right(ends, start)
        last = bisect.bisect_left(ends, end)
        out.append(_Answer(arrivals[first], delivered[last] if body is not None else None,
                           status, body))
    return out


def _sctp_objects(pcap: Path, client_ip: str, server_ip: str) -> list[ObjectTimes]:
    requests = []
    for sid, messages in _sctp_messages(pcap, client_ip).items():
        data = b"".join(m.data for m in messages)
        starts = [0]
        for m in messages:
            starts.append(starts[-1] + len(m.data))
        for offset, target in _requests(data):
            requests.append((messages[bisect.bisect_right(starts, offset) - 1].arrived_s,
                             target, sid))
    answers = {sid: _stream_answers(messages)
               for sid, messages in _sctp_messages(pcap, server_ip).items()}
    return _pair(requests, answers)


def page_objects(pcap: Path, transport: str, client_ip: str, server_ip: str
                 ) -> list[ObjectTimes]:
    """Every object the client requested over the capture's one connection or association."""
    if transport == "tcp":
        return _tcp_objects(pcap, client_ip)
    return _sctp_objects(pcap, client_ip, server_ip)


def data_packets(pcap: Path, transport: str, server_ip: str) -> int:
    """Packets from the server that carry data: TCP segments with payload, SCTP packets with at
    least one DATA chunk (several bundled in one packet count once): what E4's 7.1 compares
    when it says SCTP sent about twice the packets."""
    carries = "tcp.len > 0" if transport == "tcp" else "sctp.chunk_type == 0"
    return len(fields(pcap, ["frame.number"], f"ip.src == {server_ip} && {carries}"))
