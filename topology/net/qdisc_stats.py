"""The cumulative statistics of one node's queueing disciplines, read over a netlink socket
opened in the node's network namespace and kept for the topology's life.

`tc -s qdisc show` gives the same numbers, but it is a program start inside the pinned kernel
(89 ms, median of 20 on a client-router-server path), and the harness reads every router's
counters twice a run. A netlink dump from this process took 2 ms. pyroute2's import costs about
2 s inside a freshly booted kernel, once per boot. The statistics come back in the shape of
`tc -s -j qdisc show`'s entries (shaping.counters reads either)."""
from __future__ import annotations

import os
import sys
from typing import Any

# pyroute2's package import loads all its modules, its interactive console among them, which
# imports readline if it can. GNU readline's start-up (TERM set, no terminal) then writes
# COLUMNS=80 and LINES=24 into this process's environment, below Python's os.environ, and every
# program started afterwards inherits them: a `ps` then cuts its lines at 80 columns. Hidden
# from that import, readline is not started: the console is never used, and it does without.
_HIDE_READLINE = "readline" not in sys.modules
if _HIDE_READLINE:
    sys.modules["readline"] = None  # type: ignore[assignment]
try:
    from pyroute2 import IPRoute, netns
except ImportError as missing:  # a checkout set up before the queue counters needed it
    raise ImportError("the queue counters need Debian's python3-pyroute2: run `make setup`") \
        from missing
finally:
    if _HIDE_READLINE:
        del sys.modules["readline"]


class QdiscStatsError(RuntimeError):
    pass


class QdiscStats:
    """Reads the qdiscs of the network namespace process `pid` lives in."""

    def __init__(self, pid: int, name: str) -> None:
        self.name = name
        path = f"/proc/{pid}/ns/net"
        try:
            handle = os.open(path, os.O_RDONLY)
        except OSError as error:
            raise QdiscStatsError(f"{name}: cannot open its network namespace {path}: "
                                  f"{error}") from None
        try:
            # The socket belongs to the namespace it was made in, whatever this thread
            # enters afterwards: in for its creation, straight back out.
            netns.pushns(handle)
            try:
                self.socket = IPRoute()
            finally:
                netns.popns()
        finally:
            os.close(handle)
        self.devices = {link["index"]: link.get_attr("IFLA_IFNAME")
                        for link in self.socket.get_links()}

    def by_device(self) -> dict[str, list[dict[str, Any]]]:
        """Every qdisc's counters, grouped by the device it is attached to."""
        out: dict[str, list[dict[str, Any]]] = {}
        for message in self.socket.get_qdiscs():
            dev = self.devices.get(message["index"])
            if dev is None:
                continue  # a device made after the topology was built: none of ours
            out.setdefault(dev, []).append(self._entry(message))
        return out

    def _entry(self, message: Any) -> dict[str, Any]:
        stats = message.get_attr("TCA_STATS2")
        basic = stats.get_attr("TCA_STATS_BASIC") if stats is not None else None
        queue = stats.get_attr("TCA_STATS_QUEUE") if stats is not None else None
        if basic is None or queue is None:
            raise QdiscStatsError(f"{self.name}: the kernel sent a qdisc without statistics: "
                                  f"{message.get_attr('TCA_KIND')} on device "
                                  f"{self.devices.get(message['index'])}")
        # tc names a handle by its major number in hex: 1:, 10:, 20:
        return {"kind": message.get_attr("TCA_KIND"), "handle": f"{message['handle'] >> 16:x}:",
                "packets": basic["packets"], "drops": queue["drops"],
                "overlimits": queue["overlimits"]}

    def close(self) -> None:
        self.socket.close()
