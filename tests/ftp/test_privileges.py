"""ftpd started as root gives root up after binding (ftp-impl/TRUST.md): every process of
it runs as the --run-as user (nobody by default), with that user's group only; a root it
cannot read, or a user that does not exist, stops it before it serves anything."""
from __future__ import annotations

import os
import pwd
import subprocess
from pathlib import Path

from tests.ftp import ftphelp
from tests.ftp.ftphelp import Ctl


def ids(pid: int) -> tuple[list[int], list[int], list[int]]:
    """(real/effective/saved/fs uids, the same gids, supplementary groups) of a process."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text()
                  .splitlines())
    return ([int(x) for x in fields["Uid"].split()], [int(x) for x in fields["Gid"].split()],
            [int(x) for x in fields["Groups"].split()])


def test_every_process_runs_as_nobody(ftpd, tree):
    assert os.geteuid() == 0, "the tests run as root, as `make test` does"
    nobody = pwd.getpwnam("nobody")
    s = ftpd()
    c = Ctl(s.port)
    c.login()
    (child,) = ftphelp.children(s.pid)
    for pid in (s.pid, child):
        uids, gids, groups = ids(pid)
        assert uids == [nobody.pw_uid] * 4
        assert gids == [nobody.pw_gid] * 4
        assert groups == [nobody.pw_gid]
    assert c.cmd("SIZE s000.dat") == (213, "10000")   # the tree is still served
    c.close()
    assert f"RUN as nobody (uid {nobody.pw_uid}" in s.logtext()


def test_run_as_another_user_and_root_kept_on_purpose(ftpd, tree):
    daemon = pwd.getpwnam("daemon")
    ftphelp.reachable_by_others(tree[0])
    s = ftpd("--run-as", "daemon")
    assert ids(s.pid)[0] == [daemon.pw_uid] * 4
    kept = ftpd("--run-as", "root")
    assert ids(kept.pid)[0] == [0] * 4
    assert "RUN as root: privileges kept" in kept.logtext()


def start(bindir: Path, root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(bindir / "ftpd"), "--root", str(root), "--tcp", "127.0.0.1:0",
                           *args], capture_output=True, text=True, timeout=20,
                          env=dict(os.environ, **ftphelp.SAN_ENV))


def test_an_unreadable_root_or_unknown_user_stops_ftpd(bindir: Path, tmp_path: Path):
    private = tmp_path / "private"
    (private / "root").mkdir(parents=True)
    private.chmod(0o700)
    r = start(bindir, private / "root")
    assert r.returncode == 2
    assert "is not readable by nobody after the privilege drop" in r.stderr
    assert "ready" not in r.stdout
    r = start(bindir, private / "root", "--run-as", "no-such-user-here")
    assert r.returncode == 2 and "no such user" in r.stderr


def test_uploads_need_a_folder_the_user_can_write(ftpd, tree):
    root = tree[0]
    ftphelp.reachable_by_others(root)
    s = ftpd("--allow-upload", "--run-as", "nobody")     # the tree stays root's own
    c = Ctl(s.port)
    c.login()
    d = c.pasv()
    assert c.cmd("STOR new.bin")[0] == 553
    d.close()
    assert not (root / "new.bin").exists()
    c.close()
