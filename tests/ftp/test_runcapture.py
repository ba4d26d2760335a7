"""runcapture (ftp-impl/runcapture/runcapture.c), the capture a topology holds across its runs: one
pcap per run on a live interface, each holding exactly the packets from its `open` to its
`close` (immediate and block mode), the counts tcpdump would give, bad commands answered
without losing the capture; and a capture of headers: the packets FTP's filter names whole
(the control channel, every SCTP bundle), every other one cut at HEADERS_SNAPLEN, which the
header readers read as tshark reads the whole packets. Plain and ASan+UBSan builds."""
from __future__ import annotations

import os
import struct
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from experiments import tshark
from experiments.inkernel.run_capture import CaptureSettings, RunCapture
from experiments.procedure import HEADERS_SNAPLEN, WHOLE_SNAPLEN, netns_launch
from experiments.tshark import sctp_headers, tcp_headers
from experiments.tshark.pcap_records import pcap_format, records
from experiments.workloads.client_server import CAPTURE, held_captures
from experiments.workloads.ftp_mget.measure import WHOLE_IN_A_CAPTURE_OF_HEADERS
from tests.ftp import ftphelp
from tests.unit.test_tshark_shared_pass import (
    CLIENT,
    INIT,
    SACK,
    SERVER,
    data_chunk,
    sctp,
    tcp,
)

ACK = 0x10
COMMAND = tcp(CLIENT, SERVER, 40001, 21, 101, ACK, b"RETR " + b"f" * 120 + b"\r\n")
REPLY = tcp(SERVER, CLIENT, 21, 40001, 501, ACK, b"150 Opening BINARY mode " + b"x" * 100
            + b"\r\n")
FILE_DATA = tcp(SERVER, CLIENT, 20, 40002, 7001, ACK, bytes(range(256)) * 5)
STREAM_0 = sctp(SERVER, CLIENT, 21, 50001, data_chunk(10, 0, b"226 Transfer complete" * 5))
STREAM_1 = sctp(SERVER, CLIENT, 21, 50001, data_chunk(11, 1, bytes(1200)))
BUNDLE = sctp(SERVER, CLIENT, 21, 50001, SACK + data_chunk(12, 1, bytes(300))
              + data_chunk(13, 0, b"226 ok\r\n"))
NAIVE_DATA = sctp(SERVER, CLIENT, 50002, 50003, data_chunk(14, 0, bytes(1200)))
SESSION = [sctp(CLIENT, SERVER, 50001, 21, INIT), COMMAND, REPLY, FILE_DATA, STREAM_0,
           STREAM_1, FILE_DATA, BUNDLE, NAIVE_DATA, REPLY]
KEPT_WHOLE = [COMMAND, REPLY, STREAM_0, BUNDLE, REPLY]   # what FTP's filter keeps whole
PEER = "10.77.0.2"
SAN = dict(os.environ, **ftphelp.SAN_ENV)


def write(path: Path, frames: list[bytes]) -> Path:
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1)
    for i, frame in enumerate(frames):
        out += struct.pack("<IIII", 1_700_000_000, 10 * i, len(frame), len(frame)) + frame
    path.write_bytes(out)
    return path


def frames_of(pcap: Path) -> list[tuple[int, int, bytes]]:
    data = pcap.read_bytes()
    layout = pcap_format(data)
    assert layout is not None
    return [(r.fraction, r.length, data[r.frame:r.frame + r.captured])
            for r in records(data, layout[0])]


def cut(bindir: Path, whole: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(bindir / "runcapture"), "--read", str(whole), "--write",
                           str(out), "--headers", str(HEADERS_SNAPLEN), "--keep",
                           WHOLE_IN_A_CAPTURE_OF_HEADERS], capture_output=True, text=True,
                          env=SAN, timeout=60)


def test_a_capture_of_headers_keeps_whole_what_ftp_s_filter_names_and_cuts_the_rest(
        bindir, tmp_path):
    whole = write(tmp_path / "whole.pcap", SESSION)
    done = cut(bindir, whole, tmp_path / "headers.pcap")
    assert done.returncode == 0, done.stderr
    out = frames_of(tmp_path / "headers.pcap")
    assert [fraction for fraction, _, _ in out] == [10 * i for i in range(len(SESSION))]
    for (_, length, held), frame in zip(out, SESSION, strict=True):
        assert length == len(frame)
        assert held == (frame if frame in KEPT_WHOLE else frame[:HEADERS_SNAPLEN])
    # the header readers read it as tshark reads the whole packets
    for protocol, reader in (("tcp", tcp_headers), ("sctp", sctp_headers)):
        options, names = tshark.SHARED_PASSES[protocol]
        assert reader.shared_rows(tmp_path / "headers.pcap") == tshark._fields(
            whole, list(names), protocol, options)


