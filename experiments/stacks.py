"""Transport profiles: how the end hosts' stacks are set for a run.

A TCP profile sets the hosts' TCP congestion control and SACK as sysctls per namespace (the
workload says which of its runs it applies to: the tcp variant of FTP, every TCP flow of
bulk-flows); SCTP runs with the kernel's SCTP defaults plus any knob the experiment file sets.
A stack profile (STACKS) sets what a comparison of TCP and SCTP also depends on: the socket
buffers, hence the receive windows, and the retransmission timers, for both transports. Every
value applied is recorded with the run."""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

TCP_PROFILES: dict[str, dict[str, str]] = {
    # As the studies ran: New-Reno congestion control, no SACK.
    "tcp-newreno": {"net.ipv4.tcp_congestion_control": "reno", "net.ipv4.tcp_sack": "0",
                    "net.ipv4.tcp_dsack": "0", "net.ipv4.tcp_window_scaling": "1"},
    # The fairness study's hosts (E3): Reno congestion control with SACK, as ns-2's Sack1 agent.
    "tcp-sack-reno": {"net.ipv4.tcp_congestion_control": "reno", "net.ipv4.tcp_sack": "1",
                      "net.ipv4.tcp_dsack": "0", "net.ipv4.tcp_window_scaling": "1"},
    # TCP as the multi-socket FTP study's hosts had it (E5): Reno, no SACK, and no window
    # scaling (RFC 1323 was not yet deployed), so one connection's window stops at 64 KB
    # whatever the buffers: the cap that parallel connections work around.
    "tcp-reno-64k": {"net.ipv4.tcp_congestion_control": "reno", "net.ipv4.tcp_sack": "0",
                     "net.ipv4.tcp_dsack": "0", "net.ipv4.tcp_window_scaling": "0"},
    # The modern Linux default: CUBIC with SACK (and window scaling).
    "tcp-linux": {"net.ipv4.tcp_congestion_control": "cubic", "net.ipv4.tcp_sack": "1",
                  "net.ipv4.tcp_dsack": "1", "net.ipv4.tcp_window_scaling": "1"},
}
# Every profile sets every key any profile sets (tests/unit/test_profiles.py): a kernel runs
# the runs of several profiles one after another, and a key one profile set and the next left
# alone would carry over (a tcp-linux run after a tcp-reno-64k one ran without window
# scaling).

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
    # path failure and failover (RFC 4960 8.2, RFC 7829's potentially-failed state). The
    # ranges are Linux's (linux-source-6.1 6.1.192-3, net/sctp/sysctl.c): it refuses a
    # Path.Max.Retrans of 0 (path_max_retrans: extra1 = SYSCTL_ONE), and pf_retrans may not
    # exceed ps_retrans (0xffff unless set)
    "path_max_retrans": {"sysctl": "net.sctp.path_max_retrans", "range": (1, 100)},
    "pf_enable": {"sysctl": "net.sctp.pf_enable", "range": (0, 1)},
    "pf_retrans": {"sysctl": "net.sctp.pf_retrans", "range": (0, 100)},
    "hb_interval_ms": {"sysctl": "net.sctp.hb_interval", "range": (1, 86_400_000)},
    "association_max_retrans": {"sysctl": "net.sctp.association_max_retrans",
                                "range": (1, 100)},
}
# The failover knobs at Linux's own values, set on every run: a point of an experiment may set
# them (ftp-mget's [[matrix.sctp_settings]]), and a kernel runs the points one after another,
# so a value one point set would otherwise stay for the next. From linux-source-6.1 6.1.192-3,
# net/sctp/protocol.c, sctp_defaults_init: max_retrans_path 5, max_retrans_association 10,
# hb_interval SCTP_DEFAULT_TIMEOUT_HEARTBEAT (include/net/sctp/constants.h: 30*1000 ms),
# pf_enable 1, pf_retrans not set (0); Documentation/networking/ip-sysctl.rst says the same.
# These are today's values on every stack, `published` included, except pf_enable, which a
# stack sets itself: the studies' KAME SCTP followed RFC 2960, which has no potentially-failed
# state, and `freebsd-4.6` turns it off.
SCTP_PATH_DEFAULTS = {"net.sctp.path_max_retrans": "5", "net.sctp.pf_enable": "1",
                      "net.sctp.pf_retrans": "0", "net.sctp.hb_interval": "30000",
                      "net.sctp.association_max_retrans": "10"}


# The switches of the project's kernel (topology/kernel/timetravel/patches/
# 0003-era-switches.patch, 0004-sctp-fast-rtx-restarts-t3.patch and
# 0005-sctp-fast-rtx-strikes-again.patch), at Linux's own values:
# what Linux 6.1 does and the studies' stacks did not, which no stock sysctl turns off. A
# kernel without the patches behaves as these values say, so a run sets them where the kernel
# has them (every run: a stack that turned one off would leave it off for the next), and a
# stack that needs another value refuses a kernel without them (refusal_without_switches).
KERNEL_SWITCHES = {"net.ipv4.tcp_limited_transmit": "1", "net.ipv4.tcp_prr": "1",
                   "net.ipv4.tcp_abc": "1", "net.sctp.fast_rtx_threshold": "3",
                   "net.sctp.max_burst_clamps_cwnd": "0",
                   "net.sctp.fast_rtx_restarts_t3": "0",
                   "net.sctp.fast_rtx_strikes_again": "0"}
# The backends that boot the project's build of the kernel, which has them.
BACKENDS_WITH_SWITCHES = ("uml-virtual", "uml-built")


