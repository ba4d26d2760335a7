"""client - router - server: the path of the FTP studies (E1, E2).

The router shapes each direction on its egress: `up` (client to server) on the interface
toward the server, `down` (server to client) on the interface toward the client."""
from __future__ import annotations

from mininet.net import Mininet

from ..params import LinkShape
from .base import Egress, Router, Topology

CLIENT_IP, CLIENT_GW = "10.0.1.1", "10.0.1.254"
SERVER_IP, SERVER_GW = "10.0.2.1", "10.0.2.254"


class Path(Topology):
    kind = "path"

    def __init__(self, up: LinkShape, down: LinkShape | None = None) -> None:
        super().__init__()
        self.initial = {"up": up, "down": down if down is not None else up}

    def _add(self, net: Mininet) -> None:
        client = net.addHost("client", ip=None)
        router = net.addHost("router", cls=Router, ip=None)
        server = net.addHost("server", ip=None)
        net.addLink(client, router, intfName1="client-eth0", intfName2="router-eth0",
                    params1={"ip": f"{CLIENT_IP}/24"}, params2={"ip": f"{CLIENT_GW}/24"})
        net.addLink(router, server, intfName1="router-eth1", intfName2="server-eth0",
                    params1={"ip": f"{SERVER_GW}/24"}, params2={"ip": f"{SERVER_IP}/24"})
        self.egress = {"up": Egress(router, "router-eth1", self.initial["up"]),
                       "down": Egress(router, "router-eth0", self.initial["down"])}

    def _routes(self) -> dict[str, list[list[str]]]:
        return {"client": [["ip", "route", "add", "default", "via", CLIENT_GW]],
                "server": [["ip", "route", "add", "default", "via", SERVER_GW]]}

    def set_both(self, shape: LinkShape) -> None:
        """Shape both directions alike, as the studies did."""
        self.set_links({"up": shape, "down": shape})

    @property
    def client(self):
        return self.node("client")

    @property
    def server(self):
        return self.node("server")
