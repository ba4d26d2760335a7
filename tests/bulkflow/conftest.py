import pytest

from tests.ftp import ftphelp


@pytest.fixture(scope="session")
def built():
    """ftp-impl built: build/ (plain), build-asan/ (ASan+UBSan), build-ubsan/ (UBSan)."""
    ftphelp.build_all()
    return True


@pytest.fixture(scope="session", params=ftphelp.BUILDS)
def bindir(request, built):
    return ftphelp.IMPL / request.param