def sysctls_for(profile: str, sctp_knobs: dict[str, int], stack: str) -> dict[str, str]:
    """The run's sysctls: the stack's timers and switches, then the TCP profile, then the
    experiment's own SCTP knobs, which win."""
    values = dict(COMMON_SYSCTLS)
    values.update(SCTP_PATH_DEFAULTS)
    values.update(STACKS[stack].sysctls())
    if profile in TCP_PROFILES:
        values.update(TCP_PROFILES[profile])
    for knob, value in sctp_knobs.items():
        values[SCTP_KNOBS[knob]["sysctl"]] = str(value)
    return values


@dataclass(frozen=True)
class Buffers:
    """The socket buffers the programs ask for (SO_SNDBUF, SO_RCVBUF), in the BSD sense: the
    bytes of data the buffer may hold. Linux doubles an asked size to leave room for its own
    bookkeeping and advertises half of its buffer as the window, so asking N gives a receive
    window of about N on both transports. 0: the kernel's own sizing (TCP autotuning)."""

    sndbuf: int
    rcvbuf: int

    def program_options(self) -> list[str]:
        options = []
        if self.sndbuf:
            options += ["--sndbuf", str(self.sndbuf)]
        if self.rcvbuf:
            options += ["--rcvbuf", str(self.rcvbuf)]
        return options


# How often a handshake's packets are retried before the sender gives up: Linux 6.1's defaults
# (net.ipv4.tcp_syn_retries, tcp_synack_retries, net.sctp.max_init_retransmits), applied on
# every run so that the open limits below are computed from what the kernel does. Sources,
# Linux 6.1: include/net/tcp.h (TCP_SYN_RETRIES 6, TCP_SYNACK_RETRIES 5, TCP_RTO_MAX 120*HZ);
# net/sctp/protocol.c (sctp_defaults_init: max_retrans_init = 8). Every stack, `published`
# too, keeps them: FreeBSD 4.6's and KAME's retry schedules are not yet applied.
LINUX_TCP_SYN_RETRIES = 6
LINUX_TCP_SYNACK_RETRIES = 5
LINUX_SCTP_MAX_INIT_RETRANSMITS = 8
LINUX_TCP_RTO_MAX_S = 120.0   # TCP_RTO_MAX: a backed-off handshake timer stops doubling there


