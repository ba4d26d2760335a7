"""The HTTP reading of a capture (experiments/workloads/http_page/measure.py) on byte streams and
messages made for the purpose: answers cut at their Content-Length, an object complete only once
every byte before its last is in (TCP: the connection's in-order prefix; SCTP: its stream's
messages in order), requests paired with answers per stream."""
from __future__ import annotations

from experiments.workloads.http_page.measure import (
    _answers,
    _ByteStream,
    _Message,
    _pair,
    _requests,
    _stream_answers,
)


def answer(body: bytes, status: int = 200) -> bytes:
    return (f"HTTP/1.1 {status} X\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body


def test_requests_and_answers_are_cut_where_their_heads_say():
    data = b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b?q HTTP/1.1\r\nHost: x\r\n\r\n"
    assert _requests(data) == [(0, "/a"), (28, "/b?q")]
    stream = answer(b"x" * 10) + answer(b"", 404) + answer(b"y" * 5)[:-2]
    cut = _answers(stream)
    assert [(status, body) for _, _, status, body in cut] == [(200, 10), (404, 0), (200, None)]
    assert cut[0][1] == cut[1][0] and cut[2][1] == len(stream)


def test_tcp_bytes_after_a_hole_wait_for_it():
    s = _ByteStream()
    s.add(1.0, 0, b"a" * 100)
    s.add(2.0, 200, b"c" * 100)          # arrives before the hole [100, 200) is filled
    s.add(3.0, 100, b"b" * 100)          # the retransmission
    s.add(4.0, 100, b"b" * 100)          # a needless copy changes nothing
    assert s.in_order_by(100) == 1.0
    assert s.in_order_by(250) == 3.0     # held back by the hole: head-of-line blocking
    assert s.in_order_by(301) is None
    assert s.arrived(250) == 2.0 and s.arrived(150) == 3.0


def test_an_sctp_answer_waits_only_for_its_own_stream():
    body = b"z" * 2000
    whole = answer(body)
    one = [_Message(0, whole[:1100], 1.0, 1.0), _Message(1, whole[1100:], 5.0, 5.0)]
    other = [_Message(0, whole[:1100], 1.1, 1.1), _Message(1, whole[1100:], 1.2, 1.2)]
    late, quick = _stream_answers(one)[0], _stream_answers(other)[0]
    assert (late.first_byte_s, late.complete_s, late.body_bytes) == (1.0, 5.0, 2000)
    assert quick.complete_s == 1.2       # not held by the other stream's late message
    # a message whole before its predecessor still waits for it within its stream
    held = _stream_answers([_Message(0, whole[:1100], 3.0, 3.0),
                            _Message(1, whole[1100:], 1.5, 1.5)])[0]
    assert held.complete_s == 3.0


def test_requests_pair_with_the_answers_of_their_stream_in_order():
    answers = {0: _stream_answers([_Message(0, answer(b"d"), 1.0, 1.0),
                                   _Message(1, answer(b"o1"), 2.0, 2.0)]),
               1: _stream_answers([_Message(0, answer(b"o2"), 1.5, 1.5)])}
    objects = _pair([(0.0, "/doc", 0), (1.1, "/o1", 0), (1.2, "/o2", 1)], answers)
    assert [(o.index, o.target, o.stream, o.complete_s, o.body_bytes) for o in objects] == \
        [(0, "/doc", 0, 1.0, 1), (1, "/o1", 0, 2.0, 2), (2, "/o2", 1, 1.5, 2)]
    missing = _pair([(0.0, "/doc", 0), (0.1, "/gone", 3)], answers)
    assert missing[1].complete_s is None and missing[1].status is None
