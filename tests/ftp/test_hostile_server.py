"""ftpc against a hostile or broken server (tests/ftp/fakeftp.py on loopback): replies cut
at every byte are read right; everything else is refused with a clear error and exit 1
within a bounded time, nothing is written outside the output folder, and no partial file
ever carries its final name."""
from __future__ import annotations

import socket
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.ftp import ftphelp
from tests.ftp.fakeftp import Ctl, FakeFtp, serve

TIMEOUT_S = 2          # ftpc --timeout: its longest wait without progress
BOUND_S = 8            # every hostile session is over within this


def run_against(bindir: Path, box: Path, script: Callable[[Ctl], None],
                *commands: str) -> tuple[int, str, float, Path]:
    """ftpc (tcp) against the scripted server, downloading into box/out:
    (exit status, stderr, seconds, out)."""
    out = box / "out"
    out.mkdir(parents=True)
    fake = FakeFtp(script)
    t0 = time.monotonic()
    r = ftphelp.run_ftpc(bindir, "--variant", "tcp", "--timeout", TIMEOUT_S, "--out", out,
                         f"127.0.0.1:{fake.port}", *commands, timeout=60)
    took = time.monotonic() - t0
    fake.close()
    return r.returncode, r.stderr, took, out


def only_inside(box: Path, out: Path, allowed: set[str]) -> None:
    """Nothing in the box but the output folder, and in it only `allowed` names."""
    assert [p.name for p in box.iterdir()] == ["out"]
    assert {p.name for p in out.iterdir()} <= allowed, list(out.iterdir())
    assert not any(p.is_dir() or p.is_symlink() for p in out.iterdir())


class ByteByByte(Ctl):
    """Every reply goes out one byte per segment."""

    def send(self, data: bytes | str) -> None:
        raw = data.encode() if isinstance(data, str) else data
        self.conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for i in range(len(raw)):
            self.conn.send(raw[i:i + 1])
            time.sleep(0.0005)


def test_replies_split_at_every_byte_are_read_right(bindir: Path, tmp_path: Path):
    files = {"a.bin": bytes(range(256)) * 40, "b.bin": b"b" * 5000}

    def script(ctl: Ctl) -> None:
        split = ByteByByte(ctl.conn)
        split.reply("220-first line of a greeting")
        split.reply(" a line that is no reply code")
        serve(split, files, b"a.bin\r\nb.bin\r\n")

    code, err, took, out = run_against(bindir, tmp_path / "box", script, "mget", "*")
    assert code == 0, err
    assert (out / "a.bin").read_bytes() == files["a.bin"]
    assert (out / "b.bin").read_bytes() == files["b.bin"]


def endless_lines(slow: bool) -> Callable[[Ctl], None]:
    def script(ctl: Ctl) -> None:
        ctl.reply("220-hello")
        while True:
            ctl.reply("220-and more")
            if slow:
                time.sleep(0.1)
    return script


@pytest.mark.parametrize("slow,reason", [
    (False, "reply of more than 1000 lines refused"),
    (True, "timeout waiting"),
])
def test_endless_multiline_reply(bindir: Path, tmp_path: Path, slow: bool, reason: str):
    code, err, took, out = run_against(bindir, tmp_path / "box", endless_lines(slow), "ls")
    assert code == 1 and reason in err, err
    assert took < BOUND_S


def retr_with(announce: int | None, payload: bytes, close_data: bool = True,
              final: bool = True) -> Callable[[Ctl], None]:
    def retr(ctl: Ctl, arg: str) -> bool:
        d = ctl.accept()
        count = "" if announce is None else f" ({announce} bytes)"
        ctl.reply(f"150 Opening BINARY mode data connection for {arg}{count}.")
        d.sendall(payload)
        if close_data:
            d.close()
        if final:
            ctl.reply("226 Transfer complete.")
        if not close_data:
            time.sleep(BOUND_S)
            d.close()
        return True

    return lambda ctl: serve(ctl, {}, b"", {"RETR": retr})


@pytest.mark.parametrize("announce,sent,reason", [
    (5000, 3000, "f: short file: 3000 of 5000 bytes"),
    (3000, 5000, "f: long file: 5000 of 3000 bytes"),
])
def test_150_count_unlike_the_bytes_sent(bindir: Path, tmp_path: Path, announce: int,
                                         sent: int, reason: str):
    code, err, took, out = run_against(bindir, tmp_path / "box",
                                       retr_with(announce, b"x" * sent), "get", "f")
    assert code == 1 and reason in err, err
    assert took < BOUND_S
    only_inside(tmp_path / "box", out, {"f.part"})      # never under the final name


def test_data_connection_that_never_closes(bindir: Path, tmp_path: Path):
    code, err, took, out = run_against(
        bindir, tmp_path / "box", retr_with(None, b"x" * 1000, close_data=False, final=False),
        "get", "f")
    assert code == 1 and "timeout during RETR f" in err, err
    assert TIMEOUT_S <= took < BOUND_S
    only_inside(tmp_path / "box", out, {"f.part"})


@pytest.mark.parametrize("host,port,reason", [
    ("10,1,2,3", None, "227 names another host than the server"),
    ("127,0,0,1", 0, "passive reply names port 0"),
])
def test_227_elsewhere_is_refused(bindir: Path, tmp_path: Path, host: str, port: int | None,
                                  reason: str):
    def pasv(ctl: Ctl, arg: str) -> bool:
        ctl.pasv(host=host, port=port)
        return True

    code, err, took, out = run_against(
        bindir, tmp_path / "box", lambda ctl: serve(ctl, {"f": b"data"}, b"", {"PASV": pasv}),
        "get", "f")
    assert code == 1 and reason in err, err
    assert took < BOUND_S
    only_inside(tmp_path / "box", out, set())


@pytest.mark.parametrize("entry,reason", [
    (b"../escape.txt", "NLST entry ../escape.txt refused"),
    (b"sub/../../escape.txt", "refused: a path outside the listed folder"),
    (b"/etc/escape.txt", "NLST entry /etc/escape.txt refused"),
    (b"esc\x00ape.txt", "NLST listing holds NUL bytes"),
    (b"esc\rape.txt", "NLST entry with a control character refused"),
    (b"e" * 100_000 + b".txt", "NLST entry too long (100004 bytes)"),
], ids=["dotdot", "climbs", "absolute", "nul", "cr", "long"])
def test_hostile_listing_names(bindir: Path, tmp_path: Path, entry: bytes, reason: str):
    files = {"good.txt": b"good\n", entry.decode("latin-1"): b"evil\n",
             "escape.txt": b"evil\n", "passwd": b"evil\n"}
    listing = b"good.txt\r\n" + entry + b"\r\n"
    code, err, took, out = run_against(
        bindir, tmp_path / "box", lambda ctl: serve(ctl, files, listing), "mget", "*")
    assert code == 1 and reason in err, err
    assert took < BOUND_S
    only_inside(tmp_path / "box", out, set())           # refused before any RETR
    assert not (tmp_path / "escape.txt").exists()


@pytest.mark.parametrize("data,reason", [
    (b"220 no line end, then silence", "timeout waiting"),
    (b"220 " + b"x" * 1_000_000, "reply line too long"),
], ids=["silence", "endless-line"])
def test_replies_without_a_line_end(bindir: Path, tmp_path: Path, data: bytes, reason: str):
    def script(ctl: Ctl) -> None:
        ctl.send(data)
        time.sleep(BOUND_S)

    code, err, took, out = run_against(bindir, tmp_path / "box", script, "ls")
    assert code == 1 and reason in err, err
    assert took < BOUND_S