@dataclass(frozen=True)
class Stack:
    """Windows and timers of both transports, and the FTP programs' ways, as one era's hosts
    had them."""

    name: str
    description: str
    tcp: Buffers
    sctp: Buffers
    tcp_initial_rto_ms: int            # 1000 is Linux's own (TCP_TIMEOUT_INIT)
    tcp_rto_min_ms: int                # 200 is Linux's own (TCP_RTO_MIN)
    sctp_rto_ms: tuple[int, int, int]  # min, initial, max: applied as SCTP sysctls
    sources: tuple[str, ...]
    tcp_syn_retries: int = LINUX_TCP_SYN_RETRIES
    tcp_synack_retries: int = LINUX_TCP_SYNACK_RETRIES
    sctp_max_init_retransmits: int = LINUX_SCTP_MAX_INIT_RETRANSMITS
    # Linux 6.1's own values (include/net/tcp.h TCP_INIT_CWND; net/ipv4/tcp_ipv4.c,
    # tcp_sk_init: tcp_frto 2, tcp_early_retrans 3, tcp_recovery TCP_RACK_LOSS_DETECTION;
    # net/sctp/protocol.c: pf_enable 1)
    tcp_initcwnd: int = 10             # segments; applied per route where it is not 10
    tcp_frto: int = 2                  # F-RTO (RFC 5682)
    tcp_early_retrans: int = 3         # tail loss probes
    tcp_recovery: int = 1              # RACK loss detection
    sctp_pf_enable: int = 1            # RFC 7829's potentially-failed state
    # How many retransmissions TCP makes before it gives up on a connection, and on one its
    # program has closed: Linux 6.1's defaults (net/ipv4/tcp_ipv4.c, tcp_sk_init: tcp_retries2
    # TCP_RETR2 15; tcp_orphan_retries 0, which net/ipv4/tcp_timer.c tcp_orphan_retries()
    # reads as 8)
    tcp_retries2: int = 15
    tcp_orphan_retries: int = 0
    switches: dict[str, str] = field(default_factory=dict)   # KERNEL_SWITCHES it changes
    # The era's FTP programs where ours differ (ftp-impl/PROGRAMS.md): ftpd's 226 once
    # close() returns, not once the client acknowledged the end (--reply-on-close); data
    # connections by PORT/EPRT, the server connecting (ftpc --active; the variants with a
    # data connection per file, tcp and sctp-naive)
    ftpd_reply_on_close: bool = False
    ftp_active: bool = False
    not_applied: tuple[str, ...] = ()  # how the era's stack differs still, named
    # an ablation's step (today's stack, the era stack, the one mechanism taken from it)
    ablation: tuple[str, str, str] | None = None

    def buffers(self, transport: str) -> Buffers:
        return self.tcp if transport == "tcp" else self.sctp

    def sysctls(self) -> dict[str, str]:
        low, initial, high = self.sctp_rto_ms
        return {"net.sctp.rto_min": str(low), "net.sctp.rto_initial": str(initial),
                "net.sctp.rto_max": str(high),
                "net.sctp.max_init_retransmits": str(self.sctp_max_init_retransmits),
                "net.sctp.pf_enable": str(self.sctp_pf_enable),
                "net.ipv4.tcp_syn_retries": str(self.tcp_syn_retries),
                "net.ipv4.tcp_synack_retries": str(self.tcp_synack_retries),
                "net.ipv4.tcp_frto": str(self.tcp_frto),
                "net.ipv4.tcp_early_retrans": str(self.tcp_early_retrans),
                "net.ipv4.tcp_recovery": str(self.tcp_recovery),
                "net.ipv4.tcp_retries2": str(self.tcp_retries2),
                "net.ipv4.tcp_orphan_retries": str(self.tcp_orphan_retries),
                **KERNEL_SWITCHES, **self.switches}

    def usrsctp_sysctls(self) -> list[tuple[str, int]]:
        """The stack's SCTP timers on usrsctp: RTO.Min, RTO.Initial and RTO.Max, which usrsctp
        reads from these sysctls as Linux does from net.sctp.rto_* (usrsctp's
        usrsctplib/netinet/sctp_sysctl.h). Its buffers reach usrsctp as the programs' socket
        options, as on the kernel."""
        low, initial, high = self.sctp_rto_ms
        return [("sctp_rto_min_default", low), ("sctp_rto_initial_default", initial),
                ("sctp_rto_max_default", high)]

    def usrsctp_refusal(self) -> str | None:
        """Why this stack cannot run on usrsctp, or None: a kernel switch of SCTP's set away
        from Linux's value, or INIT retries other than the 8 that usrsctp makes
        (usrsctplib/netinet/sctp_constants.h: SCTP_DEF_MAX_INIT 8), are the kernel's and
        usrsctp has no counterpart to set."""
        switched = sorted(k for k, v in self.switches.items()
                          if k.startswith("net.sctp.") and KERNEL_SWITCHES.get(k) != v)
        if switched:
            return (f"stack {self.name!r} sets the kernel's SCTP switches {', '.join(switched)}, "
                    "which usrsctp has no counterpart for")
        if self.sctp_max_init_retransmits != LINUX_SCTP_MAX_INIT_RETRANSMITS:
            return (f"stack {self.name!r} retries an INIT {self.sctp_max_init_retransmits} "
                    "times; usrsctp's programs retry it 8 times")
        return None

    def route_metrics(self) -> dict[str, int]:
        """What the end hosts' routes carry for TCP: the initial window, and an RTO floor
        (locked, as Linux reads it from a route only so); empty when both are Linux's own."""
        if self.tcp_initcwnd == 10 and self.tcp_rto_min_ms == 200:
            return {}
        return {"initcwnd": self.tcp_initcwnd, "rto_min_ms": self.tcp_rto_min_ms}

    def record(self) -> dict[str, object]:
        return {"description": self.description,
                "tcp": {"sndbuf": self.tcp.sndbuf, "rcvbuf": self.tcp.rcvbuf,
                        "initial_rto_ms": self.tcp_initial_rto_ms,
                        "rto_min_ms": self.tcp_rto_min_ms, "initcwnd": self.tcp_initcwnd,
                        "frto": self.tcp_frto, "early_retrans": self.tcp_early_retrans,
                        "recovery": self.tcp_recovery, "retries2": self.tcp_retries2,
                        "orphan_retries": self.tcp_orphan_retries},
                "sctp": {"sndbuf": self.sctp.sndbuf, "rcvbuf": self.sctp.rcvbuf,
                         "rto_min_ms": self.sctp_rto_ms[0],
                         "rto_initial_ms": self.sctp_rto_ms[1],
                         "rto_max_ms": self.sctp_rto_ms[2], "pf_enable": self.sctp_pf_enable},
                "kernel_switches": {**KERNEL_SWITCHES, **self.switches},
                "programs": {"ftpd_reply_on_close": self.ftpd_reply_on_close,
                             "ftp_active": self.ftp_active},
                "sources": list(self.sources), "not_applied": list(self.not_applied),
                **({} if self.ablation is None else {"ablation": dict(zip(
                    ("today", "era", "mechanism"), self.ablation, strict=True))})}


# What freebsd-4.6 leaves out and freebsd-4.6-kame-2004 applies.
KAME_2004_RECOVERY = (
    "E1's KAME patch levels (24, 25) are not dated. KAME's sctp_output.c of 2004/04/09 "
    "(rev. 1.40) returns a fast-retransmitted chunk to SENT, so that it can be struck again, "
    "under a rule read only in sctp_indata.c of 2005 (rev. 1.36: a SACK that newly "
    "acknowledges the last TSN sent at the fast retransmission, or later); a 2004 stack would "
    "be closer to fast_rtx_strikes_again 1 than to the 2002-2003 code this stack follows "
    "(stack freebsd-4.6-kame-2004)")
RFC2960_SCTP_RTO_MS = (1000, 3000, 60_000)   # RTO.Min, RTO.Initial, RTO.Max (RFC 2960 14)
# What Linux SCTP can be asked without raising net.core.rmem_max, a host-wide setting.
LINUX_RMEM_MAX = 212_992

