"""A data connection that does not open, on loopback: ftpd answers 425 when no connection
comes within --open-timeout after a passive RETR, NLST or LIST, and serves the session on;
ftpc retries a transfer on a new data connection (PASV again) after a 425 that came before
any 150, or after no 150 within its own --open-timeout (then ABOR first), says so in a `retry`
event, and gives up with a clear error after --open-retries. Against a hand-made client
(ftphelp.Ctl) and a scripted server (fakeftp.py). The handshake whose last ACK is lost, in a
network namespace: test_lost_handshake_ack.py."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.ftp import ftphelp
from tests.ftp.fakeftp import Ctl, FakeFtp, serve
from tests.ftp.ftphelp import Ctl as ClientCtl

OPEN_S = 2          # ftpd's --open-timeout here
SLACK_S = 1.5       # a loaded machine's delay on top of it
BODY = bytes(range(256)) * 20


def events(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines()]


@pytest.mark.parametrize("command", ["RETR s000.dat", "NLST", "LIST"])
def test_ftpd_answers_425_when_no_data_connection_comes(ftpd, command):
    s = ftpd("--open-timeout", str(OPEN_S), "--data-timeout", "30")
    c = ClientCtl(s.port, timeout=30)
    c.login()
    assert c.cmd("PASV")[0] == 227                    # announced, never connected to
    t0 = time.monotonic()
    code, text = c.cmd(command)
    took = time.monotonic() - t0
    assert (code, text) == (425, f"No data connection within {OPEN_S} s."), text
    assert OPEN_S - 0.1 <= took < OPEN_S + SLACK_S, took     # the open limit, not the data one
    assert c.cmd("NOOP")[0] == 200                    # the session goes on
    d = c.pasv()                                      # and a new data connection works
    assert c.cmd("RETR s000.dat")[0] == 150
    got = b""
    while chunk := d.recv(65536):
        got += chunk
    assert len(got) == 10_000 and c.reply()[0] == 226
    c.close()
    log = s.logtext()
    assert f"LIMITS open-timeout {OPEN_S} s, data-timeout 30 s" in log
    assert f"TIMEOUT no data connection within {OPEN_S} s (open limit)" in log


def run_against(bindir: Path, tmp_path: Path, retr, *options: str
                ) -> tuple[object, list[dict], float, Path, list[str]]:
    """ftpc (tcp) fetching f.bin from a scripted server whose RETR is `retr(ctl, arg, n)` (n:
    the attempt, from 1; True: answered), else honest: (result, events, seconds, out, the
    commands the server read)."""
    out = tmp_path / "out"
    out.mkdir()
    seen: list[str] = []
    attempts = {"n": 0}

    class Recording(Ctl):
        def command(self) -> tuple[str, str]:
            verb, arg = super().command()
            seen.append(verb)
            return verb, arg

    def on_retr(ctl: Ctl, arg: str) -> bool:
        attempts["n"] += 1
        return retr(ctl, arg, attempts["n"])

    fake = FakeFtp(lambda ctl: serve(Recording(ctl.conn), {"f.bin": BODY}, b"f.bin\r\n",
                                     {"RETR": on_retr}))
    t0 = time.monotonic()
    r = ftphelp.run_ftpc(bindir, "--variant", "tcp", "--timeout", "20", "--out", out,
                         *options, f"127.0.0.1:{fake.port}", "get", "f.bin", timeout=60)
    took = time.monotonic() - t0
    fake.close()
    return r, events(r.stdout), took, out, seen


def refuse(ctl: Ctl) -> bool:
    """A 425 before any 150, as ftpd's open limit answers."""
    if ctl.data_listener is not None:
        ctl.data_listener.close()
        ctl.data_listener = None
    ctl.reply("425 No data connection within 1 s.")
    return True


def test_ftpc_retries_after_a_425(bindir: Path, tmp_path: Path):
    r, evs, took, out, seen = run_against(
        bindir, tmp_path, lambda ctl, arg, n: refuse(ctl) if n == 1 else False)
    assert r.returncode == 0, r.stderr
    assert (out / "f.bin").read_bytes() == BODY
    assert seen[seen.index("TYPE") + 1:] == ["PASV", "RETR", "PASV", "RETR", "QUIT"]
    (retry,) = [e for e in evs if e["event"] == "retry"]
    assert (retry["cmd"], retry["arg"], retry["attempt"]) == ("RETR", "f.bin", 2)
    assert "425 No data connection" in retry["reason"] and 0 <= retry["lost_s"] < 1
    start = evs[0]
    assert start["event"] == "session_start"
    assert (start["open_timeout_s"], start["open_retries"]) == (380, 2)   # the defaults
    assert evs[-1] == {**evs[-1], "event": "session_end", "status": "ok"}


def test_ftpc_gives_up_after_its_retries(bindir: Path, tmp_path: Path):
    r, evs, took, out, seen = run_against(bindir, tmp_path, lambda ctl, arg, n: refuse(ctl),
                                          "--open-retries", "1")
    assert r.returncode == 1
    assert "ftpc: RETR f.bin: no data connection in 2 attempts: RETR f.bin failed: 425" \
        in r.stderr, r.stderr
    assert seen.count("PASV") == seen.count("RETR") == 2
    assert [e["attempt"] for e in evs if e["event"] == "retry"] == [2]
    assert list(out.iterdir()) == []                  # no file, no .part
    assert took < 10


def test_ftpc_does_not_retry_with_open_retries_0(bindir: Path, tmp_path: Path):
    r, evs, took, out, seen = run_against(bindir, tmp_path, lambda ctl, arg, n: refuse(ctl),
                                          "--open-retries", "0")
    assert r.returncode == 1 and "in 1 attempts" in r.stderr, r.stderr
    assert seen.count("RETR") == 1 and not [e for e in evs if e["event"] == "retry"]


def test_ftpc_aborts_and_retries_when_no_150_comes_within_its_limit(bindir: Path,
                                                                     tmp_path: Path):
    """The data connection is open at the client, the server never answers RETR (it never
    saw the connection): after --open-timeout ftpc resets it, sends ABOR, reads the RETR's
    425 and the ABOR's 226, and retries."""
    def silent(ctl: Ctl, arg: str, n: int) -> bool:
        if n > 1:
            return False
        ctl.accept().close()
        verb, _ = ctl.command()                       # nothing until the client's ABOR
        assert verb == "ABOR", verb
        ctl.reply("425 No data connection.")
        ctl.reply("226 Abort successful.")
        return True

    r, evs, took, out, seen = run_against(bindir, tmp_path, silent, "--open-timeout", "1")
    assert r.returncode == 0, r.stderr
    assert (out / "f.bin").read_bytes() == BODY
    assert seen[seen.index("TYPE") + 1:] == ["PASV", "RETR", "ABOR", "PASV", "RETR", "QUIT"]
    (retry,) = [e for e in evs if e["event"] == "retry"]
    assert retry["reason"] == "no reply to RETR f.bin within 1 s (open limit)"
    assert 1 <= retry["lost_s"] < 1 + SLACK_S
    replies = [(e["code"], e["cmd"]) for e in evs if e["event"] == "reply"]
    assert replies[4:] == [(227, "PASV"), (425, "RETR"), (226, "ABOR"), (227, "PASV"),
                           (150, "RETR"), (226, "RETR"), (221, "QUIT")], replies

