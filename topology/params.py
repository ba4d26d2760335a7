"""Link parameters: what one direction of a shaped link does, checked before anything starts.

Units on the wire of this module are SI base units (bit/s, seconds, a ratio for loss); the
parsers accept the spellings researchers write (`3Mbit`, `35ms`, `1%`, `500KB`, `50p`)."""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, replace
from typing import Any

ETHERNET_FRAME_MAX = 1514  # bytes the router's qdisc accounts for a full-size frame (MTU 1500)
MAX_LOSS_BURST = 1000      # packets: a longer mean burst is an outage, not a loss model


class ParameterError(ValueError):
    """A link or topology parameter that cannot be used; the message names it and says why."""


@dataclass(frozen=True)
class Queue:
    """A drop-tail limit, in packets or in bytes."""

    limit: int
    unit: str = "packets"  # or "bytes"

    def __post_init__(self) -> None:
        if self.unit not in ("packets", "bytes"):
            raise ParameterError(f"queue unit must be 'packets' or 'bytes', got {self.unit!r}")
        if not isinstance(self.limit, int) or isinstance(self.limit, bool):
            raise ParameterError(f"queue limit must be a whole number, got {self.limit!r}")
        least = 1 if self.unit == "packets" else ETHERNET_FRAME_MAX
        if self.limit < least:
            raise ParameterError(
                f"queue limit must be at least {least} {self.unit}, got {self.limit}")

    def __str__(self) -> str:
        return f"{self.limit}p" if self.unit == "packets" else f"{self.limit}B"


DEFAULT_QUEUE = Queue(1000, "packets")


@dataclass(frozen=True)
class LinkShape:
    """One direction of a link as the router emulates it."""

    rate_bps: float | None = None  # None: not rate-limited
    delay_s: float = 0.0           # one-way propagation delay
    loss: float = 0.0              # drop probability per packet, the long-run mean
    queue: Queue = DEFAULT_QUEUE   # drop-tail bottleneck queue in front of the link
    # None: each packet dropped on its own (Bernoulli). A number: drops come in bursts of this
    # mean length in packets (the Gilbert model, netem's `loss gemodel`), at the same mean loss.
    # A burst is counted in packets, not time: it lasts until that many more packets have
    # crossed, however long the link is idle, so a lone retransmission after a timeout, or its
    # acknowledgement, meets the burst its predecessors met
    loss_burst: float | None = None

    def __post_init__(self) -> None:
        if self.rate_bps is not None:
            _check_number("rate", self.rate_bps)
            if not 1_000 <= self.rate_bps <= 10e9:
                raise ParameterError(
                    f"rate must be between 1 kbit/s and 10 Gbit/s, got {self.rate_bps:g} bit/s")
        _check_number("delay", self.delay_s)
        if not 0 <= self.delay_s <= 10:
            raise ParameterError(f"delay must be between 0 and 10 s, got {self.delay_s:g} s")
        _check_number("loss", self.loss)
        if not 0 <= self.loss <= 1:
            raise ParameterError(f"loss must be a ratio between 0 and 1, got {self.loss:g}")
        if not isinstance(self.queue, Queue):
            raise ParameterError(f"queue must be a Queue, got {self.queue!r}")
        if self.loss_burst is not None:
            _check_number("loss burst", self.loss_burst)
            if not 1 <= self.loss_burst <= MAX_LOSS_BURST:
                raise ParameterError(f"loss burst must be between 1 and {MAX_LOSS_BURST} "
                                     f"packets, got {self.loss_burst:g}")
            if self.loss > 0 and self.gilbert()[0] > 1:
                raise ParameterError(
                    f"loss {self.loss:g} cannot come in bursts of {self.loss_burst:g} packets "
                    f"(at most {self.loss_burst / (self.loss_burst + 1):g}): raise the burst")

    def gilbert(self) -> tuple[float, float]:
        """The Gilbert model's transition probabilities (p: good to bad, r: bad to good) for
        this mean loss and burst: every packet met in the bad state is lost and none in the
        good, so bursts last 1/r packets on average and the bad state's share is p/(p+r)."""
        assert self.loss_burst is not None
        r = 1 / self.loss_burst
        return (self.loss * r / (1 - self.loss) if self.loss < 1 else 1.0), r

    def with_changes(self, **changes: Any) -> LinkShape:
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["queue"] = {"limit": self.queue.limit, "unit": self.queue.unit}
        if self.loss_burst is None:
            del data["loss_burst"]     # records from before bursts existed read the same
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LinkShape:
        queue = data.get("queue")
        return cls(rate_bps=data.get("rate_bps"), delay_s=data.get("delay_s", 0.0),
                   loss=data.get("loss", 0.0),
                   queue=Queue(**queue) if isinstance(queue, dict) else DEFAULT_QUEUE,
                   loss_burst=data.get("loss_burst"))

    @classmethod
    def parse(cls, rate: str | None = None, delay: str | None = None, loss: str | None = None,
              queue: str | None = None) -> LinkShape:
        return cls(rate_bps=parse_rate(rate) if rate else None,
                   delay_s=parse_time(delay) if delay else 0.0,
                   loss=parse_loss(loss) if loss else 0.0,
                   queue=parse_queue(queue) if queue else DEFAULT_QUEUE)