def test_a_filter_it_cannot_compile_is_an_error_naming_it(bindir, tmp_path):
    whole = write(tmp_path / "whole.pcap", SESSION)
    done = subprocess.run([str(bindir / "runcapture"), "--read", str(whole), "--write",
                           str(tmp_path / "out.pcap"), "--headers", "96", "--keep",
                           "tcp port twenty-one"], capture_output=True, text=True,
                          env=SAN, timeout=60)
    assert done.returncode == 1 and "--keep tcp port twenty-one" in done.stderr
    for argv in (["-i", "x", "--read", str(whole)], ["--headers", "96"], ["-i", "x", "-s", "-1"],
                 ["-i", "x", "--headers", "96"]):
        usage = subprocess.run([str(bindir / "runcapture"), *argv], capture_output=True,
                               text=True, env=SAN, timeout=60)
        assert usage.returncode == 2 and "usage: runcapture" in usage.stderr, argv


@contextmanager
def links(steps: list[list[str]], undo: list[list[str]]) -> Iterator[None]:
    """Namespaces and links made by `steps` (ip commands), removed by `undo` however the test
    ends."""
    try:
        for step in steps:
            subprocess.run(step, check=True, capture_output=True)
        yield
    finally:
        for step in undo:
            subprocess.run(step, capture_output=True)


@pytest.fixture
def veth() -> Iterator[str]:
    """A veth pair, one end here (10.77.0.1), the other in a namespace of its own (PEER)."""
    tag = uuid.uuid4().hex[:6]
    namespace, here, there = f"rc{tag}", f"rca{tag}", f"rcb{tag}"
    steps = [["ip", "netns", "add", namespace],
             ["ip", "link", "add", here, "type", "veth", "peer", "name", there],
             ["ip", "link", "set", there, "netns", namespace],
             ["ip", "addr", "add", "10.77.0.1/24", "dev", here],
             ["ip", "link", "set", here, "up"],
             ["ip", "netns", "exec", namespace, "ip", "addr", "add", f"{PEER}/24", "dev", there],
             ["ip", "netns", "exec", namespace, "ip", "link", "set", there, "up"]]
    with links(steps, [["ip", "link", "del", here], ["ip", "netns", "del", namespace]]):
        yield here


def ping(count: int, size: int = 1000) -> None:
    subprocess.run(["ping", "-c", str(count), "-i", "0.02", "-s", str(size), "-W", "2", PEER],
                   check=True, capture_output=True)


def echoes(pcap: Path) -> list[tuple[int, int, int]]:
    """(ICMP type, bytes held, bytes on the wire) of each echo request and reply."""
    return [(frame[34], len(frame), length) for _, length, frame in frames_of(pcap)
            if len(frame) > 34 and frame[12:14] == b"\x08\x00" and frame[23] == 1]


def start(argv: list[str], **kwargs) -> subprocess.Popen:
    """A program started here, with the sanitizers' settings (the ASan build's runtime)."""
    return subprocess.Popen(argv, env=SAN, **kwargs)


@pytest.mark.parametrize("immediate", [True, False], ids=["immediate", "block"])
def test_each_run_s_pcap_holds_exactly_its_packets(bindir, veth, tmp_path, immediate):
    capture = RunCapture(start, veth, CaptureSettings(0, 2048, immediate),
                         str(bindir / "runcapture"))
    try:
        ping(1)   # before any run: read and let go
        counts = []
        for run, pings in (("a", 3), ("b", 5)):
            capture.open(tmp_path / f"{run}.pcap")
            ping(pings)
            counts.append(capture.close())
            ping(2)   # between runs
        assert capture.alive()
    finally:
        capture.stop()
    assert capture.process.returncode == 0
    for (run, pings), count in zip((("a", 3), ("b", 5)), counts, strict=True):
        held = echoes(tmp_path / f"{run}.pcap")
        assert [kind for kind, _, _ in held] == [8, 0] * pings, run
        assert all(size == length == 1042 for _, size, length in held)
        assert count["captured"] == count["received"] == len(frames_of(tmp_path / f"{run}.pcap"))
        assert count["dropped"] == 0 and count["drain_ms"] >= 0
        if immediate:
            assert count["drain_ms"] < 500


