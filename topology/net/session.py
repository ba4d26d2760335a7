"""Inside the kernel: bring a topology up from a JSON spec, run one command on one node (or
show the network when none is given), tear it down, exit with the command's status.

    python3 -m topology.net.session SPEC_JSON NODE [CMD ...]"""
from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from . import build
from .base import Topology


def from_spec(spec: dict[str, Any]) -> Topology:
    """The command line's one shape on every shaped direction but the dumbbell's access links,
    which stay unshaped."""
    shape = spec["shape"]
    links = {"path": {"up": shape}, "dualpath": {"path1-up": shape},
             "dumbbell": {"bottleneck-up": shape, "s1-up": {}}}[spec["topology"]]
    return build({"kind": spec["topology"], "links": links, "pairs": spec.get("pairs", 2)})


def describe(topology: Topology) -> str:
    assert topology.net is not None
    release = subprocess.check_output(["uname", "-r"], text=True).strip()
    lines = [f"{topology.kind} is up on kernel {release}"]
    for node in topology.net.hosts:
        for intf in node.intfList():
            if intf.name != "lo":
                lines.append(f"  {node.name:<8} {intf.name:<14} {intf.IP()}")
    for name, egress in topology.egress.items():
        tree = egress.node.cmd(f"tc qdisc show dev {egress.dev}").strip().replace("\n", "\n      ")
        lines.append(f"  {name} ({egress.node.name} {egress.dev}):\n      {tree}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    spec, node_name, command = json.loads(argv[0]), argv[1], argv[2:]
    with from_spec(spec) as topology:
        if not command:
            print(describe(topology), flush=True)
            return 0
        node = topology.node(node_name)
        proc = node.popen(command, stdout=None, stderr=None)
        return proc.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
