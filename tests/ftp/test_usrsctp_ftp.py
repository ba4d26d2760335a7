"""ftpc on usrsctp (FreeBSD's SCTP in user space, `--sctp-stack usrsctp`) against ftpd on the
kernel's SCTP, inside the pinned kernel over UDP encapsulation (RFC 6951): every SCTP variant,
sctp-naive in both data modes, fetches the same files byte for byte, records its stack, and
every SCTP packet of the sessions goes inside UDP with no ABORT. On the host, the option's
refusals."""
from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from tests.bulkflow.bulkhelp import SANITIZER_MARKS, events, one, tshark
from tests.ftp import ftphelp
from tests.ftp.kernel import run_script_in_kernel

JOB = Path(__file__).with_name("inside_usrsctp_ftp.sh")
SESSIONS = ("naive-passive", "naive-active", "ms", "ms-cp")
FILES = ("small.bin", "medium.bin", "large.bin")


def test_usrsctp_is_refused_for_a_tcp_variant(built):
    ftpc = ftphelp.IMPL / "build" / "ftpc"
    r = subprocess.run([str(ftpc), "--variant", "tcp", "--sctp-stack", "usrsctp",
                        "127.0.0.1:21", "ls"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2
    assert "usrsctp is an SCTP stack" in r.stderr


@pytest.fixture(scope="module")
def sessions(built, tmp_path_factory) -> Path:
    return run_script_in_kernel(JOB, tmp_path_factory.mktemp("usrsctp-ftp"))


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.kernel
@pytest.mark.parametrize("name", SESSIONS)
def test_every_file_arrives_whole_from_the_kernel_s_ftpd(sessions, name):
    err = (sessions / f"{name}.err").read_text()
    assert (sessions / f"{name}.rc").read_text().strip() == "0", err
    assert not any(m in err for m in SANITIZER_MARKS), err
    for file in FILES:
        assert digest(sessions / name / file) == digest(sessions / "root" / file), file
    got = events((sessions / f"{name}.events").read_text())
    connected = one(got, "connected")
    assert connected["transport"] == "sctp" and connected["stack"] == "usrsctp"
    assert connected["udp_port"] == 9900 and connected["peer_udp_port"] == 9899
    assert one(got, "session_end")["status"] == "ok"
    assert sorted(e["file"] for e in got if e["event"] == "file_done") == sorted(FILES)


@pytest.mark.kernel
def test_every_sctp_packet_of_the_sessions_travels_inside_udp(sessions):
    pcap = sessions / "client.pcap"
    rows = tshark(pcap, "sctp", "udp.srcport", "udp.dstport", "sctp.chunk_type")
    assert len(rows) > 1000
    assert tshark(pcap, "sctp && !udp", "frame.number") == []
    assert {(int(s), int(d)) for s, d, _ in rows} == {(9900, 9899), (9899, 9900)}
    chunks = {int(t) for *_, types in rows for t in types.split(",")}
    assert {0, 1, 2, 3, 7, 8, 10, 11, 14} <= chunks and 6 not in chunks  # no ABORT


@pytest.mark.kernel
def test_each_control_association_is_shut_down_by_the_client_before_it_exits(sessions):
    """usrsctp's threads end with the program: its close sends the SHUTDOWN and waits for the
    association's end, as the kernel's SCTP completes it after a program has gone."""
    pcap = sessions / "client.pcap"
    ports = {p for (p,) in tshark(pcap, "sctp.dstport == 21 && sctp.chunk_type == 1",
                                  "sctp.srcport")}
    assert len(ports) == len(SESSIONS)
    for port in ports:
        sent = {int(t) for (types,) in tshark(pcap, f"sctp.srcport == {port}", "sctp.chunk_type")
                for t in types.split(",")}
        assert {7, 14} <= sent, (port, sent)          # SHUTDOWN, SHUTDOWN COMPLETE
