"""bulkflow on a second SCTP stack: `--sctp-stack usrsctp` (FreeBSD's SCTP in user space, over
UDP encapsulation; ftp-impl/common/usx.h). On the host, usrsctp to usrsctp over 127.0.0.1
(the host's kernel has no SCTP, usrsctp needs none), in every build, ASan's included; inside
the pinned kernel (the UBSan build), usrsctp against the kernel's SCTP both ways and against
itself across veths. Judged from the events of both ends and the capture: every byte the
sender wrote arrives and is acknowledged, each end records its stack and its UDP ports, and
every SCTP packet travels inside UDP with no ABORT."""
from __future__ import annotations

from pathlib import Path

import pytest

from experiments.workloads.base import USRSCTP_SYSCTLS
from tests.bulkflow.bulkhelp import (
    SANITIZER_MARKS,
    Receiver,
    events,
    free_udp_port,
    one,
    run,
    tshark,
)
from tests.ftp.kernel import run_script_in_kernel

JOB = Path(__file__).with_name("inside_usrsctp_bulkflow.sh")
FLOWS = {  # name: (receiver's stack, sender's stack)
    "usrsctp-to-kernel": ("kernel", "usrsctp"),
    "kernel-to-usrsctp": ("usrsctp", "kernel"),
    "usrsctp-to-usrsctp": ("usrsctp", "usrsctp"),
}


@pytest.mark.parametrize("args, message", [
    (["send", "--proto", "tcp", "--to", "127.0.0.1:9", "--duration", "1", "--sctp-stack",
      "usrsctp"], "usrsctp is an SCTP stack"),
    (["recv", "--proto", "sctp", "--listen", "127.0.0.1:0", "--sctp-stack", "bsd"],
     "--sctp-stack: need kernel or usrsctp"),
    (["recv", "--proto", "sctp", "--listen", "127.0.0.1:0", "--sctp-udp-port", "9900"],
     "are usrsctp's (--sctp-stack usrsctp)"),
    (["send", "--proto", "sctp", "--to", "127.0.0.1:9", "--duration", "1", "--sctp-stack",
      "usrsctp", "--sctp-peer-udp-port", "0"], "--sctp-peer-udp-port: need a whole number"),
    (["recv", "--proto", "sctp", "--listen", "127.0.0.1:0", "--sctp-stack", "usrsctp",
      "--usrsctp-sysctl", "sctp_cwnd=3"], "no usrsctp sysctl sctp_cwnd here"),
    (["recv", "--proto", "sctp", "--listen", "127.0.0.1:0", "--sctp-stack", "usrsctp",
      "--usrsctp-sysctl", "sctp_initial_cwnd"], "need NAME=VALUE"),
    (["recv", "--proto", "sctp", "--listen", "127.0.0.1:0", "--sctp-stack", "usrsctp",
      "--usrsctp-sysctl", "sctp_initial_cwnd=-1"], "VALUE a whole number"),
    (["recv", "--proto", "sctp", "--listen", "127.0.0.1:0", "--usrsctp-sysctl",
      "sctp_initial_cwnd=4"], "are usrsctp's (--sctp-stack usrsctp)"),
])
def test_a_wrong_stack_option_is_a_usage_error(bindir, args, message):
    r = run(bindir, *args)
    assert r.status == 2 and message in r.stderr, r.stderr


def test_usrsctp_to_usrsctp_on_the_host_counts_every_byte_alike(bindir):
    recv_udp, send_udp = free_udp_port(), free_udp_port()
    receiver = Receiver(bindir, "--proto", "sctp", "--sctp-stack", "usrsctp", "--sctp-udp-port",
                        recv_udp, "--listen", "127.0.0.1:0", "--accept-timeout", "20")
    try:
        assert receiver.ready["stack"] == "usrsctp" and receiver.ready["udp_port"] == recv_udp
        sent = run(bindir, "send", "--proto", "sctp", "--sctp-stack", "usrsctp",
                   "--sctp-udp-port", send_udp, "--sctp-peer-udp-port", recv_udp,
                   "--to", f"127.0.0.1:{receiver.port}", "--duration", "1")
        status, got, _ = receiver.finish()
    finally:
        receiver.kill()
    assert sent.status == 0 and status == 0, (sent.stderr, got[-2:])
    connected = one(sent.events, "connected")
    assert (connected["stack"], connected["udp_port"], connected["peer_udp_port"]) == \
        ("usrsctp", send_udp, recv_udp)
    assert connected["streams_out"] == 1 and connected["maxseg"] > 0
    end = one(sent.events, "end")
    assert end["delivered_confirmed"] is True and end["bytes"] > 0
    assert one(got, "end")["bytes"] == end["bytes"]
    assert one(got, "accepted")["stack"] == "usrsctp"
    # a sample reads usrsctp's SCTP_STATUS: an established association with a window
    sample = [e for e in sent.events if e["event"] == "sample"][0]
    assert sample["state"] == 4 and sample["cwnd"] > 0 and sample["rto_ms"] > 0


