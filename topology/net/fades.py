"""Loss in fades: stretches of time in which a link drops every packet, as a radio link does in
a fade, at a given mean share of time. Each lossy direction alternates on its own between
clear spells and fades, both of exponential length: fades of mean `fade_s`, clear spells of
mean fade_s (1 - L) / L, so the link is in a fade a share L of the time. Unlike netem's Gilbert
model (`loss_burst`), a fade is counted in time: a packet sent after a long idle spell meets
the link as the clock finds it, not the burst its predecessors met.

The fades become a link schedule (schedule.py) drawn from a seed, so a run's fades can be
drawn again from its record."""
from __future__ import annotations

import random

from ..params import ParameterError
from .schedule import Change

MAX_FADE_S = 60.0


def check(fade_s: float, loss: float) -> None:
    if isinstance(fade_s, bool) or not isinstance(fade_s, (int, float)) \
            or not 0.001 <= fade_s <= MAX_FADE_S:
        raise ParameterError(f"a fade must last 1 ms to {MAX_FADE_S:g} s on average, got "
                             f"{fade_s!r}")
    if not 0 <= loss < 1:
        raise ParameterError(f"loss in fades must be below 1, got {loss:g}")


def changes(links: list[str], loss: float, fade_s: float, horizon_s: float,
            seed: str) -> list[Change]:
    """Every direction's fades up to `horizon_s`, in time order: `loss` 1 at a fade's start,
    0 at its end. Each direction starts clear or faded as the long run would find it."""
    check(fade_s, loss)
    if loss == 0:
        return []
    clear_s = fade_s * (1 - loss) / loss
    out: list[Change] = []
    for link in links:
        draw = random.Random(f"{seed}/{link}")
        faded = draw.random() < loss
        t = 0.0
        if faded:
            out.append(Change(0.0, link, {"loss": 1.0}))
        while True:
            t += draw.expovariate(1 / (fade_s if faded else clear_s))
            if t >= horizon_s:
                break
            faded = not faded
            out.append(Change(round(t, 6), link, {"loss": 1.0 if faded else 0.0}))
    return sorted(out, key=lambda c: c.at_s)
