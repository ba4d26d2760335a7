import pytest

from tests.ftp import conftest as ftp_conftest
from tests.ftp import ftphelp
from tests.web import httphelp


@pytest.fixture
def tmp_path(request):
    """A folder every user can reach (see tests/ftp/conftest.py)."""
    yield from ftp_conftest.tmp_path.__wrapped__(request)


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


@pytest.fixture(params=["1k-writes", "whole"])
def answers(request) -> tuple[str, ...]:
    """httpd's two ways of serving: the study's 1 KB writes, a process per connection (the
    default), and whole answers, TCP connections served by the server's event loop."""
    return () if request.param == "1k-writes" else ("--write-size", "0")


@pytest.fixture
def httpd(bindir, site, tmp_path, answers):
    servers = []

    def start(*args):
        s = httphelp.Httpd(bindir, site[0], *answers, *args,
                           tmp=tmp_path / f"httpd{len(servers)}")
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.stop()