def test_usrsctp_s_sysctls_are_set_at_both_ends_and_every_one_is_recorded(bindir):
    """The table of settable sysctls is the one experiment files are checked against
    (USRSCTP_SYSCTLS); both ends record all of them as usrsctp holds them, and the path MTU
    read from the kernel (loopback's)."""
    recv_udp, send_udp = free_udp_port(), free_udp_port()
    sysctls = ["--usrsctp-sysctl", "sctp_use_cwnd_based_maxburst=0",
               "--usrsctp-sysctl=sctp_max_burst_default=8"]
    receiver = Receiver(bindir, "--proto", "sctp", "--sctp-stack", "usrsctp", "--sctp-udp-port",
                        recv_udp, "--listen", "127.0.0.1:0", "--accept-timeout", "20", *sysctls)
    try:
        sent = run(bindir, "send", "--proto", "sctp", "--sctp-stack", "usrsctp",
                   "--sctp-udp-port", send_udp, "--sctp-peer-udp-port", recv_udp,
                   "--to", f"127.0.0.1:{receiver.port}", "--duration", "1", *sysctls)
        status, got, _ = receiver.finish()
    finally:
        receiver.kill()
    assert sent.status == 0 and status == 0, (sent.stderr, got[-2:])
    for event in (receiver.ready, one(got, "accepted"), one(sent.events, "connected")):
        held = dict(item.split("=") for item in event["usrsctp_sysctls"])
        assert tuple(held) == USRSCTP_SYSCTLS
        assert (held["sctp_use_cwnd_based_maxburst"], held["sctp_max_burst_default"]) == \
            ("0", "8")
        assert held["sctp_fr_max_burst_default"] == "4"   # usrsctp's own, untouched
        # loopback's: its interface's for the listener, the route's (IP's 65535) for a connect
        assert event["path_mtu"] in (65535, 65536)
    assert one(got, "end")["bytes"] == one(sent.events, "end")["bytes"] > 0


def test_a_sysctl_usrsctp_refuses_fails_the_program_with_its_name(bindir):
    r = run(bindir, "recv", "--proto", "sctp", "--sctp-stack", "usrsctp", "--sctp-udp-port",
            free_udp_port(), "--listen", "127.0.0.1:0", "--accept-timeout", "5",
            "--usrsctp-sysctl", "sctp_use_cwnd_based_maxburst=2")
    assert r.status != 0
    assert "usrsctp refused --usrsctp-sysctl sctp_use_cwnd_based_maxburst" in r.stderr


@pytest.fixture(scope="module")
def flows(built, tmp_path_factory) -> Path:
    return run_script_in_kernel(JOB, tmp_path_factory.mktemp("usrsctp-bulkflow"))


@pytest.mark.kernel
@pytest.mark.parametrize("name", FLOWS)
def test_every_byte_arrives_between_the_two_stacks(flows, name):
    recv_stack, send_stack = FLOWS[name]
    for end in ("send", "recv"):
        err = (flows / f"{name}.{end}.err").read_text()
        assert (flows / f"{name}.{end}.rc").read_text().strip() == "0", err
        assert not any(m in err for m in SANITIZER_MARKS), err
    sent, got = (events((flows / f"{name}.{end}").read_text()) for end in ("send", "recv"))
    assert one(sent, "connected")["stack"] == send_stack
    assert one(got, "accepted")["stack"] == recv_stack
    end = one(sent, "end")
    assert end["delivered_confirmed"] is True and end["bytes"] > 1_000_000
    assert one(got, "end")["bytes"] == end["bytes"]


@pytest.mark.kernel
@pytest.mark.parametrize("pcap", ["kernel.pcap", "usrsctp.pcap"])
def test_every_sctp_packet_travels_inside_udp(flows, pcap):
    rows = tshark(flows / pcap, "sctp", "udp.srcport", "udp.dstport", "sctp.chunk_type")
    assert len(rows) > 1000
    assert tshark(flows / pcap, "sctp && !udp", "frame.number") == []
    chunks = {int(t) for *_, types in rows for t in types.split(",")}
    assert {0, 1, 2, 3, 7, 8, 10, 11, 14} <= chunks and 6 not in chunks  # no ABORT


SENDING_GAP_LIMIT_S = 0.1   # 25 full packets' time at 3 Mbit/s; a window-limited sender's
#                             SACKs come every two packets (4 ms here), each opening room


@pytest.mark.kernel
def test_a_window_limited_usrsctp_sender_never_stops_writing(flows):
    """Through the 3 Mbit/s link the window, not the program, decides when data leaves: usrsctp
    refuses a send while its buffer is full, and the program must resume once the message fits,
    not once the association has drained (SCTP_STATUS counts only the chunks sent, none of
    those still queued: waiting on that count stopped the sender for 0.28 s in every 0.74 s).
    Judged from the sender's side of the link: no pause in its DATA while the flow runs, and
    the link kept full."""
    assert (flows / "usrsctp-shaped.send.rc").read_text().strip() == "0", \
        (flows / "usrsctp-shaped.send.err").read_text()
    sent = events((flows / "usrsctp-shaped.send").read_text())
    end = one(sent, "end")
    assert end["delivered_confirmed"] is True
    rows = tshark(flows / "shaped.pcap", "sctp.data_tsn && ip.src == 10.9.0.1",
                  "frame.time_relative", options=("-d", "udp.port==9899,sctp"))
    times = [float(t) for t, in rows]
    assert len(times) > 500, "the shaped flow's DATA was not captured"
    gaps = sorted((b - a, a) for a, b in zip(times, times[1:], strict=False))[-3:]
    assert gaps[-1][0] < SENDING_GAP_LIMIT_S, f"the sender paused (s, at s): {gaps}"
    seconds = times[-1] - times[0]
    assert end["bytes"] * 8 / seconds > 0.85 * 3e6, (end["bytes"], seconds)
