"""The FTP programs' limits on a data connection's opening (experiments/stacks.py,
open_limits), worked by hand from the handshake's retry schedules: every run pins the retry
counts they are computed from, and the ftp-mget order carries them to both programs."""
from __future__ import annotations

from experiments.stacks import STACKS, open_limits, retry_span_s, sysctls_for


def test_a_retry_span_doubles_from_the_initial_timer_up_to_its_ceiling():
    assert retry_span_s(1.0, 6, 120.0) == 1 + 2 + 4 + 8 + 16 + 32 + 64        # 127 s
    assert retry_span_s(3.0, 6, 120.0) == 3 + 6 + 12 + 24 + 48 + 96 + 120    # 309 s
    assert retry_span_s(3.0, 8, 60.0) == 3 + 6 + 12 + 24 + 48 + 4 * 60       # 333 s
    assert retry_span_s(2.0, 0, 60.0) == 2


def test_every_run_pins_the_retry_counts_the_limits_read():
    values = sysctls_for("tcp-newreno", {}, "published")
    assert values["net.ipv4.tcp_syn_retries"] == "6"
    assert values["net.ipv4.tcp_synack_retries"] == "5"
    assert values["net.sctp.max_init_retransmits"] == "8"


def test_tcp_limits_are_the_syn_and_syn_ack_spans():
    linux = open_limits("tcp", sysctls_for("tcp-linux", {}, "linux"), 1000)
    # the SYN retried 6 times from 1 s (127 s), the SYN-ACK 5 times (63 s): ftpd's defaults
    assert (linux.handshake_s, linux.server_s, linux.client_s) == (190, 190, 380)
    published = open_limits("tcp", sysctls_for("tcp-newreno", {}, "published"),
                            STACKS["published"].tcp_initial_rto_ms)
    # from FreeBSD's 3 s initial RTO: 309 s of SYNs, 189 s of SYN-ACKs
    assert (published.server_s, published.client_s) == (498, 996)
    assert published.record()["basis"] == {
        "initial_rto_s": 3.0, "rto_max_s": 120.0, "syn_retries": 6, "synack_retries": 5,
        "syn_span_s": 309.0, "synack_span_s": 189.0}


def test_sctp_limits_are_the_init_and_cookie_echo_spans_under_the_run_s_knobs():
    rfc = open_limits("sctp", sysctls_for("sctp", {}, "published"), 3000)
    assert (rfc.handshake_s, rfc.server_s, rfc.client_s) == (666, 666, 1332)
    short = open_limits("sctp", sysctls_for("sctp", {"rto_initial_ms": 300,
                                                     "rto_max_ms": 2000}, "linux"), 1000)
    # 0.3 + 0.6 + 1.2 + 6 x 2 s = 14.1 s, each of INIT and COOKIE ECHO
    assert abs(short.handshake_s - 28.2) < 1e-9
    assert (short.server_s, short.client_s) == (29, 58)


def test_the_client_waits_longer_than_the_server():
    for stack in STACKS.values():
        for transport in ("tcp", "sctp"):
            limits = open_limits(transport, stack.sysctls(), stack.tcp_initial_rto_ms)
            assert limits.handshake_s <= limits.server_s < limits.client_s


def test_e1_s_ftp_orders_carry_the_limits_of_their_transport_and_stack():
    from types import SimpleNamespace

    from experiments import spec
    from experiments.workloads.ftp_mget.workload import WORKLOAD

    e1 = spec.load("multistream")
    data = SimpleNamespace(root="/data", digests={})
    prepared = {"programs": {}, "data": dict.fromkeys(e1.settings.file_sizes, data)}
    seen = {}
    for point in e1.points():
        limits = WORKLOAD.order(e1, point, prepared)["open_limits"]
        seen[point.get("variant")] = (limits["ftpd_open_timeout_s"],
                                      limits["ftpc_open_timeout_s"])
    assert seen["tcp"] == seen["tcp-pipelined"] == (498, 996)      # the published stack
    assert seen["sctp-naive"] == seen["sctp-ms"] == (666, 1332)
