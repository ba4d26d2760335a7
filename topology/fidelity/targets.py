"""Configured against measured: turns raw measurements into benchmark items with their targets.

Targets: goodput within 1% of the rate's payload share, RTT within 0.3 ms or 1% of the
configured 2 x delay, loss ratio inside the measured 95% binomial (Wilson) interval, boot plus
topology under 3 s, in-place reconfiguration under 0.2 s, a scheduled change written within
5 ms of its instant and landing where it was written (within 5 ms)."""
from __future__ import annotations

from typing import Any

from scipy.stats import binomtest

from ..params import ETHERNET_FRAME_MAX, LinkShape

IP_HEADER, TCP_HEADER, TCP_TIMESTAMPS = 20, 20, 12
SCTP_COMMON_HEADER, SCTP_DATA_HEADER = 12, 16
MTU = 1500
GOODPUT_TOLERANCE = 0.01
RTT_TOLERANCE_MS, RTT_TOLERANCE_REL = 0.3, 0.01
BOOT_AND_TOPOLOGY_TARGET_S = 3.0
RECONFIGURE_TARGET_S = 0.2
SCHEDULE_TARGET_MS = 5.0


def payload_per_frame(protocol: str, timestamps: bool) -> int:
    if protocol == "tcp":
        return MTU - IP_HEADER - TCP_HEADER - (TCP_TIMESTAMPS if timestamps else 0)
    return MTU - IP_HEADER - SCTP_COMMON_HEADER - SCTP_DATA_HEADER


def item(path: str, metric: str, unit: str, configured: float | None, measured: float,
         within: bool | None, **extra: Any) -> dict[str, Any]:
    error = None if configured is None else measured - configured
    return {"path": path, "metric": metric, "unit": unit, "configured": configured,
            "measured": measured, "error": error,
            "error_rel": (error / configured) if configured else None,
            "within_target": within, **extra}


def link_items(case: dict[str, Any], raw: dict[str, Any], timestamps: bool) -> list[dict[str, Any]]:
    shape = LinkShape.from_dict(case["shape"])
    path, items = case["name"], []
    if "rtt" in raw:
        rtt = raw["rtt"]
        configured = 2 * shape.delay_s * 1e3
        tolerance = max(RTT_TOLERANCE_MS, RTT_TOLERANCE_REL * configured)
        items.append(item(path, "rtt_avg", "ms", configured, rtt["avg_ms"],
                          abs(rtt["avg_ms"] - configured) <= tolerance, tolerance=tolerance))
        items.append(item(path, "rtt_min", "ms", configured, rtt["min_ms"], None))
        items.append(item(path, "rtt_mdev", "ms", 0.0, rtt["mdev_ms"], None))
    for protocol in ("tcp", "sctp"):
        if protocol in raw and shape.rate_bps:
            share = payload_per_frame(protocol, timestamps) / ETHERNET_FRAME_MAX
            configured = shape.rate_bps * share / 1e6
            measured = raw[protocol]["bps"] / 1e6
            items.append(item(path, f"{protocol}_goodput", "Mbit/s", configured, measured,
                              abs(measured - configured) <= GOODPUT_TOLERANCE * configured,
                              payload_share=share, seconds=raw[protocol]["seconds"]))
    if "schedule" in raw:
        landed = raw["schedule"]
        items.append(item(path, "schedule_lag", "ms", 0.0, 1e3 * landed["lag_s"],
                          1e3 * landed["lag_s"] <= SCHEDULE_TARGET_MS))
        items.append(item(path, "schedule_landing_error", "ms", 0.0, 1e3 * landed["error_s"],
                          1e3 * landed["error_s"] <= SCHEDULE_TARGET_MS,
                          bracket_ms=1e3 * (landed["landed_before_s"]
                                            - landed["landed_after_s"])))
    if "loss" in raw:
        sent, received = raw["loss"]["sent"], raw["loss"]["received"]
        lost = sent - received
        interval = binomtest(lost, sent).proportion_ci(0.95, method="wilson")
        low, high = float(interval.low), float(interval.high)
        clean = raw["loss"].get("receiver_drops", 0) == 0
        items.append(item(path, "loss_ratio", "ratio", shape.loss, lost / sent,
                          clean and low <= shape.loss <= high, ci95=[low, high], packets=sent,
                          receiver_drops=raw["loss"].get("receiver_drops", 0)))
    return items


def timing_items(raw: dict[str, Any], launch_to_job_s: float | None) -> list[dict[str, Any]]:
    items = []
    build = raw["build_s"] + raw["import_s"]
    if launch_to_job_s is not None:
        items.append(item("all", "boot_s", "s", None, launch_to_job_s, None))
        total = launch_to_job_s + build
        items.append(item("all", "boot_plus_topology_s", "s", BOOT_AND_TOPOLOGY_TARGET_S, total,
                          total <= BOOT_AND_TOPOLOGY_TARGET_S))
    items.append(item("all", "import_s", "s", None, raw["import_s"], None))
    items.append(item("all", "build_s", "s", None, raw["build_s"], None))
    reconfigure = max(c["reconfigure_s"] for c in raw["cases"].values())
    items.append(item("all", "reconfigure_max_s", "s", RECONFIGURE_TARGET_S, reconfigure,
                      reconfigure <= RECONFIGURE_TARGET_S))
    if raw.get("teardown_s") is not None:
        items.append(item("all", "teardown_s", "s", None, raw["teardown_s"], None))
    return items
