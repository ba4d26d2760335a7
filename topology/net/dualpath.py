"""client and server joined by two disjoint paths, two addresses each (SCTP multihoming).

    client -eth0- router1 -eth0- server        path 1: 10.1.1.0/24 and 10.1.2.0/24
    client -eth1- router2 -eth1- server        path 2: 10.2.1.0/24 and 10.2.2.0/24

Each path is shaped on its own router (`path<k>-up`, `path<k>-down`) and can be taken down and
brought back on command. Down is a silent black hole on the router (every packet dropped both
ways), as when a link fails mid-path: the end hosts see no interface change and must find out
by themselves, the way SCTP path failure detection is meant to.

Its experiment file's [network] is a path's: each entry of `paths` shapes both paths alike,
unless [network.path2] gives path 2 a shape of its own (rate, delay, queue, a fixed loss), the
same for every run: then the entry and the matrix's loss shape path 1 only.

Path 1 is the primary: the programs address the server's path-1 address, and an SCTP end
host binds its path-2 address as well (multihoming); TCP crosses path 1 only."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..params import LinkShape, ParameterError
from .base import Topology
from .path import PATH_ENTRY_KEYS, PATH_NETWORK_KEYS

if TYPE_CHECKING:
    from mininet.net import Mininet

PATHS = (1, 2)
PATH2_KEYS = {"rate": str, "delay": str, "queue": str, "loss": float}
DUALPATH_NETWORK_KEYS = {**PATH_NETWORK_KEYS, "path2": PATH2_KEYS}


def client_address(path: int) -> str:
    return f"10.{path}.1.1"


def server_address(path: int) -> str:
    return f"10.{path}.2.1"


def path_of(address: str) -> int | None:
    """The path an end host's address belongs to (10.k.x.x: path k), or None."""
    parts = address.split(".")
    if len(parts) == 4 and parts[0] == "10" and parts[1].isdigit() and int(parts[1]) in PATHS:
        return int(parts[1])
    return None


class DualPath(Topology):
    kind = "dualpath"
    network_keys = DUALPATH_NETWORK_KEYS
    client_ip = client_address(1)
    server_ip = server_address(1)
    # the further addresses an SCTP end host binds beside its first (multihoming)
    client_also = (client_address(2),)
    server_also = (server_address(2),)
    # the client's interfaces, whose packets a run captures
    client_interfaces = ("client-eth0", "client-eth1")
    server_interfaces = ("server-eth0", "server-eth1")
    entry_table = "paths"
    entry_keys = PATH_ENTRY_KEYS
    named_link = "path1-up"

    @classmethod
    def run_links(cls, lossy: LinkShape, clean: LinkShape, *, pairs: int = 1,
                  access: LinkShape | None = None, loss_on: str = "both",
                  second: LinkShape | None = None) -> dict[str, LinkShape]:
        shapes = {1: lossy, 2: second or lossy}
        return {f"path{k}-{d}": shapes[k] for k in PATHS for d in ("up", "down")}

    @classmethod
    def from_spec(cls, links: dict[str, LinkShape], mtu: int | None, pairs: int) -> DualPath:
        return cls(links.get("path1-up", LinkShape()), links.get("path2-up"), mtu=mtu)

    def __init__(self, path1: LinkShape, path2: LinkShape | None = None,
                 mtu: int | None = None) -> None:
        super().__init__(mtu)
        self.initial = {1: path1, 2: path2 or path1}
        self.down: set[int] = set()
        self._configured: dict[str, LinkShape] = {}

    def _add(self, net: Mininet) -> None:
        from .router import Router
        client = net.addHost("client", ip=None)
        server = net.addHost("server", ip=None)
        for k in PATHS:
            router = net.addHost(f"router{k}", cls=Router, ip=None)
            net.addLink(client, router, intfName1=f"client-eth{k - 1}",
                        intfName2=f"router{k}-eth0",
                        params1={"ip": f"{client_address(k)}/24"},
                        params2={"ip": f"10.{k}.1.254/24"})
            net.addLink(router, server, intfName1=f"router{k}-eth1",
                        intfName2=f"server-eth{k - 1}",
                        params1={"ip": f"10.{k}.2.254/24"},
                        params2={"ip": f"{server_address(k)}/24"})
            self.egress[f"path{k}-up"] = self.egress_of(router, f"router{k}-eth1", self.initial[k])
            self.egress[f"path{k}-down"] = self.egress_of(router, f"router{k}-eth0",
                                                          self.initial[k])

    def _routes(self) -> dict[str, list[list[str]]]:
        client = [["ip", "route", "add", f"10.{k}.2.0/24", "via", f"10.{k}.1.254"] for k in PATHS]
        server = [["ip", "route", "add", f"10.{k}.1.0/24", "via", f"10.{k}.2.254"] for k in PATHS]
        return {"client": client, "server": server}

    def end_hosts(self) -> list[str]:
        return ["client", "server"]

    def probe_pair(self) -> tuple[str, str]:
        return "client", server_address(1)

    def probe_route(self) -> list[str]:
        return ["path1-up", "path1-down"]

    def _check_path(self, path: int) -> None:
        if path not in PATHS:
            raise ParameterError(f"path must be 1 or 2, got {path!r}")

    def set_path(self, path: int, shape: LinkShape) -> None:
        """Shape both directions of one path; a path that is down stays down."""
        self._check_path(path)
        for direction in ("up", "down"):
            name = f"path{path}-{direction}"
            self._configured[name] = shape
            if path not in self.down:
                self.set_link(name, shape)

    def path_down(self, path: int) -> None:
        self._check_path(path)
        if path in self.down:
            return
        for direction in ("up", "down"):
            name = f"path{path}-{direction}"
            self._configured[name] = self.egress[name].shape
            self.set_link(name, self._configured[name].with_changes(loss=1.0))
        self.down.add(path)

    def path_up(self, path: int) -> None:
        self._check_path(path)
        if path not in self.down:
            return
        self.down.discard(path)
        for direction in ("up", "down"):
            name = f"path{path}-{direction}"
            self.set_link(name, self._configured[name])