def _check_number(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise ParameterError(f"{name} must be a number, got {value!r}")


_RATE_UNITS = {"": 1, "bit": 1, "bps": 1, "k": 1e3, "kbit": 1e3, "kbps": 1e3, "m": 1e6,
               "mbit": 1e6, "mbps": 1e6, "g": 1e9, "gbit": 1e9, "gbps": 1e9}
_TIME_UNITS = {"": 1, "s": 1, "ms": 1e-3, "us": 1e-6}
_SIZE_UNITS = {"b": 1, "": 1, "k": 1000, "kb": 1000, "kib": 1024, "m": 1_000_000,
               "mb": 1_000_000, "mib": 1 << 20}
_QUANTITY = re.compile(r"^\s*(-?[0-9]*\.?[0-9]+(?:e-?[0-9]+)?)\s*([a-z%]*)\s*$")


def _split(kind: str, text: str) -> tuple[float, str]:
    match = _QUANTITY.match(str(text).lower())
    if not match:
        raise ParameterError(f"cannot read {kind} {text!r}")
    return float(match.group(1)), match.group(2)


def parse_rate(text: str) -> float:
    """'3Mbit', '256kbit', '1e6' -> bit/s."""
    value, unit = _split("rate", text)
    if unit not in _RATE_UNITS:
        raise ParameterError(f"unknown rate unit in {text!r}: use bit, kbit, Mbit or Gbit")
    return value * _RATE_UNITS[unit]


def parse_time(text: str) -> float:
    """'35ms', '0.125s', '125000us' -> seconds."""
    value, unit = _split("time", text)
    if unit not in _TIME_UNITS:
        raise ParameterError(f"unknown time unit in {text!r}: use s, ms or us")
    return value * _TIME_UNITS[unit]


def parse_loss(text: str) -> float:
    """'0.01' or '1%' -> 0.01."""
    value, unit = _split("loss", text)
    if unit not in ("", "%"):
        raise ParameterError(f"loss {text!r} must be a ratio (0.01) or a percentage (1%)")
    return value / 100 if unit == "%" else value


def parse_queue(text: str) -> Queue:
    """'50p' or '50packets' -> 50 packets; '500KB' -> 500,000 bytes."""
    value, unit = _split("queue", text)
    if unit in ("p", "pkt", "pkts", "packets"):
        return Queue(_whole("queue", value), "packets")
    if unit in _SIZE_UNITS:
        return Queue(_whole("queue", value * _SIZE_UNITS[unit]), "bytes")
    raise ParameterError(f"unknown queue unit in {text!r}: use p (packets), B, KB or MB")


def _whole(name: str, value: float) -> int:
    if value != int(value):
        raise ParameterError(f"{name} must be a whole number, got {value:g}")
    return int(value)
