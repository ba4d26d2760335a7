"""ftpc defects of issue #19, each against a server that provokes it: NLST listing `.`
and `..`, mget over a directory, a listing larger than one event line, and a file name
holding a parenthesised byte count."""
from __future__ import annotations

import json
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
