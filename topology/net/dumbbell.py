"""n senders and n receivers across one bottleneck between two routers (the fairness study, E3).

    s1..sn -- left -- right -- d1..dn

Shaped directions ("up" is toward the receivers, the direction of the data):
`bottleneck-up` and `bottleneck-down` on the routers' bottleneck interfaces, and for each
access link `s<i>-up`/`s<i>-down` and `d<i>-up`/`d<i>-down`. An access link's direction that
leaves a host is shaped on that host's egress (delay and rate only are meant there); the
bottleneck, where the study puts its loss and its buffer, is shaped on the routers.

Addresses: sender s<i> 10.1.<i>.1, receiver d<i> 10.2.<i>.1, each behind its router's .254;
the routers' core 10.3.0.0/30. Its experiment file's [network] has the access links' rate,
delay and queue, `loss_on` ("data": the bottleneck's data direction only; "both") and
`bottlenecks`, each with a name, its number of pairs, rate, delay and queue."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..params import LinkShape, ParameterError
from .base import Topology

if TYPE_CHECKING:
    from mininet.net import Mininet

MAX_PAIRS = 50


def dumbbell_address(host: str) -> str:
    """s<i> or d<i> -> its address."""
    side = 1 if host.startswith("s") else 2
    return f"10.{side}.{int(host[1:])}.1"


def dumbbell_gateway(host: str) -> str:
    return dumbbell_address(host).rsplit(".", 1)[0] + ".254"


class Dumbbell(Topology):
    kind = "dumbbell"
    network_keys = {"access_rate": str, "access_delay": str, "access_queue": str, "mtu": int,
                    "loss_on": str, "bottlenecks": list, "queue_never_drops": bool,
                    "loss_burst": float, "fade": str, "schedule": list,
                    "trace": list}
    entry_table = "bottlenecks"
    entry_keys = {"name": str, "pairs": int, "rate": str, "delay": str, "queue": str}
    named_link = "bottleneck-up"

    @classmethod
    def run_links(cls, lossy: LinkShape, clean: LinkShape, *, pairs: int = 1,
                  access: LinkShape | None = None, loss_on: str = "both",
                  second: LinkShape | None = None) -> dict[str, LinkShape]:
        assert access is not None
        links = {"bottleneck-up": lossy,
                 "bottleneck-down": lossy if loss_on == "both" else clean}
        for i in range(1, pairs + 1):
            for host in (f"s{i}", f"d{i}"):
                links.update({f"{host}-up": access, f"{host}-down": access})
        return links

    @classmethod
    def from_spec(cls, links: dict[str, LinkShape], mtu: int | None, pairs: int) -> Dumbbell:
        return cls(pairs, links.get("s1-up", LinkShape()), links.get("bottleneck-up", LinkShape()),
                   links.get("bottleneck-down"), mtu=mtu)

    def __init__(self, pairs: int, access: LinkShape, bottleneck: LinkShape,
                 bottleneck_down: LinkShape | None = None, mtu: int | None = None) -> None:
        super().__init__(mtu)
        if isinstance(pairs, bool) or not isinstance(pairs, int) or not 1 <= pairs <= MAX_PAIRS:
            raise ParameterError(f"pairs must be a whole number from 1 to {MAX_PAIRS}, "
                                 f"got {pairs!r}")
        self.pairs = pairs
        self.access = access
        self.bottleneck = {"up": bottleneck, "down": bottleneck_down or bottleneck}

    def senders(self) -> list[str]:
        return [f"s{i}" for i in range(1, self.pairs + 1)]

    def receivers(self) -> list[str]:
        return [f"d{i}" for i in range(1, self.pairs + 1)]

    address = staticmethod(dumbbell_address)
    gateway = staticmethod(dumbbell_gateway)

    def end_hosts(self) -> list[str]:
        return self.senders() + self.receivers()

    def probe_pair(self) -> tuple[str, str]:
        return "s1", dumbbell_address("d1")

    def probe_route(self) -> list[str]:
        return ["s1-up", "bottleneck-up", "d1-down", "d1-up", "bottleneck-down", "s1-down"]

    def _add(self, net: Mininet) -> None:
        from .router import Router
        left = net.addHost("left", cls=Router, ip=None)
        right = net.addHost("right", cls=Router, ip=None)
        net.addLink(left, right, intfName1="left-core", intfName2="right-core",
                    params1={"ip": "10.3.0.1/30"}, params2={"ip": "10.3.0.2/30"})
        self.egress = {
            "bottleneck-up": self.egress_of(left, "left-core", self.bottleneck["up"]),
            "bottleneck-down": self.egress_of(right, "right-core", self.bottleneck["down"])}
        for i in range(1, self.pairs + 1):
            self._add_access(net, f"s{i}", left, f"left-s{i}", up_at_host=True)
            self._add_access(net, f"d{i}", right, f"right-d{i}", up_at_host=False)

    def _add_access(self, net: Mininet, name: str, router, router_intf: str,
                    up_at_host: bool) -> None:
        host = net.addHost(name, ip=None)
        net.addLink(host, router, intfName1=f"{name}-eth0", intfName2=router_intf,
                    params1={"ip": f"{self.address(name)}/24"},
                    params2={"ip": f"{self.gateway(name)}/24"})
        at_host = self.egress_of(host, f"{name}-eth0", self.access)
        at_router = self.egress_of(router, router_intf, self.access)
        self.egress[f"{name}-up"] = at_host if up_at_host else at_router
        self.egress[f"{name}-down"] = at_router if up_at_host else at_host

    def _routes(self) -> dict[str, list[list[str]]]:
        routes = {"left": [["ip", "route", "add", "10.2.0.0/16", "via", "10.3.0.2"]],
                  "right": [["ip", "route", "add", "10.1.0.0/16", "via", "10.3.0.1"]]}
        for host in self.senders() + self.receivers():
            routes[host] = [["ip", "route", "add", "default", "via", self.gateway(host)]]
        return routes
