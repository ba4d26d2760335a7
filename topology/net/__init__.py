"""Emulated networks, built with Mininet inside the kernel that runs the experiment.

A topology is one class (path.py, dumbbell.py, dualpath.py) that owns its description (the keys
of its [network] table, its shaped directions, the one its network axis names, its address
plan) and builds itself: a context manager, entering builds it, leaving tears it down, also on
error. Links are shaped on routers (see shaping.py) and can be changed in place while running.

    KINDS               the topologies an experiment file can name, registered once
    topology_class(k)   a kind's class, whose description imports no Mininet
    build(spec)         a topology from its JSON-able description (what the harness sends a kernel)

Importing this package or a topology's class loads no Mininet; building one does."""
from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import Topology

KINDS = {"path": ".path:PathTopology", "dumbbell": ".dumbbell:Dumbbell",
         "dualpath": ".dualpath:DualPath"}


def topology_class(kind: str) -> type[Topology]:
    from ..params import ParameterError
    if kind not in KINDS:
        raise ParameterError(f"unknown topology {kind!r}: choose one of {', '.join(KINDS)}")
    module, _, name = KINDS[kind].partition(":")
    return getattr(import_module(module, __name__), name)


def build(spec: dict[str, Any]) -> Topology:
    """A topology (not yet started) from {"kind": ..., "links": {direction: LinkShape dict},
    "pairs": n (dumbbell), "mtu": bytes}."""
    from ..params import LinkShape
    links = {d: LinkShape.from_dict(s) for d, s in spec.get("links", {}).items()}
    return topology_class(spec.get("kind", "")).from_spec(links, spec.get("mtu"),
                                                           spec.get("pairs", 2))


__all__ = ["KINDS", "build", "topology_class"]