STACKS: dict[str, Stack] = {
    # The FTP studies (E1, E2) ran their programs on FreeBSD hosts with the KAME SCTP stack.
    "published": Stack(
        "published",
        "FreeBSD TCP and KAME SCTP as the FTP studies ran them: TCP's 32 KB send and "
        "64 KB receive buffers (no autotuning), a 3 s initial RTO; SCTP's large KAME buffers "
        "(about 228 KB there; 208 KB here, Linux's ceiling for an unprivileged request) and "
        "RFC 2960's timers",
        tcp=Buffers(sndbuf=32_768, rcvbuf=65_536),
        sctp=Buffers(sndbuf=LINUX_RMEM_MAX, rcvbuf=LINUX_RMEM_MAX),
        tcp_initial_rto_ms=3000, tcp_rto_min_ms=200,
        sctp_rto_ms=RFC2960_SCTP_RTO_MS,
        sources=(
            "FreeBSD sys/netinet/tcp_usrreq.c: tcp_sendspace = 1024*32, "
            "tcp_recvspace = 1024*64 (net.inet.tcp.sendspace, recvspace)",
            "FreeBSD sys/netinet/tcp_timer.h: TCPTV_RTOBASE 3*hz (the initial RTO); "
            "TCPTV_MIN hz/33 plus TCPTV_CPU_VAR, 200 ms of slop, which replaced the earlier 1 s "
            "minimum: about Linux's 200 ms floor, which is kept",
            "KAME sys/netinet/sctp_usrreq.c (rev. 1.50): sctp_init() sets sctp_sendspace and "
            "sctp_recvspace to SB_MAX scaled for mbuf overhead, about 228 KB",
            "RFC 2960 section 14: RTO.Initial 3 s, RTO.Min 1 s, RTO.Max 60 s",
        )),
    # Today's Linux 6.1 as installed: the kernel sizes TCP's buffers itself.
    "linux": Stack(
        "linux",
        "Linux 6.1's defaults: TCP buffers autotuned (tcp_rmem 4096 131072 6291456, window "
        "scaling), a 1 s initial RTO and a 200 ms floor; SCTP's buffers from "
        "net.core.rmem_default (a_rwnd 106496), RFC 4960's timers",
        tcp=Buffers(0, 0), sctp=Buffers(0, 0),
        tcp_initial_rto_ms=1000, tcp_rto_min_ms=200,
        sctp_rto_ms=RFC2960_SCTP_RTO_MS,
        sources=("Documentation/networking/ip-sysctl.rst (tcp_rmem, tcp_wmem, rto_min, "
                 "rto_initial, rto_max)", "include/net/tcp.h: TCP_TIMEOUT_INIT, TCP_RTO_MIN")),
    # The FTP studies' hosts (E1, E2) as far as Linux and the project's kernel can make them:
    # FreeBSD 4.6-RELEASE's TCP and KAME's SCTP, from the era's sources. Needs the switches.
    "freebsd-4.6": Stack(
        "freebsd-4.6",
        "FreeBSD 4.6-RELEASE TCP and KAME SCTP (the E1 and E2 hosts): TCP's 32 KB send and "
        "56 KB receive buffers, a 1-segment initial window, a 3 s initial RTO and a 1 s floor, "
        "New-Reno recovery without PRR, limited transmit or byte counting, no F-RTO; SCTP "
        "with RFC 2960's timers, 4 missing reports for a fast retransmit, T3-rtx restarted "
        "when the first outstanding chunk is fast-retransmitted, Max.Burst lowering "
        "cwnd for good, no potentially-failed state; FreeBSD's ftpd (226 once close() "
        "returns) and data connections by PORT",
        tcp=Buffers(sndbuf=32_768, rcvbuf=57_344),
        sctp=Buffers(sndbuf=LINUX_RMEM_MAX, rcvbuf=LINUX_RMEM_MAX),
        tcp_initial_rto_ms=3000, tcp_rto_min_ms=1000,
        sctp_rto_ms=RFC2960_SCTP_RTO_MS,
        tcp_initcwnd=1, tcp_frto=0, tcp_early_retrans=0, tcp_recovery=0, sctp_pf_enable=0,
        tcp_retries2=12, tcp_orphan_retries=12,
        ftpd_reply_on_close=True, ftp_active=True,
        switches={"net.ipv4.tcp_limited_transmit": "0", "net.ipv4.tcp_prr": "0",
                  "net.ipv4.tcp_abc": "0", "net.sctp.fast_rtx_threshold": "4",
                  "net.sctp.max_burst_clamps_cwnd": "1",
                  "net.sctp.fast_rtx_restarts_t3": "1"},
        sources=(
            "The Netsem TCP specification's host parameters, taken from FreeBSD 4.6-RELEASE "
            "(rems-project/netsem, specification/TCP1_paramsScript.sml rev. 1.2): TCP "
            "SO_SNDBUF 32*1024 and SO_RCVBUF 57344 (from code); tcp_timer.h TCPTV_RTOBASE 3 s "
            "(initial RTO), TCPTV_MIN 1 s (RTO floor), TCPTV_DELACK 100 ms; tcp_output.c "
            "ss_fltsz 1 (net.inet.tcp.slowstart_flightsize; 4 only for a peer on a local "
            "network, and the testbed's peers are behind a router); tcp_do_newreno on",
            "E1 study 5.2.1: FreeBSD's New-Reno lacked limited transmit (RFC 3042), "
            "appropriate byte counting (RFC 3465) and SACK: tcp_limited_transmit 0, tcp_abc 0, "
            "SACK off with the tcp-newreno profile",
            "Later than the stack: F-RTO (RFC 4138, 2005), PRR (RFC 6937, 2013), tail loss "
            "probes and RACK (RFC 8985): tcp_frto 0, tcp_prr 0 (RFC 6582 recovery), "
            "tcp_early_retrans 0, tcp_recovery 0",
            "RFC 2960 7.2.4: a fast retransmit after 3 further miss indications, 4 reports in "
            "all, as the E1 and E4 studies state of KAME: fast_rtx_threshold 4",
            "RFC 2960 7.2.4 step 4: \"Restart T3-rtx timer only if the last SACK "
            "acknowledged the lowest outstanding TSN number sent to that address, or the "
            "endpoint is retransmitting the first outstanding DATA chunk sent to that "
            "address\" (the specification of the era's SCTP, October 2000). KAME's "
            "sys/netinet/sctp_output.c does so in rev. 1.18 (2003/02/07) and rev. 1.40 "
            "(2004/04/09), sctp_chunk_retransmission: when a fast retransmission sends the "
            "first chunk of the sent queue and T3 was running, sctp_timer_stop and "
            "sctp_timer_start (\"we want to give some more time to get a SACK back without a "
            "t3-expiring\"; sctputil.c rev. 1.13's sctp_timer_start leaves a running timer "
            "unchanged), as FreeBSD's SCTP still does (usrsctp at commit 0057a6d6) and "
            "ns-2.35's agent (sctp/sctp.cc, lines 3028-3045): fast_rtx_restarts_t3 1",
            "RFC 2960 6.1 rule D, as the E1 study (4.2) states KAME applied it: Max.Burst "
            "lowers cwnd to flightsize + 4 MTU for good: max_burst_clamps_cwnd 1",
            "KAME sys/netinet/sctp_output.c rev. 1.18 (2003/02/07, four months after E2's "
            "snapshot of 14 Oct 2002), sctp_chunk_retransmission: a fast-retransmitted "
            "chunk's state is bumped above SCTP_DATAGRAM_RESEND \"so we don't get picked up "
            "again until a t3-rxt goes off\", and sctp_indata.c rev. 1.13 (2003/01/21) strikes "
            "only chunks below it; T3 resets it (sctp_timer.c rev. 1.11, 2002/10/09): "
            "fast_rtx_strikes_again 0, Linux's own",
            "RFC 2960 has no potentially-failed state (RFC 7829, 2016): pf_enable 0; its "
            "section 14: RTO.Initial 3 s, RTO.Min 1 s, RTO.Max 60 s",
            "KAME sys/netinet/sctp_usrreq.c (rev. 1.50): SCTP buffers of about 228 KB",
            "FreeBSD 4.x's ftpd (libexec/ftpd/ftpd.c, \"Version 6.00LS\"): send_data() "
            "replies 226 once sendfile() or write() has handed the last byte to the socket, "
            "and retrieve() then closes it without lingering: ftpd --reply-on-close",
            "STUDIES.md, E1 and E2's hosts: FreeBSD 4.6's FTP client and server, data "
            "connections by PORT (active): ftpc --active",
            "sys/netinet/tcp_timer.h TCP_MAXRXTSHIFT 12: 4.6-RELEASE shipped rev. 1.18 "
            "(RELENG_4's, 1999/12/29; rev. 1.18.2.1 is of 2002/08/16); read here in copies "
            "of 4.4BSD-Lite2's file and of rev. 1.18 (Apple's xnu, which keeps its $FreeBSD "
            "line), both 12, not in 4.6's own tree: tcp_timer_rexmt() drops a "
            "connection after 12 retransmissions, whether or not its program has closed it: "
            "tcp_retries2 12, tcp_orphan_retries 12 (Linux gives an orphan 8, and after "
            "ftpd's close without lingering gave up on a file's last segments at 10% loss)",
        ),
        not_applied=(
            "TCP's delayed ack: FreeBSD's is a fixed 100 ms timer (TCPTV_DELACK), Linux's "
            "adapts between 40 and 200 ms",
            "TCP's RTO floor: FreeBSD bounds the RTO itself (TCPT_RANGESET with t_rttmin), "
            "Linux adds its floor to the smoothed RTT (RTO >= srtt + rto_min)",
            "SCTP's buffers: 208 KB (Linux's ceiling for an unprivileged request) against "
            "KAME's 228 KB",
            "the handshakes' retry schedules: Linux's (tcp_syn_retries, max_init_retransmits)",
            "FreeBSD's ftpd asks a 64 KB send buffer of the data sockets it connects "
            "(getdatasock: SO_SNDBUF 65536); ours keep the stack's 32 KB",
            "TCP's backoff ceiling: FreeBSD's TCPTV_REXMTMAX (64 s, tcp_timer.h), Linux's "
            "TCP_RTO_MAX (120 s)",
            KAME_2004_RECOVERY,
        )),
    # E3's hosts were ns-2's agents (ns-2.1 with the University of Delaware's SCTP): the
    # kernel's TCP and SCTP set as ns-2.35's agents are, where Linux and the project's kernel
    # can be (ns-2.1's own defaults are not known: analysis/findings/2026-12-e3-ns2.md). The
    # agents' settings that E3 states (SACK, no delayed acks, 64 KB windows, payloads) are the
    # experiment's, not the stack's. Needs the switches.
    "ns-2.35": Stack(
        "ns-2.35",
        "Linux's TCP and SCTP as ns-2.35's Agent/TCP/Sack1 and Agent/SCTP (E3's simulator): "
        "TCP with a 2-segment initial window, a 3 s initial RTO and a 200 ms floor, recovery "
        "by Sack1's pipe without PRR, one segment per ack in slow start, limited transmit, no "
        "F-RTO, tail-loss probes or RACK; SCTP with RFC 2960's timers, 4 missing reports for "
        "a fast retransmit (as E3 states), T3-rtx restarted when the first outstanding chunk "
        "is fast-retransmitted, Max.Burst ending a burst without lowering cwnd",
        tcp=Buffers(0, 0), sctp=Buffers(0, 0),
        tcp_initial_rto_ms=3000, tcp_rto_min_ms=200,
        sctp_rto_ms=RFC2960_SCTP_RTO_MS,
        tcp_initcwnd=2, tcp_frto=0, tcp_early_retrans=0, tcp_recovery=0,
        switches={"net.ipv4.tcp_prr": "0", "net.ipv4.tcp_abc": "0",
                  "net.sctp.fast_rtx_threshold": "4", "net.sctp.fast_rtx_restarts_t3": "1"},
        sources=(
            "ns-2.35 (Debian ns2 2.35+dfsg-5), the agents' defaults as the simulator itself "
            "gives them (`Agent/TCP set windowInit_` and so on, from tcl/lib/ns-default.tcl): "
            "Agent/TCP windowInit_ 2 (initcwnd 2), rtxcur_init_ 3.0 (initial RTO 3 s), "
            "minrto_ 0.2 (the floor, Linux's own), frto_enabled_ 0 and sfrto_enabled_ 0 "
            "(tcp_frto 0), singledup_ 1 (limited transmit, Linux's own); Agent/SCTP "
            "initialRto_ 3.0, minRto_ 1.0, maxRto_ 60.0 (RFC 2960's timers)",
            "ns-2.35 tcp/tcp-sack1.cc (read in hbatmit/ns2.35 at commit f8f8c6f3, lines "
            "327-345 and 435), Sack1TcpAgent: on the third duplicate ack dupack_action() "
            "halves cwnd and, with the defaults oldCode_ and LimTransmitFix_ false, sets pipe_ "
            "to the flight less the three duplicate acks; send_much() sends while "
            "pipe_ < cwnd_, and each "
            "further ack takes one off pipe_: new data once the flight is under the halved "
            "window, without PRR's proportional sending (tcp_prr 0, RFC 6582 recovery); no "
            "tail-loss probe or RACK in the agent (tcp_early_retrans 0, tcp_recovery 0)",
            "ns-2.35 tcp/tcp.cc (hbatmit/ns2.35 f8f8c6f3, line 1130) TcpAgent::opencwnd(): "
            "slow start adds one segment per ack "
            "that acknowledges new data, however much it covers: tcp_abc 0",
            "E3 (STUDIES.md) states four missing reports for SCTP's fast retransmit, as "
            "bulk_flows/ns2.py sets Agent/SCTP fastRtxTrigger_ 4: fast_rtx_threshold 4",
            "ns-2.35 sctp/sctp.cc (hbatmit/ns2.35 f8f8c6f3), lines 3028-3045: the "
            "retransmission of the earliest "
            "outstanding chunk restarts T3-rtx (RFC 2960 7.2.4 step 4): "
            "fast_rtx_restarts_t3 1",
            "ns-2.35 sctp/sctp.cc (hbatmit/ns2.35 f8f8c6f3), ProcessGapAckBlocks(), lines "
            "4605-4618: a chunk fast-retransmitted is marked eIneligibleForFastRtx, which "
            "nothing clears again, T3 included (TimeoutRtx(), lines 2735-2760): "
            "fast_rtx_strikes_again 0, Linux's own (Agent/SCTP/MultipleFastRtx, "
            "sctp-multipleFastRtx.cc, would strike it again; bulk_flows/ns2.py runs "
            "Agent/SCTP)",
            "ns-2.35 sctp/sctp.cc (hbatmit/ns2.35 f8f8c6f3), RtxMarkedChunks(), line 3119: "
            "with useMaxBurst_ 1 (the default) "
            "Max.Burst ends the sending loop and leaves cwnd as it is: "
            "max_burst_clamps_cwnd 0, Linux's own",
        ),
        not_applied=(
            "SCTP's initial window: ns-2.35's initialCwnd_ 2 (MTUs), Linux's "
            "min(4 MTU, max(2 MTU, 4380 bytes)) (RFC 4960 7.2.1), which no setting changes",
            "TCP's RTO: ns-2.35's maxrto_ 60 s and its 10 ms tcpTick_ against Linux's 120 s "
            "ceiling and its jiffies; TCP timestamps: off in ns-2.35 (timestamps_ false), on "
            "in Linux (12 more header bytes a segment)",
            "TCP's initial RTO: set, but bulk-flows does not apply it (one handshake a flow)",
        )),
}
# The FTP studies' hosts with KAME's SCTP as its 2004 code recovered from a lost fast
# retransmission: E1's KAME patch levels are not dated, and the 2002-2003 code freebsd-4.6
# follows and the 2004 code differ in that alone of what the switches can express.
STACKS["freebsd-4.6-kame-2004"] = replace(
    STACKS["freebsd-4.6"], name="freebsd-4.6-kame-2004",
    description=STACKS["freebsd-4.6"].description + "; and KAME's SCTP of 2004, which "
    "fast-retransmits a chunk again when its fast retransmission is lost",
    switches={**STACKS["freebsd-4.6"].switches, "net.sctp.fast_rtx_strikes_again": "1"},
    sources=STACKS["freebsd-4.6"].sources + (
        "KAME sys/netinet/sctp_output.c rev. 1.40 (2004/04/09), sctp_chunk_retransmission: "
        "every retransmitted chunk returns to SCTP_DATAGRAM_SENT, where rev. 1.18 kept a "
        "fast-retransmitted one above SCTP_DATAGRAM_RESEND until T3, so that later SACKs "
        "strike it again; sctp_input.c rev. 1.25 (2004/05/26) marks a chunk's "
        "fast_retran_tsn as \"what sequences can cause a new FR\"; the rule, read in "
        "sctp_indata.c rev. 1.36 (2005/03/06, NetBSD's import), sctp_strike_gap_ack_chunks: "
        "a SACK whose biggest newly acknowledged TSN reaches fast_retran_tsn strikes it, or "
        "any SACK that moves the cumulative ack in fast recovery: "
        "fast_rtx_strikes_again 1",),
    not_applied=tuple(n for n in STACKS["freebsd-4.6"].not_applied
                      if n != KAME_2004_RECOVERY) + (
        "KAME's fast_retran_tsn in 2005 (sctp_indata.c rev. 1.36) is the last TSN sent at "
        "the fast retransmission (sending_seq - 1), one before the next TSN the switch "
        "compares with (as FreeBSD's SCTP does today); no sctp_indata.c of 2004 was read",))

