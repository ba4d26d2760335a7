"""Which links the fidelity benchmark builds and what it measures on each."""
from __future__ import annotations

from typing import Any

from ..params import LinkShape, Queue

# The three paths of the multistream study (E1): rate and one-way delay.
E1_PATHS = {
    "lan": (3e6, 0.001),
    "coast": (1e6, 0.035),
    "satellite": (256e3, 0.125),
}
# Goodput is measured through a 50-packet queue (the fcs study's): deeper than every path's
# bandwidth-delay product, so the link stays busy, yet quick to drain between probes.
BULK_QUEUE = Queue(50, "packets")
LOSS_RATIOS = (0.01, 0.10)
LOSS_PATH = "lan"


def cases(quick: bool = False) -> list[dict[str, Any]]:
    scale = 0.4 if quick else 1.0
    plan = []
    for name, (rate, delay) in E1_PATHS.items():
        bulk_s = {"lan": 8, "coast": 10, "satellite": 20}[name] * scale
        omit_s = {"lan": 2, "coast": 3, "satellite": 5}[name] * scale
        plan.append({
            "name": name, "path": name,
            "shape": LinkShape(rate, delay, 0.0, BULK_QUEUE).to_dict(),
            "probes": [
                {"kind": "rtt", "count": 10 if quick else 20, "interval_s": 0.2},
                {"kind": "tcp", "seconds": round(bulk_s, 1), "omit_s": round(omit_s, 1)},
                {"kind": "sctp", "seconds": round(bulk_s, 1), "omit_s": round(omit_s, 1)},
                # the up direction's delay grows by 30 ms one second into a link schedule
                {"kind": "schedule", "at_s": 1.0, "step_s": 0.030},
            ]})
    rate, delay = E1_PATHS[LOSS_PATH]
    for loss in LOSS_RATIOS:
        plan.append({
            "name": f"{LOSS_PATH}-loss{loss:g}", "path": LOSS_PATH,
            "shape": LinkShape(rate, delay, loss, BULK_QUEUE).to_dict(),
            # 100-byte datagrams at 1,000 per second load the 3 Mbit/s link to 38%.
            "probes": [{"kind": "loss", "count": 3000 if quick else 10_000, "payload": 100,
                        "rate_pps": 1000.0}]})
    return plan
