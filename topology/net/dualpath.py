"""client and server joined by two disjoint paths, two addresses each (SCTP multihoming).

    client -eth0- router1 -eth0- server        path 1: 10.1.1.0/24 and 10.1.2.0/24
    client -eth1- router2 -eth1- server        path 2: 10.2.1.0/24 and 10.2.2.0/24

Each path is shaped on its own router (`path<k>-up`, `path<k>-down`) and can be taken down and
brought back on command. Down is a silent black hole on the router (every packet dropped both
ways), as when a link fails mid-path: the end hosts see no interface change and must find out
by themselves, the way SCTP path failure detection is meant to."""
from __future__ import annotations

from mininet.net import Mininet

from ..params import LinkShape, ParameterError
from .addresses import DUALPATHS as PATHS
from .addresses import dualpath_client as client_address
from .addresses import dualpath_server as server_address
from .base import Router, Topology


class DualPath(Topology):
    kind = "dualpath"

    def __init__(self, path1: LinkShape, path2: LinkShape | None = None,
                 mtu: int | None = None) -> None:
        super().__init__(mtu)
        self.initial = {1: path1, 2: path2 or path1}
        self.down: set[int] = set()
        self._configured: dict[str, LinkShape] = {}

    def _add(self, net: Mininet) -> None:
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