def test_a_live_capture_of_headers_cuts_what_its_filter_does_not_name(bindir, veth, tmp_path):
    settings = CaptureSettings(WHOLE_SNAPLEN, 2048, True, 60, "icmp[icmptype] == icmp-echoreply")
    capture = RunCapture(start, veth, settings, str(bindir / "runcapture"))
    try:
        capture.open(tmp_path / "run.pcap")
        ping(3)
        count = capture.close()
    finally:
        capture.stop()
    assert echoes(tmp_path / "run.pcap") == [(8, 60, 1042), (0, 1042, 1042)] * 3
    assert count["captured"] == count["received"]
    assert int.from_bytes((tmp_path / "run.pcap").read_bytes()[16:20], "little") == WHOLE_SNAPLEN


def test_a_bad_command_is_answered_and_the_capture_goes_on(bindir, veth, tmp_path):
    process = start([str(bindir / "runcapture"), "-i", veth, "--immediate-mode"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    commands = ["bogus", "close", f"open {tmp_path}/missing/run.pcap", "x" * 5000,
                f"open {tmp_path}/run.pcap", f"open {tmp_path}/other.pcap", "close", "quit"]
    out, err = process.communicate("\n".join(commands) + "\n", timeout=60)
    answers = out.splitlines()
    assert answers[0] == f"listening on {veth}"
    assert answers[1] == "error unknown command: bogus"
    assert answers[2] == "error no file is open"
    assert answers[3].startswith("error ") and "missing/run.pcap" in answers[3]
    assert answers[4] == "error command longer than 4096 bytes"
    assert answers[5] == f"opened {tmp_path}/run.pcap"
    assert answers[6] == "error a file is open already"
    assert answers[7].startswith("closed captured=")
    assert len(answers) == 8 and process.returncode == 0, err
    assert pcap_format((tmp_path / "run.pcap").read_bytes()) is not None
    assert not (tmp_path / "other.pcap").exists()


@pytest.fixture
def client_side() -> Iterator[str]:
    """A namespace whose interface is called as the client's (client-eth0), its peer PEER."""
    tag = uuid.uuid4().hex[:6]
    namespace, peer_ns = f"rcc{tag}", f"rcp{tag}"
    steps = [["ip", "netns", "add", namespace], ["ip", "netns", "add", peer_ns],
             ["ip", "-n", namespace, "link", "add", "client-eth0", "type", "veth", "peer",
              "name", "peer0", "netns", peer_ns],
             ["ip", "-n", namespace, "link", "set", "client-eth0", "up"],
             ["ip", "-n", peer_ns, "link", "set", "peer0", "up"]]
    with links(steps, [["ip", "netns", "del", namespace], ["ip", "netns", "del", peer_ns]]):
        yield namespace


class FakeTopology:
    """What held_captures asks of a topology: its held things, the client's node and
    interfaces."""

    client_interfaces = ("client-eth0",)

    def __init__(self, namespace: str) -> None:
        self.held: dict = {}
        self.launch = netns_launch(namespace)

    def node(self, name: str):
        assert name == "client"
        return self

    def popen(self, argv, **kwargs):
        return self.launch(argv, env=SAN, **kwargs)


def test_a_topology_keeps_one_capture_until_a_run_needs_another(bindir, client_side):
    net = FakeTopology(client_side)
    run = {"links": {"forward": {"rate_bps": 3_000_000}, "reverse": {"rate_bps": 3_000_000}},
           "snaplen": 0, "workload": {"runcapture": str(bindir / "runcapture")}}
    [first] = held_captures(net, run, "")
    assert held_captures(net, run, "") == [first] and first.alive()
    # a faster link wants a larger ring: the first capture is stopped, a new one held
    faster = {**run, "links": {"forward": {"rate_bps": 100_000_000},
                               "reverse": {"rate_bps": 100_000_000}}}
    [second] = held_captures(net, faster, "")
    assert second is not first and first.process.returncode == 0
    assert second.settings.buffer_kb > first.settings.buffer_kb
    # one that died is replaced
    second.process.kill()
    second.process.wait()
    [third] = held_captures(net, faster, "")
    assert third is not second and third.alive() and net.held == {CAPTURE: third}
    third.stop()
