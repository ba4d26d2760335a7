"""ftpc defects, each against a server that provokes it: NLST listing `.` and `..`, mget
over a directory (refused with 550, or with the data connection reset before the 550), a
listing larger than one event line, a file name holding a parenthesised byte count (inside
it or at its end, echoed in a 150 with or without a count of its own); and options given
after HOST, refused before any connection."""
from __future__ import annotations

import json
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ftp import ftphelp
from tests.ftp.fakeftp import Ctl, FakeFtp, serve


def events(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines()]


@pytest.fixture
def server_of(tmp_path: Path) -> Iterator:
    started: list[ftphelp.Ftpd] = []

    def start(bindir: Path, root: Path, *args: str) -> ftphelp.Ftpd:
        s = ftphelp.Ftpd(bindir, root, *args, tmp=tmp_path / "x")
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


def test_mget_skips_dot_and_dotdot_listed_by_the_server(bindir: Path, tmp_path: Path):
    # pure-ftpd's NLST of a directory names `.` and `..` too
    files = {"sub/a.txt": b"alpha\n", "sub/.hidden": b"h\n"}
    listing = b"sub/.\r\nsub/..\r\nsub/.hidden\r\nsub/a.txt\r\n"
    fake = FakeFtp(lambda ctl: serve(ctl, files, listing))
    out = tmp_path / "out"
    out.mkdir()
    r = ftphelp.run_ftpc(bindir, "--variant", "tcp", "--out", out, f"127.0.0.1:{fake.port}",
                         "mget", "sub/*", timeout=30)
    fake.close()
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["a.txt"]     # `*` skips dot files too
    assert (out / "a.txt").read_bytes() == b"alpha\n"
    assert not (tmp_path / "a.txt").exists()


def test_mget_skips_a_directory_and_says_so(bindir: Path, tmp_path: Path, server_of):
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.dat").write_bytes(b"a" * 1000)
    (root / "d").mkdir()
    (root / "d" / "inner").write_bytes(b"i")
    (root / "z.dat").write_bytes(b"z" * 3000)
    s = server_of(bindir, root)
    out = tmp_path / "out"
    out.mkdir()
    r = ftphelp.run_ftpc(bindir, "--variant", "tcp", "--out", out, f"127.0.0.1:{s.port}",
                         "mget", "*", "get", "a.dat", timeout=30)
    ev = events(r.stdout)
    # every file fetched, the session went on after the 550 (the get after the mget ran),
    # and the exit status says that a name was not fetched
    assert r.returncode == 3, r.stderr
    assert "skipped 1 name" in r.stderr
    assert (out / "a.dat").read_bytes() == b"a" * 1000
    assert (out / "z.dat").read_bytes() == b"z" * 3000
    assert sorted(p.name for p in out.iterdir()) == ["a.dat", "z.dat"]   # no d, no d.part
    skipped = [e for e in ev if e["event"] == "skipped"]
    assert [e["file"] for e in skipped] == ["d"]
    assert "550" in skipped[0]["reason"]
    assert [e["file"] for e in ev if e["event"] == "file_done"] == ["a.dat", "z.dat", "a.dat"]
    assert ev[-1] == {**ev[-1], "event": "session_end", "status": "partial"}


def test_get_of_a_missing_file_still_fails(bindir: Path, tmp_path: Path, server_of):
    root = tmp_path / "root"
    root.mkdir()
    s = server_of(bindir, root)
    r = ftphelp.run_ftpc(bindir, "--variant", "tcp", "--out", tmp_path, f"127.0.0.1:{s.port}",
                         "get", "nope", timeout=30)
    assert r.returncode == 1 and "550" in r.stderr
    assert not (tmp_path / "nope").exists() and not (tmp_path / "nope.part").exists()


def test_large_listing_comes_through_whole(bindir: Path, tmp_path: Path, server_of):
    root = tmp_path / "root"
    root.mkdir()
    names = {f"entry-with-a-long-name-{i:05d}.dat" for i in range(5000)}
    for n in names:
        (root / n).touch()
    s = server_of(bindir, root)
    r = ftphelp.run_ftpc(bindir, "--variant", "tcp", f"127.0.0.1:{s.port}", "ls", timeout=60)
    assert r.returncode == 0, r.stderr
    parts = [e for e in events(r.stdout) if e["event"] == "listing"]
    assert len(parts) > 1 and max(len(line) for line in r.stdout.splitlines()) < 65536
    assert not any(p.get("truncated") for p in parts)
    got: list[str] = []
    for p in parts:
        assert p["first"] == len(got) and p["count"] == 5000 and p["cmd"] == "NLST"
        got += p["entries"]
    assert sorted(got) == sorted(names)
    assert parts[0]["bytes"] == sum(len(n) + 2 for n in names) > 100_000


