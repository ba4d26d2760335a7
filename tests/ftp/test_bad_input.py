"""Hostile and broken input against ftpd: every case gets a proper reply
(and a log line for refusals), the server keeps serving, no fd leaks."""
import random
import socket
import struct
import threading
import time

from tests.ftp import ftphelp
from tests.ftp.ftphelp import Ctl


def served_ok(s, sums):
    """A fresh session still downloads a file intact."""
    c = Ctl(s.port)
    c.login()
    d = c.pasv()
    assert c.cmd("RETR s000.dat")[0] == 150
    data = b""
    while True:
        chunk = d.recv(65536)
        if not chunk:
            break
        data += chunk
    assert c.reply()[0] == 226
    c.cmd("QUIT")
    c.close()
    import hashlib
    assert hashlib.sha256(data).hexdigest() == sums["s000.dat"]


def test_traversal_refused(ftpd, tree):
    s = ftpd()
    c = Ctl(s.port)
    c.login()
    for cmd in ["CWD ..", "CWD ../..", "RETR ../../../../etc/passwd", "SIZE ../outside/secret.txt",
                "CWD outlink", "RETR outfile", "SIZE outfile", "RETR outlink/secret.txt",
                "LIST ..", "NLST outlink", "MDTM /../../etc/passwd", "CWD sub/../../"]:
        code, text = c.cmd(cmd)
        assert code == 550, (cmd, code, text)
    # absolute paths are relative to the served root, never the real /
    assert c.cmd("SIZE /etc/passwd")[0] == 550
    assert c.cmd("SIZE /sub/inner.txt") == (213, "6")
    assert c.cmd("SIZE inlink") == (213, "6")    # a symlink that stays inside is fine
    assert c.cmd("CWD sub")[0] == 250
    assert c.cmd("PWD") == (257, '"/sub" is the current directory')
    assert c.cmd("CDUP")[0] == 250
    assert c.cmd("CDUP")[0] == 250              # at the root CDUP stays there
    assert c.cmd("PWD")[1].startswith('"/"')
    c.close()
    log = s.logtext()
    assert log.count("REFUSED") >= 8
    assert "outside root" in log


def test_port_bounce_refused(ftpd, tree):
    s = ftpd()
    c = Ctl(s.port)
    c.login()
    assert c.cmd("PORT 10,1,2,3,200,1")[0] == 500
    assert c.cmd("EPRT |1|192.0.2.7|5000|")[0] == 500
    assert c.cmd("PORT 127,0,0,1,0,21")[0] == 500        # privileged port
    assert c.cmd("PORT 1,2,3")[0] == 500
    assert c.cmd("EPRT |9|x|1|")[0] == 500
    assert c.cmd("RETR s000.dat")[0] == 425               # no data channel was set
    c.close()
    assert "REFUSED PORT to 10.1.2.3:51201" in s.logtext()
    assert "REFUSED EPRT to 192.0.2.7:5000" in s.logtext()


def test_pasv_connection_from_other_host_refused(ftpd, tree):
    s = ftpd()
    c = Ctl(s.port)
    c.login()
    code, text = c.cmd("EPSV")
    port = int(text.split("|||")[1].split("|")[0])
    # 127.0.0.2 is another address on loopback: a third party
    d = socket.socket()
    d.bind(("127.0.0.2", 0))
    d.connect(("127.0.0.1", port))
    c.send("RETR s000.dat\r\n")
    assert c.reply()[0] == 425
    d.close()
    c.close()
    assert "REFUSED data connection from 127.0.0.2" in s.logtext()


def test_long_line_and_garbage(ftpd, tree):
    s = ftpd()
    c = Ctl(s.port)
    c.login()
    c.send(b"A" * 100_000 + b"\r\n")
    assert c.reply()[0] == 500
    assert c.cmd("NOOP")[0] == 200
    rng = random.Random(7)
    for _ in range(20):
        junk = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400))).replace(b"\n", b"")
        c.send(junk + b"\r\n")
        code, _ = c.reply()
        assert 500 <= code < 600 or code in (200, 202, 211, 214, 215, 225, 257, 331)
    c.send(b"\xff\xf4\xff\xf2NOOP\r\n")     # Telnet IP + DM before a command
    assert c.reply() == (200, "NOOP ok.")
    assert c.cmd("SYST") == (215, "UNIX Type: L8")
    c.close()
    assert "REFUSED command line longer than" in s.logtext()
    served_ok(s, tree[1])


