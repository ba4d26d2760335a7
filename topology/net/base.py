"""What every topology is, one class per kind (path.py, dumbbell.py, dualpath.py), as Mininet's
Topo classes are: its description (the keys of its experiment file's [network] table, the names
of its shaped directions and which of them an entry of its network axis names, its address
plan), and the network itself: a Mininet network without switches or controller, routers that
forward, wire-sized frames, shaped router egresses, and a teardown that always runs.

The description imports no Mininet (the host's harness and analysis read it); building a
topology does."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from ..params import LinkShape, ParameterError
from . import shaping
from .node_exec import run_script, tc_batch
from .schedule import Change, Running

if TYPE_CHECKING:
    from mininet.net import Mininet
    from mininet.node import Node

    from .qdisc_stats import QdiscStats

# Segmentation and receive offloads would make captures show super-frames up to 64 KB and
# hide the packets the wire carries; checksum offload would leave them with bad checksums.
OFFLOADS_OFF = ["tx", "off", "tso", "off", "gso", "off", "gro", "off",
                "tx-sctp-segmentation", "off"]


class TopologyError(RuntimeError):
    pass


DEFAULT_MTU = 1500
MTU_RANGE = (576, 9000)


class Egress:
    """One shaped direction of a link: the egress interface that shapes it, its current shape
    and the size of its largest frame (the rate limiter's burst)."""

    def __init__(self, node: Node, dev: str, shape: LinkShape,
                 frame_bytes: int = shaping.FRAME_QUANTUM) -> None:
        self.node, self.dev, self.shape, self.frame_bytes = node, dev, shape, frame_bytes

    def apply(self) -> None:
        tc_batch(self.node, shaping.build(self.dev, self.shape, self.frame_bytes))


class Held(Protocol):
    """Something a topology holds for its runs (`Topology.held`) and stops at its end."""

    def stop(self) -> None: ...


class Topology:
    """Base of path, dumbbell and dualpath. Subclasses describe themselves in the class
    attributes and `run_links`, add nodes and links in `_add` and name their shaped directions
    in `self.egress`."""

    kind: ClassVar[str] = "topology"
    # the keys of the experiment file's [network] table, and of each entry of its network axis
    # (`entry_table`: the paths of `path`, the bottlenecks of `dumbbell`)
    network_keys: ClassVar[dict[str, type]] = {}
    entry_table: ClassVar[str] = "paths"
    entry_keys: ClassVar[dict[str, type]] = {}
    # the shaped direction whose rate, delay and queue an entry of the network axis names:
    # what a run's table and its link check show as its link
    named_link: ClassVar[str] = ""
    # a client-server topology's address plan (path, dualpath): the addresses the programs
    # use, the further ones an SCTP end host also binds (multihoming), and the client's
    # interfaces a run captures (the server's too, where the experiment asks: run.capture_at)
    client_ip: ClassVar[str] = ""
    server_ip: ClassVar[str] = ""
    client_also: ClassVar[tuple[str, ...]] = ()
    server_also: ClassVar[tuple[str, ...]] = ()
    client_interfaces: ClassVar[tuple[str, ...]] = ()
    server_interfaces: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def run_links(cls, lossy: LinkShape, clean: LinkShape, *, pairs: int = 1,
                  access: LinkShape | None = None, loss_on: str = "both",
                  second: LinkShape | None = None) -> dict[str, LinkShape]:
        """Every shaped direction of a run whose network-axis entry shapes as `lossy` (the
        run's loss) and `clean` (the same without loss); `second`: a second path's own shape,
        for a topology that has one (dualpath), whatever the entry and the loss."""
        raise NotImplementedError

    @classmethod
    def from_spec(cls, links: dict[str, LinkShape], mtu: int | None, pairs: int) -> Topology:
        """The topology (not yet started) a kernel builds for a run with these links."""
        raise NotImplementedError

    def __init__(self, mtu: int | None = None) -> None:
        """`mtu`: of every interface (default 1500); a larger one lets a packet carry more
        payload than Ethernet's usual 1500 bytes allow."""
        if mtu is not None and (isinstance(mtu, bool) or not isinstance(mtu, int)
                                or not MTU_RANGE[0] <= mtu <= MTU_RANGE[1]):
            raise ParameterError(f"mtu must be a whole number of bytes from {MTU_RANGE[0]} to "
                                 f"{MTU_RANGE[1]}, got {mtu!r}")
        self.mtu = mtu or DEFAULT_MTU
        self.net: Mininet | None = None
        self.egress: dict[str, Egress] = {}
        self.timings_s: dict[str, float] = {}
        # what lives as long as the topology (a capture held across its runs), by name:
        # stopped before the nodes go
        self.held: dict[str, Held] = {}
        # per node that shapes an egress: its qdiscs' counters, read over netlink
        self.qdisc_stats: dict[str, QdiscStats] = {}

    def egress_of(self, node: Node, dev: str, shape: LinkShape) -> Egress:
        """A shaped direction whose rate limiter lets this topology's largest frame through."""
        return Egress(node, dev, shape, self.mtu + shaping.ETHERNET_HEADER)

    # -- life cycle -------------------------------------------------------------------------
    def __enter__(self) -> Topology:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        from mininet.link import Link
        from mininet.log import setLogLevel
        from mininet.net import Mininet

        from .qdisc_stats import QdiscStats
        started = time.monotonic()
        setLogLevel("error")
        self.net = Mininet(topo=None, controller=None, link=Link, build=False,
                           autoSetMacs=False, waitConnected=False)
        try:
            self._add(self.net)
            self.net.build()
            self._configure()
            for egress in self.egress.values():
                egress.apply()
                if egress.node.name not in self.qdisc_stats:
                    self.qdisc_stats[egress.node.name] = QdiscStats(egress.node.pid,
                                                                    egress.node.name)
        except BaseException:
            self.stop()
            raise
        self.timings_s["build"] = time.monotonic() - started

    def stop(self) -> None:
        if self.net is None:
            return
        started = time.monotonic()
        try:
            while self.held:
                self.held.popitem()[1].stop()
        finally:
            while self.qdisc_stats:
                self.qdisc_stats.popitem()[1].close()
            net, self.net = self.net, None
            net.stop()
        self.timings_s["teardown"] = time.monotonic() - started

    # -- what subclasses provide ---------------------------------------------------------------
    def _add(self, net: Mininet) -> None:
        raise NotImplementedError

    def _routes(self) -> dict[str, list[list[str]]]:
        """Commands per node name run once after build (routes and such)."""
        return {}

    def end_hosts(self) -> list[str]:
        """The nodes that run the programs (not the routers): each gets a run's sysctls."""
        raise NotImplementedError

    def probe_pair(self) -> tuple[str, str]:
        """A node and the address it pings to check the links before the runs."""
        raise NotImplementedError

    def probe_route(self) -> list[str]:
        """The shaped directions a ping of the probe pair crosses, there and back."""
        raise NotImplementedError

    # -- shared configuration -------------------------------------------------------------------
    def _configure(self) -> None:
        assert self.net is not None
        routes = self._routes()
        neighbours = self._static_neighbours()
        for node in self.net.hosts:
            interfaces = [intf.name for intf in node.intfList() if intf.name != "lo"]
            commands = [["ethtool", "-K", name, *OFFLOADS_OFF] for name in interfaces]
            if self.mtu != DEFAULT_MTU:
                commands += [["ip", "link", "set", "dev", name, "mtu", str(self.mtu)]
                             for name in interfaces]
            commands += routes.get(node.name, [])
            commands += neighbours.get(node.name, [])
            run_script(node, commands)

    def _static_neighbours(self) -> dict[str, list[list[str]]]:
        """Every node knows the hardware address of each of its links' far ends for good.
        Without that, a router whose neighbour entry ages out (30 s or so on a forwarding
        node, which no transport confirms) sends its ARP probe through the shaped egress and
        waits for the reply behind the far side's queue: behind a full 0.2 Mbit/s bottleneck
        that is seconds, while every acknowledgement for that hop is held and then dropped.
        The studies' links carry no ARP; neither do these."""
        assert self.net is not None
        commands: dict[str, list[list[str]]] = {}
        for link in self.net.links:
            for near, far in ((link.intf1, link.intf2), (link.intf2, link.intf1)):
                if near.IP() and far.IP() and far.MAC():
                    commands.setdefault(near.node.name, []).append(
                        ["ip", "neigh", "replace", far.IP(), "lladdr", far.MAC(),
                         "dev", near.name, "nud", "permanent"])
        return commands

    def node(self, name: str) -> Node:
        if self.net is None:
            raise TopologyError("the topology is not running")
        return self.net[name]

    def set_link(self, direction: str, shape: LinkShape) -> None:
        """Change one shaped direction in place (no rebuild)."""
        self.set_links({direction: shape})

    def set_links(self, shapes: dict[str, LinkShape]) -> None:
        """Change several shaped directions in place (no rebuild)."""
        unknown = [d for d in shapes if d not in self.egress]
        if unknown:
            raise TopologyError(f"unknown link direction {unknown[0]!r}: "
                                f"choose among {', '.join(self.egress)}")
        started = time.monotonic()
        batches: dict[str, tuple[Node, list[str]]] = {}
        for direction, shape in shapes.items():
            egress = self.egress[direction]
            lines = batches.setdefault(egress.node.name, (egress.node, []))[1]
            lines += shaping.change(egress.dev, egress.shape, shape, egress.frame_bytes)
        for node, lines in batches.values():
            tc_batch(node, lines)
        for direction, shape in shapes.items():
            self.egress[direction].shape = shape
        self.timings_s["reconfigure"] = time.monotonic() - started

    def rebuild_links(self, shapes: dict[str, LinkShape]) -> None:
        """Set these directions up afresh, whatever their qdiscs hold now (after a schedule)."""
        batches: dict[str, tuple[Node, list[str]]] = {}
        for direction, shape in shapes.items():
            egress = self.egress[direction]
            batches.setdefault(egress.node.name, (egress.node, []))[1].extend(
                shaping.build(egress.dev, shape, egress.frame_bytes))
        for node, lines in batches.values():
            tc_batch(node, lines)
        for direction, shape in shapes.items():
            self.egress[direction].shape = shape

    def schedule(self, changes: list[Change]) -> Running:
        """Starts a schedule of link changes now; `stop()` it when the run ends."""
        running = Running(self, changes)
        running.begin()
        return running

    def queue_counters(self) -> dict[str, dict[str, int]]:
        """Per shaped direction, its router's cumulative counters (shaping.counters): take them
        before and after a run, and the difference is what the run did to the queues. One
        netlink dump per router, however many egresses it shapes."""
        from .qdisc_stats import QdiscStatsError

        trees: dict[str, dict[str, list[dict[str, Any]]]] = {}
        for egress in self.egress.values():
            name = egress.node.name
            if name not in trees:
                try:
                    trees[name] = self.qdisc_stats[name].by_device()
                except (QdiscStatsError, OSError) as error:
                    raise TopologyError(f"{name}: unreadable qdisc statistics: {error}") from None
        return {direction: shaping.counters(trees[egress.node.name].get(egress.dev, []))
                for direction, egress in self.egress.items()}

    def shapes(self) -> dict[str, dict[str, Any]]:
        return {name: e.shape.to_dict() for name, e in self.egress.items()}