DEFAULT_STACK = "linux"


# -- the ablation: today's stack with one mechanism of an era stack at a time ----------------------
@dataclass(frozen=True)
class Mechanism:
    """One thing an era stack did otherwise than today's: the Stack fields and kernel switches
    that make it, taken together because they are one mechanism (F-RTO, tail loss probes and
    RACK are all loss detection the era had not; the initial RTO and its floor, TCP's timer)."""

    name: str
    description: str
    fields: tuple[str, ...] = ()
    switches: tuple[str, ...] = ()


# Every field and switch in which a stack can differ from another is in one mechanism
# (tests/unit/test_ablation_stacks.py), so an ablation leaves nothing of the era stack out.
MECHANISMS = (
    Mechanism("tcp-buffers", "TCP socket buffers (no autotuning)", ("tcp",)),
    Mechanism("tcp-timers", "TCP initial RTO and RTO floor",
              ("tcp_initial_rto_ms", "tcp_rto_min_ms")),
    Mechanism("initcwnd", "TCP initial window", ("tcp_initcwnd",)),
    Mechanism("loss-detection", "TCP loss detection without F-RTO, tail loss probes or RACK",
              ("tcp_frto", "tcp_early_retrans", "tcp_recovery")),
    Mechanism("limited-transmit", "TCP without limited transmit",
              switches=("net.ipv4.tcp_limited_transmit",)),
    Mechanism("prr", "TCP recovery without PRR (RFC 6582)", switches=("net.ipv4.tcp_prr",)),
    Mechanism("abc", "TCP without byte counting", switches=("net.ipv4.tcp_abc",)),
    Mechanism("tcp-give-up", "TCP retransmissions before it gives up, a closed socket's too",
              ("tcp_retries2", "tcp_orphan_retries")),
    Mechanism("handshake-retries", "TCP and SCTP handshake retries",
              ("tcp_syn_retries", "tcp_synack_retries", "sctp_max_init_retransmits")),
    Mechanism("sctp-buffers", "SCTP socket buffers", ("sctp",)),
    Mechanism("sctp-timers", "SCTP RTO.Min, RTO.Initial, RTO.Max", ("sctp_rto_ms",)),
    Mechanism("sctp-fast-rtx", "SCTP fast-retransmit threshold",
              switches=("net.sctp.fast_rtx_threshold",)),
    Mechanism("sctp-max-burst", "SCTP Max.Burst lowering cwnd for good",
              switches=("net.sctp.max_burst_clamps_cwnd",)),
    Mechanism("sctp-t3-restart",
              "SCTP restarting T3-rtx on the fast retransmission of the first outstanding chunk",
              switches=("net.sctp.fast_rtx_restarts_t3",)),
    Mechanism("sctp-strikes-again",
              "SCTP fast-retransmitting a chunk again when its fast retransmission is lost",
              switches=("net.sctp.fast_rtx_strikes_again",)),
    Mechanism("sctp-pf", "SCTP without the potentially-failed state", ("sctp_pf_enable",)),
    Mechanism("ftpd-reply-on-close", "ftpd replying 226 once close() returns",
              ("ftpd_reply_on_close",)),
    Mechanism("ftp-active", "data connections by PORT (the server connects)", ("ftp_active",)),
)
# What names a stack or records where it came from, not how it behaves.
NOT_MECHANISMS = ("name", "description", "sources", "switches", "not_applied", "ablation")


