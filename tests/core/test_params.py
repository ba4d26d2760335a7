"""Link parameters are checked before anything starts, with messages that name the culprit."""
import pytest

from topology.net import shaping
from topology.params import LinkShape, ParameterError, Queue, parse_queue, parse_rate, parse_time


def test_parses_what_researchers_write():
    shape = LinkShape.parse("256kbit", "125ms", "1%", "500KB")
    assert shape.rate_bps == 256_000
    assert shape.delay_s == pytest.approx(0.125)
    assert shape.loss == pytest.approx(0.01)
    assert shape.queue == Queue(500_000, "bytes")
    assert parse_queue("50p") == Queue(50, "packets")
    assert parse_rate("3Mbit") == 3e6
    assert parse_time("350us") == pytest.approx(350e-6)


@pytest.mark.parametrize("kwargs, named", [
    ({"delay_s": -0.001}, "delay"),
    ({"loss": 1.5}, "loss"),
    ({"loss": -0.1}, "loss"),
    ({"rate_bps": -3.0}, "rate"),
    ({"rate_bps": float("nan")}, "rate"),
    ({"delay_s": "1ms"}, "delay"),
    ({"loss_burst": 0.5}, "loss burst"),
    ({"loss_burst": "4"}, "loss burst"),
    ({"loss": 0.9, "loss_burst": 2.0}, "raise the burst"),
])
def test_rejects_impossible_links(kwargs, named):
    with pytest.raises(ParameterError, match=named):
        LinkShape(**kwargs)


@pytest.mark.parametrize("text", ["3 parsecs", "fast", "-"])
def test_rejects_unreadable_rates(text):
    with pytest.raises(ParameterError):
        parse_rate(text)


def test_rejects_queues_that_cannot_hold_a_packet():
    with pytest.raises(ParameterError, match="queue"):
        Queue(0, "packets")
    with pytest.raises(ParameterError, match="queue"):
        parse_queue("100B")
    with pytest.raises(ParameterError, match="unit"):
        parse_queue("3 lightyears")


def test_round_trips_through_json_form():
    shape = LinkShape.parse("1Mbit", "35ms", "0.03", "50p")
    assert LinkShape.from_dict(shape.to_dict()) == shape


def test_bursts_are_the_gilbert_model_at_the_same_mean():
    shape = LinkShape(loss=0.2, loss_burst=4.0)
    p, r = shape.gilbert()
    assert r == pytest.approx(0.25)
    assert p / (p + r) == pytest.approx(0.2)           # the bad state's share: the mean loss
    line = shaping.build("eth1", shape)[2]
    assert line.endswith("loss gemodel 6.25% 25% 100% 0%"), line
    assert shaping.build("eth1", LinkShape(loss=0.2))[2].endswith("loss random 20%")
    # no loss at all stays netem's plain line, bursts or not
    assert shaping.build("eth1", LinkShape(loss_burst=4.0))[2].endswith("loss random 0%")


def test_a_burst_change_retunes_netem_in_place():
    old = LinkShape(3e6, 0.01, 0.05)
    lines = shaping.change("eth1", old, old.with_changes(loss_burst=3.0))
    assert len(lines) == 1 and "netem" in lines[0] and "gemodel" in lines[0], lines


def test_records_without_bursts_read_as_before():
    plain = LinkShape(3e6, 0.01, 0.05)
    assert "loss_burst" not in plain.to_dict()
    assert LinkShape.from_dict(plain.to_dict()) == plain
    bursty = plain.with_changes(loss_burst=2.5)
    assert LinkShape.from_dict(bursty.to_dict()) == bursty
