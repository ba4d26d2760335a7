import re
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.ftp import ftphelp


@pytest.fixture
def tmp_path(request):
    """A folder of the test's own that every user can reach, in place of pytest's: ftpd
    started as root serves as `nobody` (ftp-impl/TRUST.md), and pytest's folders are 0700 -
    its base folder is even reset to 0700 whenever another pytest session starts on the
    machine, so opening it up would not last."""
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", request.node.name)[:48]
    path = Path(tempfile.mkdtemp(prefix=f"ftp-{name}-", dir="/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def built():
    ftphelp.build_all()
    return True


@pytest.fixture(scope="session", params=ftphelp.BUILDS)
def bindir(request, built):
    return ftphelp.IMPL / request.param


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "root"
    sums = ftphelp.make_tree(root, nsmall=5, big=(1_000_000, 3_000_000))
    (root / "sub").mkdir()
    (root / "sub" / "inner.txt").write_text("inner\n")
    sums["sub/inner.txt"] = ftphelp.sha256(root / "sub" / "inner.txt")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    (root / "outlink").symlink_to(outside)
    (root / "outfile").symlink_to(outside / "secret.txt")
    (root / "inlink").symlink_to(root / "sub" / "inner.txt")
    return root, sums


@pytest.fixture
def ftpd(bindir, tree, tmp_path):
    servers = []

    def start(*args):
        s = ftphelp.Ftpd(bindir, tree[0], *args, tmp=tmp_path / "x")
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.stop()
