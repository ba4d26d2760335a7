"""FTP on usrsctp (FreeBSD's SCTP in user space, `--sctp-stack usrsctp`) inside the pinned
kernel over UDP encapsulation (RFC 6951), in three pairings: ftpc on usrsctp against ftpd on
the kernel's SCTP, ftpc on the kernel's against ftpd on usrsctp (which serves its sessions in
one process), and both on usrsctp. Every SCTP variant, sctp-naive in both data modes, fetches
the same files byte for byte, records its stack, and every SCTP packet of the sessions goes
inside UDP with no ABORT. On the host, the options' refusals."""
from __future__ import annotations

import hashlib
import re
import subprocess
from pathlib import Path

import pytest

from tests.bulkflow.bulkhelp import SANITIZER_MARKS, events, free_udp_port, one, tshark
from tests.ftp import ftphelp
from tests.ftp.kernel import run_script_in_kernel

JOB = Path(__file__).with_name("inside_usrsctp_ftp.sh")
SESSIONS = ("naive-passive", "naive-active", "ms", "ms-cp")
SERVER_SESSIONS = ("srv-naive-passive", "srv-naive-active", "srv-ms", "srv-ms-cp")
BOTH_SESSIONS = ("both-naive", "both-ms-cp")
FILES = ("small.bin", "medium.bin", "large.bin")
# usrsctp's ports beside the registered 9899, which tshark decodes by itself
AS_SCTP = ("-d", "udp.port==9900,sctp", "-d", "udp.port==9902,sctp")
CLIENT = "10.9.0.1"


