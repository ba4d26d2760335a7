"""Kernel backends: where the experiments' network stacks run.

`uml` (default) boots the pinned User-Mode Linux; `host` uses this machine's kernel and refuses
when it lacks SCTP or netem; `auto` picks host where capable, else uml; `uml-virtual` boots the
same User-Mode Linux built with time-travel and runs the job in virtual time; `uml-built` boots
that build in real time (one kernel in both clocks). On a CPU where Debian's prebuilt
User-Mode Linux cannot run (host_cpu.py), `uml` is `uml-built`, and results say so."""
from __future__ import annotations

import os

from .base import BackendError, KernelBackend, RunResult
from .capabilities import missing_pieces
from .host_cpu import debian_uml_runs_here

BACKEND_NAMES = ("uml", "host", "auto", "uml-virtual", "uml-built")


def resolve(name: str | None = None) -> str:
    """The backend that `name` (or KERNEL, or the default) runs on this machine: `auto` picks
    one, and `uml` is `uml-built` where Debian's build cannot run on the CPU."""
    chosen = (name or os.environ.get("KERNEL") or "uml").strip()
    if chosen not in BACKEND_NAMES:
        raise BackendError(
            f"unknown kernel backend {chosen!r}: choose one of {', '.join(BACKEND_NAMES)}")
    if chosen == "auto":
        chosen = "host" if os.geteuid() == 0 and not missing_pieces() else "uml"
    if chosen == "uml" and not debian_uml_runs_here():
        chosen = "uml-built"
    return chosen


def open_backend(name: str | None = None, memory: str | None = None) -> KernelBackend:
    """The backend called `name`, or the one KERNEL names, or uml (resolve). `memory` sizes a
    pinned kernel (e.g. "640M"); the host backend has the machine's."""
    chosen = resolve(name)
    if chosen == "uml-virtual":
        from .uml_virtual import VirtualUmlBackend
        return VirtualUmlBackend(memory=memory) if memory else VirtualUmlBackend()
    if chosen == "uml-built":
        from .uml_built import BuiltUmlBackend
        return BuiltUmlBackend(memory=memory) if memory else BuiltUmlBackend()
    if chosen == "host":
        from .host import HostBackend
        return HostBackend()
    from .uml import UmlBackend
    return UmlBackend(memory=memory) if memory else UmlBackend()


__all__ = ["BACKEND_NAMES", "BackendError", "KernelBackend", "RunResult", "open_backend",
           "resolve"]
