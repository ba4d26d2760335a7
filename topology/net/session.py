"""Inside the kernel: bring a topology up from a JSON spec, run one command on one node (or
show the network when none is given), tear it down, exit with the command's status.

    python3 -m topology.net.session SPEC_JSON NODE [CMD ...]"""
from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from ..params import LinkShape
from . import TOPOLOGIES
from .base import Topology


def from_spec(spec: dict[str, Any]) -> Topology:
    kind = spec["topology"]
    shape = LinkShape.from_dict(spec["shape"])
    if kind == "path":
        return TOPOLOGIES["path"](shape)
    if kind == "dualpath":
        return TOPOLOGIES["dualpath"](shape)
    access = LinkShape.from_dict(spec.get("access") or {})
    return TOPOLOGIES["dumbbell"](spec.get("pairs", 2), access, shape)


def describe(topology: Topology) -> str:
    assert topology.net is not None
    lines = [f"{topology.kind} is up on kernel {subprocess.check_output(['uname', '-r'], text=True).strip()}"]
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
