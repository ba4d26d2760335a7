"""client - router - server: the path of the FTP studies (E1, E2).

The router shapes each direction on its egress: `up` (client to server) on the interface
toward the server, `down` (server to client) on the interface toward the client."""
from __future__ import annotations

from mininet.net import Mininet
from mininet.node import Node

from ..params import LinkShape
from .addresses import CLIENT_GW, CLIENT_IP, SERVER_GW, SERVER_IP
from .base import Router, Topology

__all__ = ["CLIENT_IP", "SERVER_IP", "PathTopology"]


class PathTopology(Topology):
    kind = "path"

    def __init__(self, up: LinkShape, down: LinkShape | None = None,
                 mtu: int | None = None) -> None:
        super().__init__(mtu)
        self.initial = {"up": up, "down": down if down is not None else up}

    def _add(self, net: Mininet) -> None:
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
