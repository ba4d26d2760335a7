"""The routers of every topology: Mininet hosts that forward IPv4 between their interfaces.
Apart from base.py so that a topology's description (its links, addresses, schema) imports no
Mininet: only building one does."""
from __future__ import annotations

from typing import Any

from mininet.node import Host

from .node_exec import run_script


class Router(Host):
    """A Mininet host that forwards IPv4 between its interfaces."""

    def config(self, **params: Any) -> Any:
        result = super().config(**params)
        run_script(self, [["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"],
                          ["sysctl", "-q", "-w", "net.ipv4.conf.all.rp_filter=0"]])
        return result