def test_an_entry_too_long_for_an_event_fails_the_command(bindir: Path, tmp_path: Path):
    listing = b"a" * 100_000 + b"\r\n"
    fake = FakeFtp(lambda ctl: serve(ctl, {}, listing))
    r = ftphelp.run_ftpc(bindir, "--variant", "tcp", f"127.0.0.1:{fake.port}", "ls",
                         timeout=30)
    fake.close()
    assert r.returncode == 1 and "too long to report" in r.stderr
    assert not any(e["event"] == "listing" and e.get("truncated") for e in events(r.stdout))


def test_byte_count_is_the_group_that_ends_the_150(bindir: Path, tmp_path: Path, server_of):
    root = tmp_path / "root"
    root.mkdir()
    body = b"0123456789" * 7
    (root / "report (3 bytes).txt").write_bytes(body)
    s = server_of(bindir, root)
    out = tmp_path / "out"
    out.mkdir()
    r = ftphelp.run_ftpc(bindir, "--variant", "tcp", "--out", out, f"127.0.0.1:{s.port}",
                         "get", "report (3 bytes).txt", timeout=30)
    assert r.returncode == 0, r.stderr
    assert (out / "report (3 bytes).txt").read_bytes() == body


@pytest.mark.parametrize("text,size", [
    ("150 Opening BINARY mode data connection for f (3 bytes).txt (10 bytes).", 10),
    ("150 Opening data connection for f (10 bytes)", 10),          # no final '.'
    ("150 Opening data connection for f (3 bytes).txt", None),     # no count at the end
])
def test_150_parsing_rule(bindir: Path, tmp_path: Path, text: str, size: int | None):
    body = b"x" * 10

    def retr(ctl: Ctl, arg: str) -> bool:
        ctl.send_data(body, text)
        return True

    fake = FakeFtp(lambda ctl: serve(ctl, {}, b"", {"RETR": retr}))
    r = ftphelp.run_ftpc(bindir, "--variant", "tcp", "--out", tmp_path, f"127.0.0.1:{fake.port}",
                         "get", "f", timeout=30)
    fake.close()
    assert r.returncode == 0, r.stderr           # without a count: to the connection's end
    assert (tmp_path / "f").read_bytes() == body
    done = [e for e in events(r.stdout) if e["event"] == "file_done"]
    assert done[0]["bytes"] == 10
    del size


def reset_then(final: str, prelim: bool = False, delay: float = 0.2):
    """RETR of `sub`: (a 150 if prelim,) the data connection reset (SO_LINGER 0), then
    `final` on the control connection, as proftpd 1.3.8 answers RETR of a directory (there
    18 us apart; here far enough apart that ftpc certainly reads the reset first)."""
    def retr(ctl: Ctl, arg: str) -> bool:
        if arg != "sub":
            return False
        d = ctl.accept()
        if prelim:
            ctl.reply("150 Opening BINARY mode data connection for sub (1000 bytes).")
            d.sendall(b"x" * 100)
        d.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        d.close()
        time.sleep(delay)
        ctl.reply(final)
        return True
    return retr


def test_mget_skips_a_name_whose_data_connection_is_reset_before_its_550(bindir: Path,
                                                                         tmp_path: Path):
    files = {"a.txt": b"alpha\n", "z.txt": b"zulu\n" * 1000}
    listing = b"a.txt\r\nsub\r\nz.txt\r\n"
    fake = FakeFtp(lambda ctl: serve(ctl, files, listing,
                                     {"RETR": reset_then("550 Not a regular file")}))
    out = tmp_path / "out"
    out.mkdir()
    r = ftphelp.run_ftpc(bindir, "--variant", "tcp", "--out", out, f"127.0.0.1:{fake.port}",
                         "mget", "*", timeout=30)
    fake.close()
    assert r.returncode == 3, r.stderr                 # a skipped name, the rest fetched
    assert "skipped 1 name" in r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["a.txt", "z.txt"]   # no sub.part
    assert (out / "z.txt").read_bytes() == files["z.txt"]
    skipped = [e for e in events(r.stdout) if e["event"] == "skipped"]
    assert [e["file"] for e in skipped] == ["sub"] and "550" in skipped[0]["reason"]


def test_a_reset_data_connection_still_fails_a_transfer_the_server_calls_complete(
        bindir: Path, tmp_path: Path):
    fake = FakeFtp(lambda ctl: serve(ctl, {}, b"",
                                     {"RETR": reset_then("226 Transfer complete.",
                                                         prelim=True)}))
    r = ftphelp.run_ftpc(bindir, "--variant", "tcp", "--out", tmp_path,
                         f"127.0.0.1:{fake.port}", "get", "sub", timeout=30)
    fake.close()
    assert r.returncode == 1, r.stderr
    assert "data connection lost: Connection reset by peer" in r.stderr
    assert not (tmp_path / "sub").exists()                 # never under its final name


