"""client - router - server: the path of the FTP and HTTP studies (E1, E2, E4).

    client 10.0.1.1 -- .254 router .254 -- 10.0.2.1 server

The router shapes each direction on its egress: `up` (client to server) on the interface
toward the server, `down` (server to client) on the interface toward the client. Its
experiment file's [network] has a `queue` and `paths`, each with a name, rate, delay and
optionally a queue of its own; both directions are shaped alike, as the studies did."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..params import LinkShape
from .base import Topology

if TYPE_CHECKING:
    from mininet.net import Mininet
    from mininet.node import Node

__all__ = ["CLIENT_IP", "SERVER_IP", "PathTopology"]

CLIENT_IP, CLIENT_GW = "10.0.1.1", "10.0.1.254"
SERVER_IP, SERVER_GW = "10.0.2.1", "10.0.2.254"
# the [network] table of a topology whose axis is its paths (path and dualpath)
PATH_NETWORK_KEYS = {"queue": str, "paths": list, "mtu": int, "queue_never_drops": bool,
                     "loss_burst": float, "fade": str, "schedule": list,
                     "trace": list}
PATH_ENTRY_KEYS = {"name": str, "rate": str, "delay": str, "queue": str}


class PathTopology(Topology):
    kind = "path"
    network_keys = PATH_NETWORK_KEYS
    client_ip = CLIENT_IP
    server_ip = SERVER_IP
    client_interfaces = ("client-eth0",)
    server_interfaces = ("server-eth0",)
    entry_table = "paths"
    entry_keys = PATH_ENTRY_KEYS
    named_link = "up"

    @classmethod
    def run_links(cls, lossy: LinkShape, clean: LinkShape, *, pairs: int = 1,
                  access: LinkShape | None = None, loss_on: str = "both",
                  second: LinkShape | None = None) -> dict[str, LinkShape]:
        return {"up": lossy, "down": lossy}

    @classmethod
    def from_spec(cls, links: dict[str, LinkShape], mtu: int | None,
                  pairs: int) -> PathTopology:
        return cls(links.get("up", LinkShape()), links.get("down"), mtu=mtu)

    def __init__(self, up: LinkShape, down: LinkShape | None = None,
                 mtu: int | None = None) -> None:
        super().__init__(mtu)
        self.initial = {"up": up, "down": down if down is not None else up}

    def _add(self, net: Mininet) -> None:
        from .router import Router
        client = net.addHost("client", ip=None)
        router = net.addHost("router", cls=Router, ip=None)
        server = net.addHost("server", ip=None)
        net.addLink(client, router, intfName1="client-eth0", intfName2="router-eth0",
                    params1={"ip": f"{CLIENT_IP}/24"}, params2={"ip": f"{CLIENT_GW}/24"})
        net.addLink(router, server, intfName1="router-eth1", intfName2="server-eth0",
                    params1={"ip": f"{SERVER_GW}/24"}, params2={"ip": f"{SERVER_IP}/24"})
        self.egress = {"up": self.egress_of(router, "router-eth1", self.initial["up"]),
                       "down": self.egress_of(router, "router-eth0", self.initial["down"])}

    def _routes(self) -> dict[str, list[list[str]]]:
        return {"client": [["ip", "route", "add", "default", "via", CLIENT_GW]],
                "server": [["ip", "route", "add", "default", "via", SERVER_GW]]}

    def end_hosts(self) -> list[str]:
        return ["client", "server"]

    def probe_pair(self) -> tuple[str, str]:
        return "client", SERVER_IP

    def probe_route(self) -> list[str]:
        return ["up", "down"]

    def set_both(self, shape: LinkShape) -> None:
        """Shape both directions alike, as the studies did."""
        self.set_links({"up": shape, "down": shape})

    @property
    def client(self) -> Node:
        return self.node("client")

    @property
    def server(self) -> Node:
        return self.node("server")
