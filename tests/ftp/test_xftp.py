"""The xftp variant on the host over TCP (ftp-impl/PROTOCOL.md, xftp): GridFTP's extended block
mode (MODE E) with N parallel data connections that the server opens. ftpc against ftpd,
byte-exact, with the connections counted in a loopback pcap; ftpd's blocks seen raw; the
replies to wrong parallelism, uploads and PASV in MODE E; interop with the Grid Community
Toolkit both ways (globus-url-copy -p N against ftpd, ftpc against globus-gridftp-server), and
with lftp's and aria2's segmented downloads (REST ranges on several sessions); ftpc against a
scripted MODE E server whose blocks overlap, leave a gap or stop short, which must fail loudly,
never as a wrong file under its name."""
from __future__ import annotations

import hashlib
import json
import random
import shutil
import socket
import struct
import subprocess
import time
from pathlib import Path

import pytest

from tests.ftp import ftphelp
from tests.ftp.fakeftp import Ctl as FakeCtl
from tests.ftp.fakeftp import FakeFtp
from tests.ftp.ftphelp import Ctl
from tests.ftp.test_tcp_pipelined import SynCapture, recv_exact

EOF_BIT, EOD_BIT, CLOSE_BIT = 64, 8, 4
HEADER = struct.Struct(">BQQ")
CHUNK = 65536                  # ftpd's default --chunk: the payload of one block
TIMEOUT_S = 2                  # ftpc --timeout against the scripted server


def tool(name: str) -> str:
    path = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/bin")
    assert path, f"{name} is required (make setup-test installs it)"
    return path


def read_blocks(sock: socket.socket) -> list[tuple[int, int, int, bytes]]:
    """Every block one data connection carries, to its EOD: (descriptor, count, offset,
    payload)."""
    blocks = []
    while True:
        desc, count, offset = HEADER.unpack(recv_exact(sock, HEADER.size))
        blocks.append((desc, count, offset, recv_exact(sock, count)))
        if desc & EOD_BIT:
            return blocks


def port_arg(listener: socket.socket) -> str:
    host, port = listener.getsockname()
    return ",".join(host.split(".") + [str(port >> 8), str(port & 255)])


def events(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line]


