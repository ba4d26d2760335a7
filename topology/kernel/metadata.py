"""What a result must carry about the kernel that produced it: backend, release, the sysctls that
change how TCP and SCTP behave, and the versions of the tools in the measurement path. Collected
inside the kernel under test (run this module there)."""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

from .base import clock_label
from .wake_latency import from_kernel_arg

SYSCTLS = (
    "net.ipv4.tcp_congestion_control", "net.ipv4.tcp_available_congestion_control",
    "net.ipv4.tcp_sack", "net.ipv4.tcp_dsack", "net.ipv4.tcp_timestamps",
    "net.ipv4.tcp_window_scaling", "net.ipv4.tcp_ecn", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem",
    "net.ipv4.tcp_no_metrics_save", "net.ipv4.tcp_slow_start_after_idle",
    "net.ipv4.tcp_early_retrans", "net.ipv4.tcp_recovery", "net.ipv4.tcp_frto",
    "net.core.rmem_max", "net.core.wmem_max", "net.core.default_qdisc",
    "net.sctp.rto_initial", "net.sctp.rto_min", "net.sctp.rto_max", "net.sctp.sack_timeout",
    "net.sctp.max_burst", "net.sctp.path_max_retrans", "net.sctp.association_max_retrans",
    "net.sctp.max_init_retransmits", "net.sctp.sndbuf_policy", "net.sctp.rcvbuf_policy",
    "net.sctp.sctp_mem", "net.sctp.sctp_rmem", "net.sctp.sctp_wmem",
)

TOOLS = {
    "iproute2": ["ip", "-V"],
    "iperf3": ["iperf3", "--version"],
    "tcpdump": ["tcpdump", "--version"],
    "ethtool": ["ethtool", "--version"],
}


def sysctls() -> dict[str, str]:
    values = {}
    for name in SYSCTLS:
        path = Path("/proc/sys", *name.split("."))
        try:
            values[name] = " ".join(path.read_text().split())
        except OSError:
            values[name] = "absent"
    return values


def tool_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name, argv in TOOLS.items():
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=30)
            text = (proc.stdout or proc.stderr).strip().splitlines()
            versions[name] = text[0] if text else "unknown"
        except (OSError, subprocess.TimeoutExpired):
            versions[name] = "absent"
    try:
        import mininet.net
        versions["mininet"] = mininet.net.VERSION
    except ImportError:
        versions["mininet"] = "absent"
    return versions


def clock() -> str:
    """"real", or "virtual (time-travel=...)" when this kernel was booted with time-travel:
    read from the kernel's own command line, so it cannot disagree with what ran."""
    mode = _time_travel_arg()
    return clock_label(None if mode is None else mode.partition(":")[0])


def wake_latency() -> str | None:
    """The wake-up latency table a wall-cpu kernel charges (GAP_NS/LATENCY_NS,...), if any."""
    mode = _time_travel_arg()
    return None if mode is None else from_kernel_arg(mode)


def host_cpu() -> int | None:
    """The host CPU a User-Mode Linux kernel was pinned to (topology/kernel/cpu_slots.py), None
    when it ran unpinned or is not a User-Mode Linux."""
    value = _kernel_arg("TESTBED_HOST_CPU")
    return int(value) if value and value.isdigit() else None


def _time_travel_arg() -> str | None:
    """The value of the kernel's time-travel argument ("" for a bare one), None without."""
    return _kernel_arg("time-travel")


def _kernel_arg(name: str) -> str | None:
    """The value of NAME=VALUE on the kernel's command line ("" for a bare NAME), None without."""
    try:
        args = Path("/proc/cmdline").read_text().split()
    except OSError:
        return None
    for arg in args:
        key, _, value = arg.partition("=")
        if key == name:
            return value
    return None


# what a container engine leaves in the root it gives a container. Asked on the host, not inside
# the pinned kernel: the kernel mounts a /run of its own over podman's mark.
CONTAINER_MARKS = {"podman": "/run/.containerenv", "docker": "/.dockerenv",
                   "apptainer": "/.singularity.d"}


def container() -> str | None:
    """The engine of the container this kernel's root file system belongs to, if any."""
    for engine, mark in CONTAINER_MARKS.items():
        if Path(mark).exists():
            return engine
    return None


def config_sha256() -> str | None:
    """SHA-256 of the kernel's own configuration (/proc/config.gz, uncompressed), where the
    kernel offers it (the project's build does; Debian's User-Mode Linux does not): two
    results with the same release and hash ran the same kernel."""
    try:
        with gzip.open("/proc/config.gz") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def boot_id() -> str:
    """Which boot of the kernel this is: batches that name one boot ran in one kernel."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown"


def collect() -> dict[str, Any]:
    uname = os.uname()
    return {
        "backend": os.environ.get("TESTBED_BACKEND", "unknown"),
        "clock": clock(),
        "wake_latency_ns": wake_latency(),
        "host_cpu": host_cpu(),
        "kernel_release": uname.release,
        "kernel_version": uname.version,
        "boot_id": boot_id(),
        "kernel_config_sha256": config_sha256(),
        "machine": uname.machine,
        "sysctls": sysctls(),
        "tools": tool_versions(),
    }


if __name__ == "__main__":
    json.dump(collect(), sys.stdout, indent=2)
    print()