def test_usrsctp_is_refused_for_a_tcp_variant(built):
    ftpc = ftphelp.IMPL / "build" / "ftpc"
    r = subprocess.run([str(ftpc), "--variant", "tcp", "--sctp-stack", "usrsctp",
                        "127.0.0.1:21", "ls"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2
    assert "usrsctp is an SCTP stack" in r.stderr


def test_ftpd_refuses_usrsctp_without_an_sctp_listener(built):
    ftpd = ftphelp.IMPL / "build" / "ftpd"
    r = subprocess.run([str(ftpd), "--root", "/tmp", "--tcp", "127.0.0.1:0", "--sctp-stack",
                        "usrsctp"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2
    assert "usrsctp is an SCTP stack (--sctp ADDR:PORT)" in r.stderr


@pytest.mark.parametrize("variant, mode", [("sctp-naive", []), ("sctp-naive", ["--active"]),
                                           ("sctp-ms-cp", [])])
def test_ftpd_and_ftpc_on_usrsctp_over_the_loopback(bindir, tmp_path, variant, mode):
    """On the host (no kernel SCTP there), in every build, ASan's included: one mget from
    ftpd on usrsctp, every file byte for byte, both programs clean."""
    root = tmp_path / "root"
    sums = ftphelp.make_tree(root, nsmall=3, big=(700_000,))
    server_udp, client_udp = free_udp_port(), free_udp_port()
    (tmp_path / "got").mkdir()
    ftpd = subprocess.Popen(
        [str(bindir / "ftpd"), "--root", str(root), "--sctp", "127.0.0.1:2121", "--once",
         "--sctp-stack", "usrsctp", "--sctp-udp-port", str(server_udp),
         "--log", str(tmp_path / "ftpd.log"), "--idle-timeout", "20"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert "ready" in [ftpd.stdout.readline().strip() for _ in range(2)]
        r = subprocess.run(
            [str(bindir / "ftpc"), "--variant", variant, *mode, "--out", str(tmp_path / "got"),
             "--timeout", "20", "--sctp-stack", "usrsctp", "--sctp-udp-port", str(client_udp),
             "--sctp-peer-udp-port", str(server_udp), "127.0.0.1:2121", "mget", "*"],
            capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert ftpd.wait(timeout=30) == 0
    finally:
        ftpd.kill()
        _, server_err = ftpd.communicate()
    assert not any(m in r.stderr + server_err for m in SANITIZER_MARKS), r.stderr + server_err
    for name, digest_of in sums.items():
        assert digest(tmp_path / "got" / name) == digest_of
    log = (tmp_path / "ftpd.log").read_text()
    assert log.count(" OK RETR ") == len(sums) and " FAIL " not in log


@pytest.fixture(scope="module")
def sessions(built, tmp_path_factory) -> Path:
    return run_script_in_kernel(JOB, tmp_path_factory.mktemp("usrsctp-ftp"))


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fetched_whole(work: Path, name: str) -> list:
    """The session's events, once it exited 0, clean, with every file byte for byte."""
    err = (work / f"{name}.err").read_text()
    assert (work / f"{name}.rc").read_text().strip() == "0", err
    assert not any(m in err for m in SANITIZER_MARKS), err
    for file in FILES:
        assert digest(work / name / file) == digest(work / "root" / file), file
    got = events((work / f"{name}.events").read_text())
    assert one(got, "session_end")["status"] == "ok"
    assert sorted(e["file"] for e in got if e["event"] == "file_done") == sorted(FILES)
    return got


@pytest.mark.kernel
@pytest.mark.parametrize("name", SESSIONS)
def test_every_file_arrives_whole_from_the_kernel_s_ftpd(sessions, name):
    connected = one(fetched_whole(sessions, name), "connected")
    assert connected["transport"] == "sctp" and connected["stack"] == "usrsctp"
    assert connected["udp_port"] == 9900 and connected["peer_udp_port"] == 9899


@pytest.mark.kernel
@pytest.mark.parametrize("name", SERVER_SESSIONS)
def test_the_kernel_s_ftpc_fetches_every_file_whole_from_ftpd_on_usrsctp(sessions, name):
    connected = one(fetched_whole(sessions, name), "connected")
    assert connected["transport"] == "sctp" and connected["stack"] == "kernel"


@pytest.mark.kernel
@pytest.mark.parametrize("name", BOTH_SESSIONS)
def test_ftpc_on_usrsctp_fetches_every_file_whole_from_ftpd_on_usrsctp(sessions, name):
    connected = one(fetched_whole(sessions, name), "connected")
    assert connected["stack"] == "usrsctp"
    assert connected["udp_port"] == 9902 and connected["peer_udp_port"] == 9900


@pytest.mark.kernel
def test_ftpd_on_usrsctp_served_every_session_in_its_one_process(sessions):
    log = (sessions / "ftpd-usrsctp.log").read_text().splitlines()
    transfers = [line for line in log if " OK RETR " in line]
    assert len(transfers) == len(FILES) * (len(SERVER_SESSIONS) + len(BOTH_SESSIONS))
    assert len({line.split("[pid ")[1].split("]")[0] for line in log}) == 1
    assert not [line for line in log if " FAIL " in line]
    assert any(" STACK sctp usrsctp, UDP port 9900, one session at a time" in line
               for line in log)


@pytest.mark.kernel
@pytest.mark.parametrize("capture, largest", [
    ("kclient.pcap", {1548 - 20 - 8 - 12 - 16, 1500 - 20 - 8 - 12 - 16}),
    ("both.pcap", {1500 - 20 - 8 - 12 - 16}),
])
def test_ftpd_on_usrsctp_sizes_chunks_to_the_link_only_on_associations_it_opens(
        sessions, capture, largest):
    """Active mode's data associations, which ftpd opens, fill the 1,548-byte link's packet
    (less IP, UDP, SCTP's common header and the DATA chunk's). Those it accepts (passive
    mode's, the control association's stream 1) keep usrsctp 0.9.5.0's own 1,500 whatever
    they are told (PROGRAMS.md). The associations that carried files are those with many
    DATA chunks (the client's carry commands); only kclient.pcap has an active session."""
    chunks: dict = {}
    for src, dst, types, lengths in tshark(sessions / capture, "sctp.chunk_type == 0",
                                           "sctp.srcport", "sctp.dstport", "sctp.chunk_type",
                                           "sctp.chunk_length", options=AS_SCTP):
        pairs = zip(types.split(","), lengths.split(","), strict=True)
        chunks.setdefault((src, dst), []).extend(int(n) - 16 for t, n in pairs if t == "0")
    carried_files = [sizes for sizes in chunks.values() if len(sizes) > 50]
    assert len(carried_files) >= 3
    assert {max(sizes) for sizes in carried_files} == largest


@pytest.mark.kernel
def test_no_capture_lost_a_packet_in_the_kernel(sessions):
    """What the pcap checks read is each pairing's traffic whole: the kernel dropped nothing,
    and each capture was stopped only once its file had stopped growing."""
    said = (sessions / "tcpdump.err").read_text()
    assert re.findall(r"^(\d+) packets dropped by kernel", said, re.M) == ["0"] * 4, said


@pytest.mark.kernel
@pytest.mark.parametrize("capture, ports", [
    ("client.pcap", {(9900, 9899), (9899, 9900)}),
    ("kclient.pcap", {(9899, 9900), (9900, 9899)}),
    ("both.pcap", {(9902, 9900), (9900, 9902)}),
])
def test_every_sctp_packet_of_the_sessions_travels_inside_udp(sessions, capture, ports):
    pcap = sessions / capture
    rows = tshark(pcap, "sctp", "udp.srcport", "udp.dstport", "sctp.chunk_type",
                  options=AS_SCTP)
    assert len(rows) > 500
    assert tshark(pcap, "sctp && !udp", "frame.number", options=AS_SCTP) == []
    assert {(int(s), int(d)) for s, d, _ in rows} == ports
    chunks = {int(t) for *_, types in rows for t in types.split(",")}
    assert {0, 1, 2, 3, 7, 8, 10, 11, 14} <= chunks and 6 not in chunks  # no ABORT


@pytest.mark.kernel
def test_each_control_association_is_shut_down_by_the_client_before_it_exits(sessions):
    """usrsctp's threads end with the program: its close sends the SHUTDOWN, and the program
    waits for the association's end before it exits, as the kernel's SCTP completes it after
    a program has gone."""
    pcap = sessions / "client.pcap"
    ports = {p for (p,) in tshark(pcap, "sctp.dstport == 21 && sctp.chunk_type == 1",
                                  "sctp.srcport")}
    assert len(ports) == len(SESSIONS)
    for port in ports:
        sent = {int(t) for (types,) in tshark(pcap, f"sctp.srcport == {port}", "sctp.chunk_type")
                for t in types.split(",")}
        assert {7, 14} <= sent, (port, sent)          # SHUTDOWN, SHUTDOWN COMPLETE


@pytest.mark.kernel
def test_a_data_association_s_end_does_not_hold_up_the_next_command(sessions):
    """Each data association ended by the server first and the client's end held back
    (inside_usrsctp_ftp.sh: its SHUTDOWN 300 ms late, the server's SHUTDOWN COMPLETE dropped):
    the session goes on, because the client's close returns at once, as the kernel's SCTP's
    does. The client answers the server's SHUTDOWN, and its association goes on ending (its
    own SHUTDOWN let out, or its SHUTDOWN ACK sent again at T2) after its next command has
    left. (A close that awaited the association's end read the next reply that much late.)"""
    fetched_whole(sessions, "naive-lost-end")
    rows = tshark(sessions / "lostend.pcap", "sctp", "frame.time_relative", "ip.src",
                  "sctp.srcport", "sctp.dstport", "sctp.chunk_type", options=AS_SCTP)
    (control,) = {src for _, _, src, dst, types in rows
                  if dst == "21" and "1" in types.split(",")}
    commands = [float(t) for t, _, src, _, types in rows
                if src == control and "0" in types.split(",")]
    ends: dict[str, list[tuple[str, float]]] = {}   # per client port: its ends' chunks
    for t, ip_src, src, dst, types in rows:
        sender, port = ("client", src) if ip_src == CLIENT else ("server", dst)
        ends.setdefault(port, []).extend((f"{sender} {chunk}", float(t))
                                         for chunk in types.split(",") if chunk in "78")
    data = [chunks for port, chunks in ends.items() if port != control]
    assert len(data) == len(FILES) + 1, ends        # NLST's and every file's
    for chunks in data:
        assert chunks[0][0] == "server 7", chunks   # the server's SHUTDOWN came first
        answered = next(t for who, t in chunks if who == "client 8")
        ended = max(t for who, t in chunks if who.startswith("client"))
        assert any(answered < c < ended for c in commands), (chunks, commands)