def test_commands_before_login(ftpd, tree):
    s = ftpd()
    c = Ctl(s.port)
    assert c.reply()[0] == 220
    for cmd in ["LIST", "RETR s000.dat", "PASV", "CWD /", "SIZE s000.dat", "STOR x",
                "PORT 127,0,0,1,4,1"]:
        assert c.cmd(cmd)[0] == 530, cmd
    assert c.cmd("PASS x")[0] == 503
    c.close()
    assert s.logtext().count("before login") == 7


def test_login_refused_and_named_user(bindir, ftpd, tree):
    s = ftpd("--no-anonymous", "--user", "alice:wonder")
    c = Ctl(s.port)
    assert c.reply()[0] == 220
    assert c.cmd("USER anonymous")[0] == 331
    assert c.cmd("PASS x")[0] == 530
    assert c.cmd("USER alice")[0] == 331
    assert c.cmd("PASS wrong")[0] == 530
    assert c.cmd("USER alice")[0] == 331
    assert c.cmd("PASS wonder")[0] == 230
    c.close()
    r = ftphelp.run_ftpc(bindir, "--variant", "tcp", f"127.0.0.1:{s.port}", "ls")
    assert r.returncode == 1 and "login refused: 530" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_pipelined_commands_answered_in_order(ftpd, tree):
    s = ftpd()
    c = Ctl(s.port)
    assert c.reply()[0] == 220
    c.send("USER anonymous\r\nPASS x\r\nTYPE I\r\nSIZE s000.dat\r\nSIZE nope\r\n"
           "SIZE big1.bin\nNOOP\r\nMDTM s001.dat\r\nPWD\r\n")
    codes = [c.reply()[0] for _ in range(9)]
    assert codes == [331, 230, 200, 213, 550, 213, 200, 213, 257]
    c.close()