@pytest.fixture
def xftp_tree(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """small/ 100 x 10 kB and big/ 3 x 1 MB, as the issue's acceptance names them."""
    rng = random.Random(11)
    root = tmp_path / "root"
    sums = {}
    for folder, count, size in (("small", 100, 10_000), ("big", 3, 1_000_000)):
        (root / folder).mkdir(parents=True)
        for i in range(count):
            p = root / folder / f"{folder[0]}{i:03d}.dat"
            p.write_bytes(rng.randbytes(size))
            sums[f"{folder}/{p.name}"] = ftphelp.sha256(p)
    return root, sums


def test_mget_is_byte_exact_over_n_connections_per_file(bindir, xftp_tree, tmp_path):
    root, sums = xftp_tree
    out = tmp_path / "out"
    out.mkdir()
    # a loopback address of this test's own: the capture counts only its connections
    me = f"127.0.0.{random.randrange(100, 250)}"
    server = ftphelp.Ftpd(bindir, root, tmp=tmp_path / "x")
    cap = SynCapture(tmp_path / "syn.pcap", "127.0.0.1", dst=me)
    try:
        r = ftphelp.run_ftpc(bindir, "--variant", "xftp", "--parallel", "4", "--bind", me,
                             "--out", out, f"127.0.0.1:{server.port}", "mget", "small/*.dat",
                             "mget", "big/*.dat")
    finally:
        syns = cap.stop()
        log = server.logtext()
        server.stop()
    assert r.returncode == 0, r.stderr
    for name, digest in sums.items():
        assert ftphelp.sha256(out / name.split("/")[1]) == digest, name
    assert len(list(out.iterdir())) == 103
    ev = events(r.stdout)
    conns = [e["connections"] for e in ev if e["event"] == "data_connections"]
    assert conns == [4] * 105, "two listings and 103 files, each over 4 connections"
    # the server opens the data connections (MODE E: the sender connects), 4 per transfer
    assert syns == 4 * 105
    kinds = [e["event"] for e in ev]
    assert kinds.count("file_done") == 103 and "last_226" in kinds
    assert ev[-1] == {**ev[-1], "event": "session_end", "status": "ok"}
    cmds = [e["cmd"] for e in ev if e["event"] == "command"]
    assert cmds.count("MODE") == 1 and cmds.count("OPTS") == 1 and cmds.count("PORT") == 105
    assert log.count("in MODE E over 4 connections") == 103


def login_ext(c: Ctl, n: int) -> None:
    c.login()
    assert c.cmd("TYPE I")[0] == 200
    assert c.cmd("MODE E")[0] == 200
    code, text = c.cmd(f"OPTS RETR Parallelism={n},{n},{n};")
    assert code == 200, text


def test_blocks_on_the_wire_tile_the_file(ftpd, tree):
    root, sums = tree
    s = ftpd()
    c = Ctl(s.port)
    login_ext(c, 3)
    body = (root / "big1.bin").read_bytes()
    listener = socket.create_server(("127.0.0.1", 0), backlog=8)
    assert c.cmd(f"PORT {port_arg(listener)}")[0] == 200
    code, text = c.cmd("RETR big1.bin")
    assert code == 150 and "(3)" in text and f"({len(body)} bytes)" in text, text
    listener.settimeout(10)
    conns = [listener.accept()[0] for _ in range(3)]
    per_conn = [read_blocks(d) for d in conns]
    assert c.reply()[0] == 226
    for d in conns:
        assert d.recv(1) == b""                  # EOD with the close bit: the sender closes
        d.close()
    got = bytearray(len(body))
    covered = 0
    for blocks in per_conn:
        *data, eod = blocks
        assert eod[0] & (EOD_BIT | CLOSE_BIT) == EOD_BIT | CLOSE_BIT and eod[1] == 0
        for desc, count, offset, payload in data:
            assert desc == 0 and 0 < count <= CHUNK and len(payload) == count
            got[offset:offset + count] = payload
            covered += count
    eofs = [b[-1] for b in per_conn if b[-1][0] & EOF_BIT]
    assert len(eofs) == 1 and eofs[0][2] == 3, "one EOF, its offset field the EOD count"
    assert covered == len(body) and hashlib.sha256(got).hexdigest() == sums["big1.bin"]
    # every connection carried a share: the file is striped, not sent on one
    assert all(len(b) > 1 for b in per_conn)
    # a REST offset: blocks carry absolute file offsets from there
    assert c.cmd("REST 999990")[0] == 350
    assert c.cmd(f"PORT {port_arg(listener)}")[0] == 200
    assert c.cmd("RETR big0.bin")[0] == 150
    conns = [listener.accept()[0] for _ in range(3)]
    data = [blk for d in conns for blk in read_blocks(d) if blk[1]]
    assert c.reply()[0] == 226
    assert [(o, p) for _, _, o, p in data] == [(999_990,
                                                (root / "big0.bin").read_bytes()[-10:])]
    listener.close()
    c.close()


def test_mode_e_replies(ftpd, tree):
    s = ftpd("--max-parallel", "6", "--allow-upload")
    c = Ctl(s.port)
    assert c.reply()[0] == 220
    assert c.cmd("OPTS RETR Parallelism=2,2,2;")[0] == 501     # before login
    assert c.cmd("USER anonymous")[0] == 331
    assert c.cmd("PASS x@")[0] == 230
    for wrong in ("Parallelism=7,7,7;", "Parallelism=0;", "Parallelism=4,5,6;",
                  "Parallelism=;", "Parallelism=4,4,4,4;", "Parallelism=4;x",
                  "Parallelism=99999999999999999999;", "StripeLayout=Blocked;",
                  "Parallelism=-1;"):
        code, text = c.cmd(f"OPTS RETR {wrong}")
        assert code == 501, (wrong, text)
    assert c.cmd("OPTS RETR Parallelism=6,1,8;")[0] == 200
    assert c.cmd("OPTS RETR parallelism=2")[0] == 200
    assert c.cmd("MODE e")[0] == 200
    assert c.cmd("STOR up.dat")[0] == 504                     # downloads only in MODE E
    assert c.cmd("PASV")[0] == 227
    code, text = c.cmd("RETR big0.bin")                       # the sender must connect
    assert code == 425 and "PORT" in text, text
    assert c.cmd("MODE S")[0] == 200
    assert c.cmd("QUIT")[0] == 221
    c.close()
    assert s.alive() and "REFUSED OPTS RETR Parallelism=7" in s.logtext()


def test_a_client_that_never_reads_ends_at_the_data_timeout(ftpd, tree):
    """Blocks wait in full send buffers: no progress for --data-timeout ends the transfer with
    426, the connections are reset and the session goes on."""
    s = ftpd("--data-timeout", "2")
    c = Ctl(s.port)
    login_ext(c, 2)
    listener = socket.create_server(("127.0.0.1", 0), backlog=8)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    assert c.cmd(f"PORT {port_arg(listener)}")[0] == 200
    assert c.cmd("RETR big1.bin")[0] == 150
    conns = [listener.accept()[0] for _ in range(2)]
    started = time.monotonic()
    assert c.reply()[0] == 426
    assert time.monotonic() - started < 10
    assert c.cmd("NOOP")[0] == 200
    for d in conns:
        d.close()
    listener.close()
    c.close()
    assert s.alive()


def test_globus_url_copy_against_ftpd(bindir, tree, tmp_path):
    root, sums = tree
    server = ftphelp.Ftpd(bindir, root, tmp=tmp_path / "x")
    try:
        for n in (1, 4):
            dest = tmp_path / f"dl-{n}" / "big1.bin"
            dest.parent.mkdir()
            r = subprocess.run([tool("globus-url-copy"), "-p", str(n), "-fast",
                                f"ftp://127.0.0.1:{server.port}/big1.bin", f"file://{dest}"],
                               capture_output=True, text=True, timeout=60)
            assert r.returncode == 0, r.stdout + r.stderr
            assert ftphelp.sha256(dest) == sums["big1.bin"], n
        log = server.logtext()
    finally:
        server.stop()
    assert "OK RETR /big1.bin 3000000 bytes in MODE E over 4 connections" in log


@pytest.fixture
def gridftp_server(tmp_path):
    """globus-gridftp-server on a free loopback port, anonymous, no data channel security."""
    port = ftphelp.free_port()
    proc = subprocess.Popen(
        [tool("globus-gridftp-server"), "-aa", "-anonymous-user", "nobody", "-p", str(port),
         "-control-interface", "127.0.0.1", "-data-interface", "127.0.0.1", "-s",
         "-l", str(tmp_path / "gridftp.log")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.1)
    yield port
    proc.terminate()
    proc.wait(10)
    # -s forks a process per session, in the server's process group
    subprocess.run(["pkill", "-f", f"globus-gridftp-server.* -p {port} "], check=False)


def test_ftpc_xftp_against_the_gridftp_server(bindir, tree, tmp_path, gridftp_server):
    root, sums = tree
    ftphelp.reachable_by_others(root)
    for n in (1, 4):
        out = tmp_path / f"out-{n}"
        out.mkdir()
        out.chmod(0o777)
        r = ftphelp.run_ftpc(bindir, "--variant", "xftp", "--parallel", str(n), "--out", out,
                             f"127.0.0.1:{gridftp_server}", "get", str(root / "big1.bin"),
                             "mget", str(root / "s00*.dat"))
        assert r.returncode == 0, r.stderr
        assert ftphelp.sha256(out / "big1.bin") == sums["big1.bin"]
        for name in (f"s00{i}.dat" for i in range(5)):
            assert ftphelp.sha256(out / name) == sums[name], name
        conns = {e["connections"] for e in events(r.stdout) if e["event"] == "data_connections"}
        assert conns == {n}, (n, conns)


def test_segmented_downloads_of_lftp_and_aria2(bindir, tree, tmp_path):
    """REST ranges of one file on several sessions at once, stitched by the client. Each
    connection is held to 1 MB/s, so the segments run side by side even on loopback (where
    the first session would otherwise take the whole file before the others start)."""
    root, sums = tree
    server = ftphelp.Ftpd(bindir, root, tmp=tmp_path / "x")
    url = f"ftp://127.0.0.1:{server.port}/big1.bin"
    clients = {
        "lftp": [tool("lftp"), "-e", "set net:max-retries 1; set net:limit-rate 1M; "
                 f"set pget:min-chunk-size 64k; pget -n 4 {url} -o {tmp_path / 'lftp.bin'}; "
                 "quit"],
        "aria2": [tool("aria2c"), "-q", "-x", "4", "-s", "4", "--min-split-size=1M",
                  "--max-download-limit=4M", "-d", str(tmp_path), "-o", "aria2.bin", url]}
    sessions = {}
    try:
        for name, argv in clients.items():
            before = server.logtext().count("CONNECT tcp")
            r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
            assert r.returncode == 0, (name, r.stdout + r.stderr)
            assert ftphelp.sha256(tmp_path / f"{name}.bin") == sums["big1.bin"], name
            sessions[name] = server.logtext().count("CONNECT tcp") - before
    finally:
        server.stop()
    assert all(n >= 3 for n in sessions.values()), sessions


# -- ftpc against a scripted MODE E server ---------------------------------------------------
BODY = random.Random(5).randbytes(200_000)


def ext_block(payload: bytes, offset: int, desc: int = 0) -> bytes:
    return HEADER.pack(desc, len(payload), offset) + payload


def eod(count: int = 0) -> bytes:
    return HEADER.pack(EOD_BIT | CLOSE_BIT | (EOF_BIT if count else 0), 0, count)


def script_for(streams: list[bytes], announce: int = len(BODY)):
    """A server that answers MODE E, the parallelism and PORT, then sends `streams` (one per
    data connection it opens) for any RETR."""
    def script(ctl: FakeCtl) -> None:
        ctl.login()
        port = None
        while True:
            verb, arg = ctl.command()
            if verb in ("", "QUIT"):
                return
            if verb in ("MODE", "OPTS"):
                ctl.reply("200 ok")
            elif verb == "PORT":
                nums = [int(x) for x in arg.split(",")]
                port = nums[4] * 256 + nums[5]
                ctl.reply("200 PORT ok")
            elif verb == "RETR":
                conns = [socket.create_connection(("127.0.0.1", port)) for _ in streams]
                ctl.reply(f"150 Opening BINARY mode data connections for {arg} "
                          f"({announce} bytes).")
                for d, payload in zip(conns, streams, strict=True):
                    d.sendall(payload)
                    d.close()
                ctl.reply("226 Transfer complete.")
            else:
                ctl.reply("502 no")
    return script


HALF = len(BODY) // 2
HOSTILE = {
    "overlapping blocks": [ext_block(BODY[:HALF + 10], 0) + eod(2),
                           ext_block(BODY[HALF:], HALF) + eod()],
    "a gap": [ext_block(BODY[:HALF], 0) + eod(2), ext_block(BODY[HALF + 1:], HALF + 1) + eod()],
    "a connection closed before its EOD": [ext_block(BODY[:HALF], 0) + eod(2),
                                           ext_block(BODY[HALF:], HALF)],
    "a block cut short": [ext_block(BODY[:HALF], 0) + eod(2),
                          ext_block(BODY[HALF:], HALF)[:-5]],
    "more EODs than the EOF counts": [ext_block(BODY[:HALF], 0) + eod(1),
                                      ext_block(BODY[HALF:], HALF) + eod()],
    "two EOFs": [ext_block(BODY[:HALF], 0) + eod(2), ext_block(BODY[HALF:], HALF) + eod(2)],
    "an error block": [ext_block(BODY[:HALF], 0, desc=32) + eod(2),
                       ext_block(BODY[HALF:], HALF) + eod()],
    "bytes after the EOD": [ext_block(BODY[:HALF], 0) + eod(2) + b"x",
                            ext_block(BODY[HALF:], HALF) + eod()],
    "an EOF counting 10^6 connections": [ext_block(BODY, 0) + eod(10**6)],
    "data inside an EOD": [HEADER.pack(EOD_BIT | EOF_BIT, 4, 1) + b"abcd"],
}


@pytest.mark.parametrize("fault", sorted(HOSTILE))
def test_ftpc_refuses_a_hostile_mode_e_server(bindir, tmp_path, fault):
    fake = FakeFtp(script_for(HOSTILE[fault]))
    out = tmp_path / "out"
    out.mkdir()
    try:
        r = ftphelp.run_ftpc(bindir, "--variant", "xftp", "--parallel", "2", "--timeout",
                             str(TIMEOUT_S), "--out", out, f"127.0.0.1:{fake.port}",
                             "get", "f.bin", timeout=30)
    finally:
        fake.close()
    assert r.returncode != 0, (fault, r.stdout)
    assert not (out / "f.bin").exists(), fault         # never a wrong file under its name
    assert r.stderr.strip(), fault
    assert not fake.errors, fake.errors


def test_ftpc_takes_blocks_in_any_order_on_any_connection(bindir, tmp_path):
    """The honest counterpart: blocks reversed and interleaved across three connections."""
    pieces = [(o, BODY[o:o + 30_000]) for o in range(0, len(BODY), 30_000)]
    streams = [b"".join(ext_block(p, o) for o, p in reversed(pieces[i::3])) for i in range(3)]
    streams = [s + eod(3 if i == 1 else 0) for i, s in enumerate(streams)]
    fake = FakeFtp(script_for(streams))
    out = tmp_path / "out"
    out.mkdir()
    try:
        r = ftphelp.run_ftpc(bindir, "--variant", "xftp", "--parallel", "3", "--timeout",
                             str(TIMEOUT_S), "--out", out, f"127.0.0.1:{fake.port}",
                             "get", "f.bin", timeout=30)
    finally:
        fake.close()
    assert r.returncode == 0, r.stderr
    assert (out / "f.bin").read_bytes() == BODY
