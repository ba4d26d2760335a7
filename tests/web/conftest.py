import pytest

from tests.ftp import ftphelp
from tests.ftp.conftest import tmp_path  # noqa: F401  (a folder every user can reach)
from tests.web import httphelp


@pytest.fixture(scope="session")
def built():
    ftphelp.build_all()
    return True


@pytest.fixture(scope="session", params=ftphelp.BUILDS)
def bindir(request, built):
    return ftphelp.IMPL / request.param


@pytest.fixture
def site(tmp_path):
    root = tmp_path / "www"
    return root, httphelp.make_site(root)


@pytest.fixture
def httpd(bindir, site, tmp_path):
    servers = []

    def start(*args):
        s = httphelp.Httpd(bindir, site[0], *args, tmp=tmp_path / f"httpd{len(servers)}")
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.stop()
