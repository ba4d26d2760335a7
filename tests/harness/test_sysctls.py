"""The harness applies a run's sysctls in each node's own network namespace, through the node's
shell and no sysctl program: inside the pinned kernel every value, several numbers in one
included, reads back as set, the kernel's own namespace keeps its values, and a key that does
not exist fails the run, naming it."""
from __future__ import annotations

import json
from pathlib import Path

from topology.kernel import open_backend

HERE = Path(__file__).parent


def test_sysctls_are_set_in_the_node_and_a_wrong_key_is_refused():
    result = open_backend("uml").run(["/usr/bin/python3", str(HERE / "inside_sysctls.py")],
                                     timeout_s=300)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert seen["applied"] == {"net.ipv4.tcp_sack": "0",
                               "net.ipv4.tcp_rmem": "4096\t87380\t65535",
                               "net.ipv4.tcp_congestion_control": "reno"}
    assert seen["root_namespace_sack"] == "1"
    assert seen["refused"] is not None and "no_such_key" in seen["refused"]
    assert "sysctl-node" in seen["refused"]
