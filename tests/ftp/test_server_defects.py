"""ftpd defects of issue #19: REST beyond the end for STOR, refused uploads leaving files
behind, the data stall limit on sendfile, ABOR mid-transfer, a session whose client left
while ftpd waited for the PASV connection or sent data (with or without a command pipelined
behind the transfer), and the per-address session limit."""
from __future__ import annotations

import socket
import time
from pathlib import Path

from tests.ftp import ftphelp
from tests.ftp.ftphelp import Ctl


def upload(c: Ctl, name: str, payload: bytes, rest: int | None = None) -> tuple[int, int]:
    """(code of the 150 or refusal, code of the final reply or 0)."""
    d = c.pasv()
    if rest is not None:
        assert c.cmd(f"REST {rest}")[0] == 350
    code, _ = c.cmd(f"STOR {name}")
    if code != 150:
        d.close()
        return code, 0
    d.sendall(payload)
    d.close()
    return code, c.reply()[0]


def test_rest_beyond_the_end_is_refused_for_stor(ftpd, tree):
    root = tree[0]
    (root / "ten.bin").write_bytes(b"0123456789")
    s = ftpd("--allow-upload")
    c = Ctl(s.port)
    c.login()
    before = sorted(p.name for p in root.iterdir())
    # a terabyte offset on a new file and on an existing one: refused, nothing made
    assert upload(c, "huge.bin", b"x", rest=1_000_000_000_000)[0] == 554
    assert upload(c, "ten.bin", b"x", rest=1_000_000_000_000)[0] == 554
    assert upload(c, "ten.bin", b"x", rest=11)[0] == 554
    assert upload(c, "new.bin", b"x", rest=5)[0] == 554
    assert sorted(p.name for p in root.iterdir()) == before
    assert (root / "ten.bin").read_bytes() == b"0123456789"
    # a REST inside the file resumes there and cuts what followed
    assert upload(c, "ten.bin", b"abcd", rest=3) == (150, 226)
    assert (root / "ten.bin").read_bytes() == b"012abcd"
    assert upload(c, "ten.bin", b"XY", rest=7) == (150, 226)          # exactly at the end
    assert (root / "ten.bin").read_bytes() == b"012abcdXY"
    c.close()
    assert "REFUSED STOR: REST 1000000000000" in s.logtext()


def test_refused_upload_leaves_nothing_behind(ftpd, tree):
    root = tree[0]
    (root / "keep.bin").write_bytes(b"keep me")
    s = ftpd("--allow-upload")
    c = Ctl(s.port)
    c.login()
    assert c.cmd("STOR fresh.bin")[0] == 425              # no PASV/PORT first
    assert c.cmd("STOR keep.bin")[0] == 425
    assert not (root / "fresh.bin").exists()
    assert (root / "keep.bin").read_bytes() == b"keep me"   # not truncated by a refusal
    assert upload(c, "keep.bin", b"new") == (150, 226)
    assert (root / "keep.bin").read_bytes() == b"new"
    c.close()


def big_file(root: Path, size: int = 256 << 20) -> str:
    """A sparse file far larger than any socket buffer on the path."""
    with (root / "huge.bin").open("wb") as f:
        f.truncate(size)
    return "huge.bin"


def test_a_client_that_stops_reading_gets_426_after_the_data_timeout(ftpd, tree):
    name = big_file(tree[0])
    s = ftpd("--data-timeout", "2")
    c = Ctl(s.port, timeout=30)
    c.login()
    d = c.pasv()
    d.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    assert c.cmd(f"RETR {name}")[0] == 150
    t0 = time.monotonic()
    d.recv(1000)                                      # then never again
    code, text = c.reply()
    took = time.monotonic() - t0
    assert code == 426, text
    print(f"426 after {took:.2f} s")
    assert 1.5 < took < 3.2, took                     # 2 s without progress, not 4 x 2 s
    assert "no progress for 2 s" in s.logtext()
    assert c.cmd("NOOP")[0] == 200                    # the session goes on
    d.close()
    c.close()


def test_abor_mid_transfer_is_served(ftpd, tree):
    name = big_file(tree[0])
    s = ftpd("--data-timeout", "20")
    c = Ctl(s.port, timeout=30)
    c.login()
    d = c.pasv()
    assert c.cmd(f"RETR {name}")[0] == 150
    assert len(d.recv(65536)) > 0
    t0 = time.monotonic()
    # Telnet IP, then the Synch (IAC DM as urgent data), then ABOR, as RFC 959 asks
    c.send(b"\xff\xf4")
    c.s.send(b"\xff\xf2", socket.MSG_OOB)
    c.send("ABOR\r\n")
    assert c.reply()[0] == 426
    assert c.reply()[0] == 226
    assert time.monotonic() - t0 < 3
    got = 0
    d.settimeout(10)
    try:
        while chunk := d.recv(1 << 20):
            got += len(chunk)
    except ConnectionResetError:
        pass
    assert got < 256 << 20                            # the data connection was cut short
    assert c.cmd("SIZE s000.dat") == (213, "10000")  # the session goes on
    c.close()
    assert "ABORT transfer on the client's ABOR" in s.logtext()


