"""The `sctp_stacks` axis as every SCTP workload takes it: what an experiment with usrsctp
among its SCTP stacks may not ask, the programs' options for a point's SCTP stack, and what
meta.json records of it. usrsctp reaches the wire inside UDP (RFC 6951) at both ends; the
kernel's SCTP stays over IP."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from experiments import procedure
from experiments.stacks import STACKS, Stack
from experiments.workloads.base import KERNEL_SCTP, Point

if TYPE_CHECKING:
    from experiments.spec import Reader

ENCAPSULATION = ("kernel: SCTP over IP; usrsctp: SCTP over UDP port 9899 at both ends "
                 "(RFC 6951), 8 bytes more per packet, so 8 bytes less of a file per full "
                 "packet on the same MTU")
NOT_APPLIED = ("the kernel's SCTP sysctls beyond the stack's three RTO timers (usrsctp reads "
               "its own: usrsctp_stack_settings); usrsctp keeps its own potentially-failed "
               "state off (sctp_path_pf_threshold 65535, usrsctplib/netinet/sctp_sysctl.h), "
               "which a single path never enters")


def refuse(reader: Reader, data: dict[str, Any], stacks: tuple[str, ...]) -> None:
    """What no workload runs on usrsctp: the kernel's SCTP knobs ([sctp]), which usrsctp does
    not read; a second path, whose multihoming the programs do not give usrsctp; a stack
    profile that sets what usrsctp has no counterpart for (stacks.Stack.usrsctp_refusal)."""
    if data.get("sctp"):
        raise reader.fail("sctp", "the [sctp] knobs are the kernel's sysctls, which usrsctp "
                                  "does not read: drop them, or run usrsctp in an experiment "
                                  "of its own")
    if data.get("topology") == "dualpath":
        raise reader.fail("matrix.sctp_stacks", "usrsctp runs on one path here (its "
                                                "associations are not multihomed): use "
                                                "topology \"path\"")
    for stack in stacks:
        refusal = STACKS[stack].usrsctp_refusal()
        if refusal:
            raise reader.fail("matrix.stacks", f"{refusal}: run usrsctp under another stack, "
                                               "or in an experiment of its own")


def program_options(point: Point, stack: Stack, peer: bool) -> list[str]:
    """A program's options for the point's SCTP stack: none for the kernel's (and for TCP);
    on usrsctp its UDP ports, the stack's timers as usrsctp's sysctls, then the experiment's
    own sysctls ("usrsctp:NAME=VALUE"), which win. `peer`: the program names the peer's UDP
    port (a server does not: it answers each association on the port it came from)."""
    sctp_stack = point.get("sctp_stack") or KERNEL_SCTP
    if sctp_stack == KERNEL_SCTP:
        return []
    return procedure.sctp_stack_options(sctp_stack, peer=peer, sysctls=stack.usrsctp_sysctls())


def record(sctp_stacks: tuple[str, ...], stacks: tuple[str, ...]) -> dict[str, Any]:
    """meta.json's record of the axis: the SCTP stacks, and with usrsctp among them how it
    reaches the wire, the sysctls each stack profile gives it and what it does not take."""
    if sctp_stacks == (KERNEL_SCTP,):
        return {"sctp_stacks": list(sctp_stacks)}
    return {"sctp_stacks": list(sctp_stacks), "sctp_encapsulation": ENCAPSULATION,
            "usrsctp_stack_settings": {name: dict(STACKS[name].usrsctp_sysctls())
                                       for name in stacks},
            "usrsctp_not_applied": NOT_APPLIED}
