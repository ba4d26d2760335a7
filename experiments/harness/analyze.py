"""One run's row: its record from inside the kernel, its pcap read with tshark, its client
events, joined into the fields of runs.csv. Written beside the record as analysis.json, so a
run is analysed once however often the tables are rebuilt."""
from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from topology.net.path import CLIENT_IP

from . import pcap
from .spec import Experiment

ANALYSIS = "analysis.json"
AGREEMENT_S = 0.001
# Bumped whenever the reading of pcaps changes, so cached analyses are redone.
ANALYSIS_VERSION = 4


def client_events(run_dir: Path) -> list[dict[str, Any]]:
    events = []
    log = run_dir / "client.jsonl"
    if log.exists():
        for line in log.read_text(errors="replace").splitlines():
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return events


def client_interval(events: list[dict[str, Any]], metric: str) -> float | None:
    end = next((e["t"] for e in reversed(events) if e.get("event") == "last_226"), None)
    if metric == "nlst150-to-last226":
        start = next((e["t"] for e in events if e.get("event") == "nlst_150"), None)
    else:
        start = next((e["t"] for e in events if e.get("event") == "command"
                      and e.get("cmd") in pcap.DATA_SETUP_COMMANDS), None)
    return None if start is None or end is None else end - start


def pcap_interval(channel: pcap.ControlChannel, metric: str) -> float | None:
    end = channel.last_reply(226)
    if metric == "nlst150-to-last226":
        start = channel.first_reply(150)
    else:
        start = channel.first_command(pcap.DATA_SETUP_COMMANDS)
    if start is None or end is None or not math.isfinite(end - start):
        return None  # a reply never whole in the capture: no measurement, never a number
    return end - start


def capture_of(run_dir: Path, record: dict[str, Any]) -> Path | None:
    """The run's pcap in the ledger the run directory belongs to (<root>/pcaps/<run id>.pcap).
    The record's absolute path names the directory of the host that ran it, which is not this
    one once runs are merged from several hosts."""
    if not record.get("pcap"):
        return None
    return run_dir.parent.parent / "pcaps" / f"{run_dir.name}.pcap"


def analyse(experiment: Experiment, run_dir: Path, record: dict[str, Any]) -> dict[str, Any]:
    variant = record["variant"]
    transport = "tcp" if variant == "tcp" else "sctp"
    row: dict[str, Any] = {"transfer_time_s": None, "client_time_s": None,
                           "pcap_client_diff_ms": None, "flagged": False, "notes": ""}
    notes = []
    events = client_events(run_dir)
    row["client_time_s"] = client_interval(events, experiment.metric)
    capture = capture_of(run_dir, record)
    if capture is not None and capture.exists():
        row["pcap_bytes"] = capture.stat().st_size
        try:
            channel = pcap.control_channel(capture, transport)
            row["transfer_time_s"] = pcap_interval(channel, experiment.metric)
            rto_floor = experiment.sctp.get("rto_min_ms", 1000) / 1000
            row.update(vars(pcap.counters(capture, transport, CLIENT_IP, rto_floor)))
        except pcap.PcapError as error:
            notes.append(str(error))
    else:
        notes.append("no pcap")
    if record["status"] == "ok" and row["transfer_time_s"] is None:
        notes.append("the measured instants are not in the pcap")
    if row["transfer_time_s"] is not None and row["client_time_s"] is not None:
        diff = row["transfer_time_s"] - row["client_time_s"]
        row["pcap_client_diff_ms"] = 1000 * diff
        if abs(diff) > AGREEMENT_S:
            row["flagged"] = True
            notes.append(f"pcap and client disagree by {1000 * diff:+.2f} ms")
    row["notes"] = "; ".join(notes)
    return row


def analysed(experiment: Experiment, run_dir: Path, record: dict[str, Any]) -> dict[str, Any]:
    cached = run_dir / ANALYSIS
    if cached.exists() and cached.stat().st_mtime >= (run_dir / "result.json").stat().st_mtime:
        row = json.loads(cached.read_text())
        if row.get("analysis_version") == ANALYSIS_VERSION:
            return row
    row = analyse(experiment, run_dir, record)
    row["analysis_version"] = ANALYSIS_VERSION
    partial = cached.with_suffix(".tmp")
    partial.write_text(json.dumps(row, indent=1))
    os.replace(partial, cached)
    return row
