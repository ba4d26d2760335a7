"""Runs inside the pinned kernel: applies sysctls the harness's way on a shell, in a network
namespace of its own as a node's, reads them back, and tries a key that does not exist. Prints
what it saw as JSON.

    python3 tests/harness/inside_sysctls.py"""
from __future__ import annotations

import json
import subprocess
import sys

from experiments.inkernel.kernel_batch import apply_sysctls
from experiments.procedure import RunFailure

NAMESPACE = "sysctl-node"


class Node:
    """What apply_sysctls needs of a Mininet node: a name, and a shell in its namespace."""

    name = NAMESPACE

    def cmd(self, command: str) -> str:
        return subprocess.run(["ip", "netns", "exec", NAMESPACE, "bash", "-c", command],
                              capture_output=True, text=True, check=False).stdout


def read(key: str) -> str:
    return subprocess.run(["ip", "netns", "exec", NAMESPACE, "sysctl", "-n", key],
                          capture_output=True, text=True, check=True).stdout.strip()


def main() -> int:
    subprocess.run(["ip", "netns", "add", NAMESPACE], check=True)
    wanted = {"net.ipv4.tcp_sack": "0", "net.ipv4.tcp_rmem": "4096 87380 65535",
              "net.ipv4.tcp_congestion_control": "reno"}
    apply_sysctls(Node(), wanted)
    seen = {"applied": {key: read(key) for key in wanted},
            "root_namespace_sack": subprocess.run(["sysctl", "-n", "net.ipv4.tcp_sack"],
                                                  capture_output=True, text=True).stdout.strip()}
    try:
        apply_sysctls(Node(), {"net.ipv4.tcp_sack": "1", "net.ipv4.no_such_key": "1"})
        seen["refused"] = None
    except RunFailure as failure:
        seen["refused"] = str(failure)
    json.dump(seen, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
