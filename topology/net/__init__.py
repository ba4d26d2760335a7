"""Emulated networks, built with Mininet inside the kernel that runs the experiment.

Each topology is a context manager: entering builds it, leaving tears it down, also on error.
Links are shaped on routers only (see shaping.py) and can be changed in place while running."""
from .base import TopologyError
from .dualpath import DualPath
from .dumbbell import Dumbbell
from .path import Path

TOPOLOGIES = {"path": Path, "dumbbell": Dumbbell, "dualpath": DualPath}

__all__ = ["TOPOLOGIES", "DualPath", "Dumbbell", "Path", "TopologyError"]