def _switch(stack: Stack, key: str) -> str:
    return stack.switches.get(key, KERNEL_SWITCHES[key])


def mechanisms_between(today: Stack, era: Stack) -> list[Mechanism]:
    """The mechanisms in which `era` differs from `today`, in MECHANISMS' order."""
    return [m for m in MECHANISMS
            if any(getattr(today, f) != getattr(era, f) for f in m.fields)
            or any(_switch(today, k) != _switch(era, k) for k in m.switches)]


def ablation_name(today: str, era: str, mechanism: str) -> str:
    return f"{today}+{era}-{mechanism}"


def with_mechanism(today: Stack, era: Stack, mechanism: Mechanism) -> Stack:
    """`today` with `era`'s values for one mechanism, and nothing else of it."""
    switches = {**today.switches, **{k: _switch(era, k) for k in mechanism.switches}}
    return replace(
        today, name=ablation_name(today.name, era.name, mechanism.name),
        description=f"{today.name} with {era.name}'s {mechanism.description}",
        switches={k: v for k, v in switches.items() if v != KERNEL_SWITCHES[k]},
        sources=era.sources, not_applied=(), ablation=(today.name, era.name, mechanism.name),
        **{f: getattr(era, f) for f in mechanism.fields})


# The ablations the testbed runs: each era stack from today's.
ABLATIONS = (("linux", "freebsd-4.6"), ("linux", "ns-2.35"))
ABLATION_SEPARATOR = ".."
for _today, _era in ABLATIONS:
    for _mechanism in mechanisms_between(STACKS[_today], STACKS[_era]):
        _step = with_mechanism(STACKS[_today], STACKS[_era], _mechanism)
        STACKS[_step.name] = _step