def test_client_vanishes_mid_transfer(ftpd, tree):
    s = ftpd()
    with open(tree[0] / "huge.bin", "wb") as f:     # sparse: bigger than any socket buffer
        f.truncate(500 << 20)
    before = ftphelp.fd_count(s.pid)
    for _ in range(3):
        c = Ctl(s.port)
        c.login()
        d = c.pasv()
        c.send("RETR huge.bin\r\n")
        assert c.reply()[0] == 150
        assert d.recv(1000)
        for sock in (d, c.s):      # reset both connections
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()
    deadline = time.monotonic() + 10
    while ftphelp.children(s.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ftphelp.children(s.pid) == [], "session processes did not end"
    assert s.alive()
    served_ok(s, tree[1])
    assert ftphelp.fd_count(s.pid) == before
    assert s.logtext().count("FAIL RETR huge.bin") == 3


def test_no_fd_leak_within_a_session(ftpd, tree):
    s = ftpd("--data-timeout", "2")
    c = Ctl(s.port)
    c.login()
    assert c.cmd("NOOP")[0] == 200
    (child,) = ftphelp.children(s.pid)
    before = ftphelp.fd_count(child)
    closed = ftphelp.free_port()
    for _ in range(5):
        assert c.cmd("PASV")[0] == 227          # listener opened ...
        assert c.cmd("EPSV")[0] == 229          # ... replaced
        assert c.cmd("RETR missing")[0] == 550
        d = c.pasv()
        assert c.cmd("RETR outfile")[0] == 550   # refused with a listener pending
        d.close()
        assert c.cmd(f"PORT 127,0,0,1,{closed >> 8},{closed & 255}")[0] == 200
        assert c.cmd("RETR s000.dat")[0] == 425  # connect refused
        d = c.pasv()
        assert c.cmd("LIST")[0] == 150
        while d.recv(65536):
            pass
        assert c.reply()[0] == 226
    assert c.cmd("NOOP")[0] == 200
    assert ftphelp.fd_count(child) == before
    c.close()


def test_client_limit_and_idle_timeout(ftpd, tree):
    s = ftpd("--max-clients", "2", "--idle-timeout", "1")
    a, b = Ctl(s.port), Ctl(s.port)
    assert a.reply()[0] == 220 and b.reply()[0] == 220
    c = Ctl(s.port)
    code, text = c.reply()
    assert code == 421 and "too many" in text
    t0 = time.monotonic()
    assert a.reply()[0] == 421                  # idle timeout
    assert 0.5 < time.monotonic() - t0 < 5
    assert "REFUSED connection: 2 clients already" in s.logtext()
    assert "TIMEOUT after 1 s idle" in s.logtext()


def test_upload_rules(bindir, ftpd, tree, tmp_path):
    s = ftpd()
    c = Ctl(s.port)
    c.login()
    assert c.cmd("STOR x.bin")[0] == 550
    c.close()
    s2 = ftpd("--allow-upload")
    c = Ctl(s2.port)
    c.login()
    c.pasv().close()
    assert c.cmd("STOR ../escape.bin")[0] == 550
    assert c.cmd("STOR outlink/x")[0] == 550
    assert c.cmd("STOR outfile")[0] == 553          # would follow a symlink out
    c.close()
    assert (tmp_path / "outside" / "secret.txt").read_text() == "secret\n"
    assert not (tmp_path / "escape.bin").exists()


def fake_server(script):
    """A one-shot FTP server speaking a canned dialogue (for client errors)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)

    def run():
        conn, _ = srv.accept()
        try:
            script(conn, srv)
        finally:
            time.sleep(0.2)
            conn.close()
            srv.close()

    threading.Thread(target=run, daemon=True).start()
    return srv.getsockname()[1]


def _login(conn):
    f = conn.makefile("rb")
    conn.sendall(b"220 fake\r\n")
    for reply in (b"331 pw\r\n", b"230 ok\r\n", b"200 type\r\n"):
        f.readline()
        conn.sendall(reply)
    return f


def test_ftpc_short_file_is_not_left_complete(bindir, tmp_path):
    def script(conn, srv):
        f = _login(conn)
        f.readline()                                      # PASV
        data = socket.socket()
        data.bind(("127.0.0.1", 0))
        data.listen(1)
        p = data.getsockname()[1]
        conn.sendall(f"227 Entering Passive Mode (127,0,0,1,{p >> 8},{p & 255}).\r\n".encode())
        d, _ = data.accept()
        f.readline()                                      # RETR
        conn.sendall(b"150 Opening BINARY mode data connection for f (100 bytes).\r\n")
        d.sendall(b"x" * 50)
        d.close()
        conn.sendall(b"226 Transfer complete.\r\n")
        data.close()

    port = fake_server(script)
    r = ftphelp.run_ftpc(bindir, "--variant", "tcp", "--out", tmp_path, f"127.0.0.1:{port}",
                         "get", "f")
    assert r.returncode == 1
    assert "short file: 50 of 100 bytes" in r.stderr
    assert not (tmp_path / "f").exists() and (tmp_path / "f.part").exists()


def test_ftpc_timeout_and_lost_connection(bindir, tmp_path):
    def silent(conn, srv):
        _login(conn)
        time.sleep(3)

    port = fake_server(silent)
    t0 = time.monotonic()
    r = ftphelp.run_ftpc(bindir, "--variant", "tcp", "--timeout", "1", f"127.0.0.1:{port}", "ls")
    assert r.returncode == 1 and "timeout" in r.stderr
    assert time.monotonic() - t0 < 3

    def hangup(conn, srv):
        _login(conn)

    port = fake_server(hangup)
    r = ftphelp.run_ftpc(bindir, "--variant", "tcp", f"127.0.0.1:{port}", "ls")
    assert r.returncode == 1 and ("closed by server" in r.stderr or "connection lost" in r.stderr)
