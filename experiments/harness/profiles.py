"""Transport profiles: how the end hosts' stacks are set for a run, as sysctls per namespace.

A TCP profile sets the hosts' TCP (the workload says which of its runs it applies to: the tcp
variant of FTP, every TCP flow of bulk-flows); SCTP runs with the kernel's SCTP defaults plus
any knob the experiment file sets. Every value applied is recorded with the run."""
from __future__ import annotations

TCP_PROFILES: dict[str, dict[str, str]] = {
    # As the studies ran: New-Reno congestion control, no SACK.
    "tcp-newreno": {"net.ipv4.tcp_congestion_control": "reno", "net.ipv4.tcp_sack": "0",
                    "net.ipv4.tcp_dsack": "0"},
    # The fairness study's hosts (E3): Reno congestion control with SACK, as ns-2's Sack1 agent.
    "tcp-sack-reno": {"net.ipv4.tcp_congestion_control": "reno", "net.ipv4.tcp_sack": "1",
                      "net.ipv4.tcp_dsack": "0"},
    # The modern Linux default: CUBIC with SACK.
    "tcp-linux": {"net.ipv4.tcp_congestion_control": "cubic", "net.ipv4.tcp_sack": "1",
                  "net.ipv4.tcp_dsack": "1"},
}

# Applied on every run, whatever the profile: no run may inherit a cached ssthresh or RTT
# from an earlier one.
COMMON_SYSCTLS = {"net.ipv4.tcp_no_metrics_save": "1"}

SCTP_PROFILE = "sctp"

# Experiment-file knob -> sysctl and accepted range.
SCTP_KNOBS: dict[str, dict] = {
    "rto_min_ms": {"sysctl": "net.sctp.rto_min", "range": (1, 60_000)},
    "rto_initial_ms": {"sysctl": "net.sctp.rto_initial", "range": (1, 60_000)},
    "rto_max_ms": {"sysctl": "net.sctp.rto_max", "range": (1, 600_000)},
    "delayed_sack_ms": {"sysctl": "net.sctp.sack_timeout", "range": (1, 500)},
    "max_burst": {"sysctl": "net.sctp.max_burst", "range": (0, 1000)},
}


def sysctls_for(profile: str, sctp_knobs: dict[str, int]) -> dict[str, str]:
    values = dict(COMMON_SYSCTLS)
    if profile in TCP_PROFILES:
        values.update(TCP_PROFILES[profile])
    for knob, value in sctp_knobs.items():
        values[SCTP_KNOBS[knob]["sysctl"]] = str(value)
    return values
