"""How a router emulates one direction of a link on its egress interface.

    root 1:  netem  delay D, loss p, limit 1e6   the propagation delay line and random loss
                                                 (Bernoulli, or Gilbert bursts)
      1:1 -> 10: htb, class 10:1 rate R          the link's serialization rate
               10:1 -> 20: pfifo|bfifo limit Q   the drop-tail bottleneck queue

netem's own `limit` counts every packet it holds for delay, so on a long fat path it would eat
the bottleneck buffer; here it is set far beyond any path's packets in flight and the queue size
lives only in the fifo behind the rate limiter, where it means what the experimenter thinks.
For a constant delay, delaying before queueing gives the same timing as the reverse order.
Loss is drawn on the router, so a sender is never told of a drop by its own qdisc. The rate
counts Ethernet frames without preamble or FCS (1514 bytes for a full-size packet). htb's
bucket is a few microseconds deep, so back-to-back packets leave exactly at the rate."""
from __future__ import annotations

from ..params import LinkShape

DELAY_LINE_LIMIT = 1_000_000
ETHERNET_HEADER = 14
FRAME_QUANTUM = 1500 + ETHERNET_HEADER  # a full-size frame at the usual MTU
PLACEHOLDER = "9999"


def _percent(ratio: float) -> str:
    return f"{ratio * 100:.6f}".rstrip("0").rstrip(".") + "%"


def _loss(shape: LinkShape) -> str:
    """netem's loss model. Bursts are the Gilbert model: `gemodel p r 1-h 1-k` with every
    packet met in the bad state lost (1-h = 100%) and none in the good (1-k = 0%); the kernel
    draws the transition before the packet's fate, in the state the packet arrived in
    (loss_gilb_ell in net/sched/sch_netem.c, Linux 6.1), so a burst lasts 1/r packets."""
    if shape.loss_burst is None or shape.loss == 0:
        return f"loss random {_percent(shape.loss)}"
    p, r = shape.gilbert()
    return f"loss gemodel {_percent(p)} {_percent(r)} 100% 0%"


def _netem(dev: str, verb: str, shape: LinkShape) -> str:
    delay_us = round(shape.delay_s * 1e6)
    return (f"qdisc {verb} dev {dev} root handle 1: netem limit {DELAY_LINE_LIMIT} "
            f"delay {delay_us}us {_loss(shape)}")


def _rate_class(dev: str, verb: str, rate_bps: float, frame_bytes: int) -> str:
    rate = round(rate_bps)
    return (f"class {verb} dev {dev} parent 10: classid 10:1 htb rate {rate}bit ceil {rate}bit "
            f"burst {frame_bytes}b cburst {frame_bytes}b quantum {frame_bytes}")


def _fifo(dev: str, verb: str, shape: LinkShape) -> str:
    kind = "pfifo" if shape.queue.unit == "packets" else "bfifo"
    return f"qdisc {verb} dev {dev} parent 10:1 handle 20: {kind} limit {shape.queue.limit}"


def build(dev: str, shape: LinkShape, frame_bytes: int = FRAME_QUANTUM) -> list[str]:
    """tc lines that set up the whole tree on dev, replacing whatever was there; the rate
    limiter's bucket holds one frame of `frame_bytes` (the interface's MTU plus Ethernet)."""
    # Replacing the root with a placeholder first makes the delete succeed whatever was there.
    lines = [f"qdisc replace dev {dev} root handle {PLACEHOLDER}: pfifo",
             f"qdisc del dev {dev} root", _netem(dev, "add", shape)]
    if shape.rate_bps is not None:
        lines += [f"qdisc add dev {dev} parent 1:1 handle 10: htb default 1 r2q 1",
                  _rate_class(dev, "add", shape.rate_bps, frame_bytes), _fifo(dev, "add", shape)]
    return lines


def change(dev: str, old: LinkShape, new: LinkShape,
           frame_bytes: int = FRAME_QUANTUM) -> list[str]:
    """tc lines that turn old into new on a running interface without a rebuild."""
    if (old.rate_bps is None) != (new.rate_bps is None):
        return build(dev, new, frame_bytes)
    lines = []
    if (old.delay_s, old.loss, old.loss_burst) != (new.delay_s, new.loss, new.loss_burst):
        lines.append(_netem(dev, "change", new))
    if new.rate_bps is not None:
        if old.rate_bps != new.rate_bps:
            lines.append(_rate_class(dev, "change", new.rate_bps, frame_bytes))
        if old.queue.unit != new.queue.unit:
            lines += [f"qdisc del dev {dev} parent 10:1 handle 20:", _fifo(dev, "add", new)]
        elif old.queue != new.queue:
            lines.append(_fifo(dev, "change", new))
    return lines


def counters(qdiscs: list[dict]) -> dict[str, int]:
    """What one egress did, from its tree's cumulative statistics (`tc -s -j qdisc show`):
    packets it sent on, packets the drop-tail queue dropped (and its overlimits), and packets
    lost on purpose. netem counts both its own random losses and whatever its child tree
    dropped, so the losses are netem's drops less the rate limiter's, which include the
    queue's."""
    by_handle = {q.get("handle"): q for q in qdiscs}
    netem, htb, fifo = by_handle.get("1:", {}), by_handle.get("10:", {}), by_handle.get("20:", {})
    queue_drops = int(fifo.get("drops", 0))
    return {"packets": int((fifo or netem).get("packets", 0)),
            "queue_drops": queue_drops,
            "queue_overlimits": int(fifo.get("overlimits", 0)),
            "loss_drops": int(netem.get("drops", 0)) - int(htb.get("drops", 0))}