@pytest.mark.parametrize("remote,echo,count", [
    ("name (3 bytes)", "name (3 bytes)", None),            # the name ends like a count
    ("name (3 bytes)", "name (3 bytes)", 10000),           # the name, then the real count
    ("d/name (3 bytes)", "name (3 bytes)", None),          # only its last component echoed
    ("(3 bytes)", "(3 bytes)", 10000),                      # a name that is a count
], ids=["no-count", "count", "last-component", "name-is-a-count"])
def test_150_count_is_never_taken_from_the_echoed_name(bindir: Path, tmp_path: Path,
                                                       remote: str, echo: str,
                                                       count: int | None):
    body = b"x" * 10000

    def retr(ctl: Ctl, arg: str) -> bool:
        stated = "" if count is None else f" ({count} bytes)"
        ctl.send_data(body, f"150 Opening BINARY mode data connection for {echo}{stated}.")
        return True

    fake = FakeFtp(lambda ctl: serve(ctl, {}, b"", {"RETR": retr}))
    out = tmp_path / "out"
    out.mkdir()
    r = ftphelp.run_ftpc(bindir, "--variant", "tcp", "--out", out, f"127.0.0.1:{fake.port}",
                         "get", remote, timeout=30)
    fake.close()
    assert r.returncode == 0, r.stderr
    local = remote.rsplit("/", 1)[-1]
    assert [p.name for p in out.iterdir()] == [local]      # whole, no .part left
    assert (out / local).read_bytes() == body


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A listening socket that no one is meant to connect to."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    yield s
    s.close()


def connected_to(s: socket.socket) -> bool:
    s.setblocking(False)
    try:
        conn, _ = s.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


@pytest.mark.parametrize("words,says", [
    (["--user", "u", "--pass", "p", "ls"], "option --user belongs before HOST"),
    (["--user=u", "ls"], "option --user belongs before HOST"),
    (["ls", "--out", "d"], "option --out belongs before HOST"),
    (["get", "f", "--timeout", "5"], "option --timeout belongs before HOST"),
    (["get", "--sndbuf", "65536"], "option --sndbuf belongs before HOST"),
    (["--bogus", "ls"], "unknown command --bogus"),
    (["fetch", "f"], "unknown command fetch"),
    (["ls", "get"], "command get needs an argument"),
], ids=["user", "user=", "after-ls", "after-get", "as-argument", "bogus", "unknown",
        "no-argument"])
def test_a_misplaced_option_is_a_usage_error_before_connecting(bindir: Path, listener,
                                                              words: list[str], says: str):
    host = f"127.0.0.1:{listener.getsockname()[1]}"
    r = ftphelp.run_ftpc(bindir, "--variant", "tcp", "--timeout", "2", host, *words,
                         timeout=30)
    assert r.returncode == 2, r.stderr
    assert f"ftpc: {says}" in r.stderr and "usage: ftpc" in r.stderr
    assert r.stdout == ""                                  # no session_start event
    assert not connected_to(listener)


def test_ls_still_takes_a_directory_and_the_next_command(bindir: Path, tmp_path: Path,
                                                         server_of):
    root = tmp_path / "root"
    (root / "d").mkdir(parents=True)
    (root / "d" / "in.txt").write_bytes(b"in\n")
    (root / "f").write_bytes(b"f\n")
    s = server_of(bindir, root)
    out = tmp_path / "out"
    out.mkdir()
    r = ftphelp.run_ftpc(bindir, "--variant", "tcp", "--out", out, f"127.0.0.1:{s.port}",
                         "ls", "d", "ls", "get", "f", timeout=30)
    assert r.returncode == 0, r.stderr
    listings = [e for e in events(r.stdout) if e["event"] == "listing"]
    assert [sorted(e["entries"]) for e in listings] == [["in.txt"], ["d", "f"]]
    assert (out / "f").read_bytes() == b"f\n"


@pytest.mark.parametrize("options, says", [
    (["--sctp-also-bind", "10.2.1.1"], "--sctp-also-bind needs --bind"),
    (["--bind", "127.0.0.1", *["--sctp-also-peer", "10.2.2.1"] * 5],
     "--sctp-also-peer: at most 4 addresses"),
    (["--sctp-also-peer", "not-an-address!"], "sctp-also-peer"),
    (["--bind", "127.0.0.1", "--sctp-also-bind", "10.2.1.1:21"], "without a port"),
], ids=["also-bind-alone", "five-peers", "bad-address", "with-port"])
def test_multihoming_options_are_checked_before_connecting(bindir: Path, listener,
                                                          options: list[str], says: str):
    host = f"127.0.0.1:{listener.getsockname()[1]}"
    r = ftphelp.run_ftpc(bindir, "--variant", "sctp-ms", *options, host, "ls", timeout=30)
    assert r.returncode == 2, r.stderr
    assert says in r.stderr and "usage: ftpc" in r.stderr
    assert r.stdout == "" and not connected_to(listener)