def ablation_steps(today: str, era: str) -> list[str]:
    """The stacks of an ablation, in order: today's, one per mechanism, the era's."""
    return [today, *(ablation_name(today, era, m.name)
                     for m in mechanisms_between(STACKS[today], STACKS[era])), era]


def expand_stacks(names: list[str]) -> list[str]:
    """An experiment file's stacks, where "TODAY..ERA" stands for that ablation's steps
    (ablation_steps); each stack once, in the order first named."""
    out: list[str] = []
    for name in names:
        today, sep, era = name.partition(ABLATION_SEPARATOR)
        steps = ablation_steps(today, era) if sep and (today, era) in ABLATIONS else [name]
        out += [s for s in steps if s not in out]
    return out


def refusal_without_switches(stack: str, backend: str) -> str | None:
    """Why `backend` cannot run `stack`, when the stack needs switches of the project's
    kernel that this backend's kernel lacks; None when it can."""
    needed = STACKS[stack].switches
    if not needed or backend in BACKENDS_WITH_SWITCHES:
        return None
    settings = ", ".join(f"{k}={v}" for k, v in sorted(needed.items()))
    return (f"stack {stack} needs switches that only the project's kernel build has "
            f"({settings}; topology/kernel/timetravel/patches/), and "
            f"backend {backend} boots another kernel: run with KERNEL=uml-built (real time) "
            "or KERNEL=uml-virtual (virtual time)")


