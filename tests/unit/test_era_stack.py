"""The era stack (experiments/stacks.py, freebsd-4.6): every stack sets the same sysctls, so
none carries over to a later run of another; the kernel switches at Linux's own values are
written only where the kernel has them, and another value refuses a kernel without them, from
the plan (refusal_without_switches) and in the kernel (apply_sysctls) alike."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from experiments.inkernel.kernel_batch import apply_sysctls
from experiments.procedure import RunFailure
from experiments.stacks import KERNEL_SWITCHES, STACKS, refusal_without_switches, sysctls_for


class LocalShell:
    """A node whose shell is this machine's: its kernel has none of the switches."""

    name = "host"

    def cmd(self, script: str) -> str:
        return subprocess.run(["bash", "-c", script], capture_output=True, text=True).stdout


def test_every_stack_sets_the_same_sysctls():
    keys = {name: set(stack.sysctls()) for name, stack in STACKS.items()}
    assert len({frozenset(k) for k in keys.values()}) == 1, keys
    assert set(KERNEL_SWITCHES) <= keys["linux"]


def test_the_era_stack_sets_each_switch_its_sources_name_and_records_them_all():
    era = STACKS["freebsd-4.6"]
    values = sysctls_for("tcp-newreno", {}, "freebsd-4.6")
    assert {k: values[k] for k in KERNEL_SWITCHES} == {**KERNEL_SWITCHES, **era.switches}
    assert all(values[k] != KERNEL_SWITCHES[k] for k in era.switches)
    # KAME's SCTP of 2002-2003 never struck a fast-retransmitted chunk again, as Linux does not
    assert set(KERNEL_SWITCHES) - set(era.switches) == {"net.sctp.fast_rtx_strikes_again"}
    assert values["net.sctp.pf_enable"] == "0" and values["net.ipv4.tcp_frto"] == "0"
    assert era.route_metrics() == {"initcwnd": 1, "rto_min_ms": 1000}
    assert era.record()["kernel_switches"] == {**KERNEL_SWITCHES, **era.switches}
    assert era.record()["not_applied"]
    assert STACKS["linux"].route_metrics() == STACKS["published"].route_metrics() == {}


@pytest.mark.parametrize("backend", ["uml", "host"])
def test_a_kernel_without_the_switches_is_refused_for_the_era_stack(backend):
    refusal = refusal_without_switches("freebsd-4.6", backend)
    assert refusal and "KERNEL=uml-built" in refusal and "KERNEL=uml-virtual" in refusal
    assert "net.ipv4.tcp_prr=0" in refusal and backend in refusal
    assert refusal_without_switches("linux", backend) is None
    assert refusal_without_switches("published", backend) is None


@pytest.mark.parametrize("backend", ["uml-virtual", "uml-built"])
def test_the_projects_kernel_runs_the_era_stack(backend):
    assert refusal_without_switches("freebsd-4.6", backend) is None


@pytest.mark.skipif(Path("/proc/sys/net/ipv4/tcp_prr").exists(),
                    reason="this kernel has the switches")
def test_switches_at_linux_values_pass_a_kernel_without_them_and_others_fail():
    apply_sysctls(LocalShell(), dict(KERNEL_SWITCHES))
    with pytest.raises(RunFailure, match="tcp_prr"):
        apply_sysctls(LocalShell(), {"net.ipv4.tcp_prr": "0"})


def ns2_defaults(names: dict[str, list[str]]) -> dict[str, float]:
    """Agent defaults as ns-2 itself gives them (its tcl/lib/ns-default.tcl), `Class.var`."""
    lines = [f'puts "{cls}.{var} [{cls} set {var}]"' for cls, vars_ in names.items()
             for var in vars_]
    script = subprocess.run(["ns"], input="\n".join(lines) + "\nexit\n", capture_output=True,
                            text=True, timeout=60)
    assert script.returncode == 0, script.stderr
    return {key: float(value) for key, value in
            (line.split() for line in script.stdout.splitlines() if line.strip())}


def test_the_ns2_stack_is_the_simulators_own_defaults():
    from experiments.workloads.bulk_flows import ns2
    given = ns2_defaults({"Agent/TCP": ["windowInit_", "rtxcur_init_", "minrto_",
                                        "frto_enabled_", "singledup_"],
                          "Agent/SCTP": ["minRto_", "initialRto_", "maxRto_", "useMaxBurst_"]})
    stack = STACKS["ns-2.35"]
    assert stack.tcp_initcwnd == given["Agent/TCP.windowInit_"]
    assert stack.tcp_initial_rto_ms == 1000 * given["Agent/TCP.rtxcur_init_"]
    assert stack.tcp_rto_min_ms == 1000 * given["Agent/TCP.minrto_"]
    assert stack.tcp_frto == given["Agent/TCP.frto_enabled_"] == 0
    switches = stack.sysctls()
    # singledup_: limited transmit, which the stack leaves on, as Linux has it
    assert given["Agent/TCP.singledup_"] == 1
    assert switches["net.ipv4.tcp_limited_transmit"] == "1"
    assert stack.sctp_rto_ms == tuple(1000 * given[f"Agent/SCTP.{v}"]
                                      for v in ("minRto_", "initialRto_", "maxRto_"))
    # useMaxBurst_ 1 ends a burst and leaves cwnd: Linux's own Max.Burst
    assert given["Agent/SCTP.useMaxBurst_"] == 1
    assert switches["net.sctp.max_burst_clamps_cwnd"] == "0"
    # the fast-retransmit threshold is E3's, as the ns-2 runs set it
    assert switches["net.sctp.fast_rtx_threshold"] == str(ns2.SCTP_FAST_RTX_TRIGGER)
    assert refusal_without_switches("ns-2.35", "uml") is not None