def test_python_ftplib_abort_returns_at_once(ftpd, tree):
    import ftplib
    name = big_file(tree[0])
    s = ftpd("--data-timeout", "20")
    ftp = ftplib.FTP()
    ftp.connect("127.0.0.1", s.port, timeout=30)
    ftp.login()
    conn = ftp.transfercmd(f"RETR {name}")
    assert len(conn.recv(65536)) > 0
    t0 = time.monotonic()
    resp = ftp.abort()                                # ABOR sent with MSG_OOB
    assert resp.startswith("426"), resp
    assert ftp.getresp().startswith("226")
    assert time.monotonic() - t0 < 3
    conn.close()
    assert ftp.sendcmd("NOOP").startswith("200")
    ftp.quit()


def test_pipelined_commands_during_a_transfer_wait_their_turn(ftpd, tree):
    s = ftpd()
    c = Ctl(s.port)
    c.login()
    d = c.pasv()
    c.send("RETR big1.bin\r\nNOOP\r\nABOR\r\n")       # ABOR is not the next command
    assert c.reply()[0] == 150
    got = 0
    while chunk := d.recv(1 << 20):
        got += len(chunk)
    assert got == 3_000_000
    assert c.reply()[0] == 226
    assert c.reply()[0] == 200
    assert c.reply()[0] == 225                        # no transfer left to abort
    c.close()


def wait_for(predicate, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def test_a_client_gone_while_ftpd_waits_for_pasv_frees_its_slot(ftpd, tree):
    s = ftpd("--max-clients", "4", "--data-timeout", "30")
    clients = []
    for _ in range(4):
        c = Ctl(s.port)
        c.login()
        c.cmd("PASV")                                 # announced, never connected to
        c.send("RETR s000.dat\r\n")
        clients.append(c)
    assert len(ftphelp.children(s.pid)) == 4
    t0 = time.monotonic()
    for c in clients:
        c.close()
    assert wait_for(lambda: ftphelp.children(s.pid) == [], 5), "sessions kept their slots"
    took = time.monotonic() - t0
    assert took < 3, took
    late = Ctl(s.port)
    assert late.reply()[0] == 220                     # not "421 too many users"
    late.close()
    assert s.logtext().count("DISCONNECT by peer while waiting for the data connection") == 4


def test_a_client_gone_with_a_command_pipelined_behind_retr_frees_its_slot(ftpd, tree):
    # the next command is already buffered when RETR waits for its data connection:
    # the control connection's end must still be noticed, not the data timeout awaited
    s = ftpd("--max-clients", "4", "--data-timeout", "30")
    for _ in range(4):
        c = Ctl(s.port)
        assert c.reply()[0] == 220
        c.send("USER anonymous\r\nPASS x@\r\nPASV\r\nRETR big1.bin\r\nNOOP\r\n")
        assert [c.reply()[0] for _ in range(3)] == [331, 230, 227]
        c.close()                                     # never connects to the 227's port
    assert wait_for(lambda: ftphelp.children(s.pid) == [], 2), "sessions kept their slots"
    late = Ctl(s.port)
    late.login()                                      # not "421 too many users"
    late.close()
    assert s.logtext().count("DISCONNECT by peer while waiting for the data connection") == 4


def test_a_client_gone_mid_transfer_with_a_command_pipelined_frees_its_slot(ftpd, tree):
    # the same during the transfer: the client keeps its data connection and stops reading
    name = big_file(tree[0])
    s = ftpd("--data-timeout", "30")
    c = Ctl(s.port, timeout=30)
    c.login()
    d = c.pasv()
    c.send(f"RETR {name}\r\nNOOP\r\n")
    assert c.reply()[0] == 150
    assert len(d.recv(65536)) > 0
    c.close()
    assert wait_for(lambda: ftphelp.children(s.pid) == [], 2), "the session kept its slot"
    d.close()
    assert "DISCONNECT by peer during a transfer" in s.logtext()


def test_abor_while_ftpd_waits_for_pasv(ftpd, tree):
    s = ftpd("--data-timeout", "30")
    c = Ctl(s.port)
    c.login()
    c.cmd("PASV")
    t0 = time.monotonic()
    c.send("RETR s000.dat\r\nABOR\r\n")
    assert c.reply()[0] == 425
    assert c.reply()[0] == 226
    assert time.monotonic() - t0 < 3
    assert c.cmd("NOOP")[0] == 200
    c.close()


def test_per_address_session_limit(ftpd, tree):
    s = ftpd("--max-per-ip", "3")
    held = [Ctl(s.port) for _ in range(3)]
    assert all(c.reply()[0] == 220 for c in held)
    extra = Ctl(s.port)
    code, text = extra.reply()
    assert code == 421 and "your internet address" in text
    extra.close()
    other = socket.socket()                           # another address is not counted
    other.bind(("127.0.0.2", 0))
    other.connect(("127.0.0.1", s.port))
    assert other.recv(100).startswith(b"220")
    other.close()
    held.pop().close()
    assert wait_for(lambda: len(ftphelp.children(s.pid)) <= 2, 5)
    again = Ctl(s.port)
    assert again.reply()[0] == 220
    for c in [*held, again]:
        c.close()
    assert "REFUSED connection from 127.0.0.1: 3 sessions from it already" in s.logtext()


def test_default_per_address_limit_is_16(ftpd, tree):
    s = ftpd()
    held = [Ctl(s.port) for _ in range(16)]
    assert all(c.reply()[0] == 220 for c in held)
    extra = Ctl(s.port)
    assert extra.reply()[0] == 421
    for c in [*held, extra]:
        c.close()
