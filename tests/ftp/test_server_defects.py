"""ftpd defects of issue #19: REST beyond the end for STOR, refused uploads leaving files
behind, the data stall limit on sendfile, ABOR mid-transfer, a session whose client left
while ftpd waited for the PASV connection, and the per-address session limit."""
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
