"""What the running kernel can do for the experiments: SCTP sockets and the netem qdisc."""
from __future__ import annotations

import socket
import subprocess
import uuid

IPPROTO_SCTP = 132


def missing_pieces() -> list[str]:
    """Names of what this kernel lacks, each with the way to see it; empty when capable."""
    missing = []
    if not has_sctp():
        missing.append("SCTP (socket(AF_INET, SOCK_STREAM, IPPROTO_SCTP) is refused; "
                       "module sctp absent or not loadable)")
    netem_error = netem_error_message()
    if netem_error:
        missing.append(f"the netem qdisc (tc says: {netem_error})")
    return missing


def has_sctp() -> bool:
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_SCTP).close()
    except OSError:
        return False
    return True


def netem_error_message() -> str:
    """Try netem on the loopback of a throw-away namespace; '' when it works."""
    namespace = f"tb-probe-{uuid.uuid4().hex[:8]}"
    try:
        made = subprocess.run(["ip", "netns", "add", namespace], capture_output=True, text=True)
    except FileNotFoundError:
        return "iproute2 is not installed"
    if made.returncode != 0:
        return f"cannot create a network namespace: {made.stderr.strip()}"
    try:
        probe = subprocess.run(
            ["ip", "netns", "exec", namespace, "tc", "qdisc", "add", "dev", "lo", "root",
             "netem", "delay", "1ms"], capture_output=True, text=True)
        return "" if probe.returncode == 0 else (probe.stderr.strip() or "refused")
    finally:
        subprocess.run(["ip", "netns", "delete", namespace], capture_output=True)
