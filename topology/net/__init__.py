"""Emulated networks, built with Mininet inside the kernel that runs the experiment.

Each topology is a context manager: entering builds it, leaving tears it down, also on error.
Links are shaped on routers (see shaping.py) and can be changed in place while running.

    build(spec)     a topology from its JSON-able description (what the harness sends a kernel)
    PathTopology, Dumbbell, DualPath, TopologyError

Importing this package does not import Mininet (host-side code reads `addresses` and
`shaping` without it); the topologies load it when first named."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import Topology

KINDS = ("path", "dumbbell", "dualpath")
_CLASSES = {"PathTopology": ".path", "Dumbbell": ".dumbbell", "DualPath": ".dualpath",
            "TopologyError": ".base", "Topology": ".base"}


def __getattr__(name: str) -> Any:
    if name in _CLASSES:
        from importlib import import_module
        return getattr(import_module(_CLASSES[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def build(spec: dict[str, Any]) -> Topology:
    """A topology (not yet started) from {"kind": ..., "links": {direction: LinkShape dict},
    "pairs": n (dumbbell), "mtu": bytes}."""
    from ..params import LinkShape, ParameterError
    from .dualpath import DualPath
    from .dumbbell import Dumbbell
    from .path import PathTopology

    kind = spec.get("kind")
    links = {d: LinkShape.from_dict(s) for d, s in spec.get("links", {}).items()}
    mtu = spec.get("mtu")
    if kind == "path":
        return PathTopology(links.get("up", LinkShape()), links.get("down"), mtu=mtu)
    if kind == "dualpath":
        return DualPath(links.get("path1-up", LinkShape()), links.get("path2-up"), mtu=mtu)
    if kind == "dumbbell":
        return Dumbbell(spec.get("pairs", 2), links.get("s1-up", LinkShape()),
                        links.get("bottleneck-up", LinkShape()), links.get("bottleneck-down"),
                        mtu=mtu)
    raise ParameterError(f"unknown topology {kind!r}: choose one of {', '.join(KINDS)}")


__all__ = ["KINDS", "build"]