# -- how long a data connection may take to open ---------------------------------------------------
def retry_span_s(initial_s: float, retries: int, ceiling_s: float) -> float:
    """How long a handshake packet is retried before its sender gives up: its first timer and
    one more per retransmission, each twice the one before and at most `ceiling_s` (Linux's
    SYN and SYN-ACK timers; SCTP's T1-init and T1-cookie)."""
    return sum(min(initial_s * 2 ** i, ceiling_s) for i in range(retries + 1))


@dataclass(frozen=True)
class OpenLimits:
    """The FTP programs' limits on a data connection's opening (their --open-timeout), for one
    transport under one run's settings.

    handshake_s bounds every handshake the stack lets succeed. TCP: the client's SYN is
    retried until the SYN span (tcp_syn_retries timers from the initial RTO), and the half-open
    end its last SYN makes at the server lives the SYN-ACK span (tcp_synack_retries timers): no
    ACK completes a handshake later than their sum. SCTP: the INIT, then the COOKIE ECHO, each
    retried max_init_retransmits times from rto_initial, at most rto_max each. ftpd waits
    server_s (handshake_s, rounded up) for the connection after the transfer command, then
    answers 425; ftpc waits client_s (twice that) for the command's 1xx, so that ftpd's 425
    comes first however slow the control connection is within a retransmission schedule as
    long, and retries on a new data connection after either."""

    transport: str
    handshake_s: float
    server_s: int
    client_s: int
    basis: dict[str, float | int]

    def record(self) -> dict[str, object]:
        return {"transport": self.transport, "handshake_s": round(self.handshake_s, 3),
                "ftpd_open_timeout_s": self.server_s, "ftpc_open_timeout_s": self.client_s,
                "basis": dict(self.basis)}


def open_limits(transport: str, sysctls: dict[str, str], tcp_initial_rto_ms: int
                ) -> OpenLimits:
    """The open limits from a run's sysctls (sysctls_for) and TCP's initial RTO (the stack's,
    applied through a sock_ops program where it is not Linux's 1 s)."""
    if transport == "tcp":
        initial = tcp_initial_rto_ms / 1000
        syn_retries = int(sysctls.get("net.ipv4.tcp_syn_retries", LINUX_TCP_SYN_RETRIES))
        synack_retries = int(sysctls.get("net.ipv4.tcp_synack_retries",
                                         LINUX_TCP_SYNACK_RETRIES))
        syn = retry_span_s(initial, syn_retries, LINUX_TCP_RTO_MAX_S)
        synack = retry_span_s(initial, synack_retries, LINUX_TCP_RTO_MAX_S)
        basis: dict[str, float | int] = {
            "initial_rto_s": initial, "rto_max_s": LINUX_TCP_RTO_MAX_S,
            "syn_retries": syn_retries, "synack_retries": synack_retries,
            "syn_span_s": syn, "synack_span_s": synack}
        handshake = syn + synack
    else:
        initial = int(sysctls["net.sctp.rto_initial"]) / 1000
        ceiling = int(sysctls["net.sctp.rto_max"]) / 1000
        retries = int(sysctls.get("net.sctp.max_init_retransmits",
                                  LINUX_SCTP_MAX_INIT_RETRANSMITS))
        span = retry_span_s(initial, retries, ceiling)
        basis = {"rto_initial_s": initial, "rto_max_s": ceiling,
                 "max_init_retransmits": retries, "init_span_s": span,
                 "cookie_echo_span_s": span}
        handshake = 2 * span
    server = math.ceil(handshake)
    return OpenLimits(transport, handshake, server, 2 * server, basis)
