"""The address plan of every topology and the direction of its data, without Mininet: what
host-side code (the harness, the analysis, the playbooks' checks) needs to know of a network it
does not build.

    path       client 10.0.1.1, server 10.0.2.1, router .254 on each side
    dumbbell   sender s<i> 10.1.<i>.1, receiver d<i> 10.2.<i>.1, routers .254; core 10.3.0.0/30
    dualpath   path k: client 10.<k>.1.1, server 10.<k>.2.1"""
from __future__ import annotations

# The shaped direction that carries a topology's data (the others are the way back, or the
# dumbbell's access links): what a run's table shows as its link.
DATA_DIRECTION = {"path": "up", "dumbbell": "bottleneck-up", "dualpath": "path1-up"}

CLIENT_IP, CLIENT_GW = "10.0.1.1", "10.0.1.254"
SERVER_IP, SERVER_GW = "10.0.2.1", "10.0.2.254"
DUALPATHS = (1, 2)


def dumbbell_address(host: str) -> str:
    """s<i> or d<i> -> its address."""
    side = 1 if host.startswith("s") else 2
    return f"10.{side}.{int(host[1:])}.1"


def dumbbell_gateway(host: str) -> str:
    return dumbbell_address(host).rsplit(".", 1)[0] + ".254"


def dualpath_client(path: int) -> str:
    return f"10.{path}.1.1"


def dualpath_server(path: int) -> str:
    return f"10.{path}.2.1"
