"""ftpd and ftpc on usrsctp against peers that fail them, over the host's loopback (no kernel
SCTP needed there), in every build, ASan's and UBSan's included: the cases the kernel's SCTP
meets in tests/ftp/test_sctp_kernel.py. A file that shrinks under ftpd mid-transfer is
aborted, with the study's replies, and no partial file takes the final name; a client killed
mid-file, whose user-space stack dies with it and so sends no ABORT (the kernel's would), is
given up by ftpd at its data and idle timeouts, after which ftpd, which serves usrsctp's
sessions one at a time in its own process, serves the next client whole."""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.bulkflow.bulkhelp import SANITIZER_MARKS, free_udp_port
from tests.ftp import ftphelp

HUGE = 300_000_000      # sparse: read fast, still under way once the client holds 1 MB
DATA_TIMEOUT_S = 2
IDLE_TIMEOUT_S = 4


@pytest.fixture
def server(bindir, tmp_path):
    """ftpd on usrsctp serving a tree with one huge file: (ftpd, SCTP port, UDP port)."""
    root = tmp_path / "root"
    root.mkdir()
    with open(root / "huge.bin", "wb") as huge:
        huge.truncate(HUGE)
    (root / "after.bin").write_bytes(os.urandom(200_000))
    port, udp = ftphelp.free_port(), free_udp_port()
    ftpd = ftphelp.Ftpd(bindir, root, "--sctp", f"127.0.0.1:{port}", "--sctp-stack", "usrsctp",
                        "--sctp-udp-port", str(udp), "--data-timeout", str(DATA_TIMEOUT_S),
                        "--idle-timeout", str(IDLE_TIMEOUT_S), tmp=tmp_path / "x")
    yield ftpd, port, udp
    ftpd.stop()


def ftpc_args(variant: str, out: Path, port: int, server_udp: int,
              *commands: str) -> list[str]:
    """ftpc's arguments for a session on usrsctp with ftpd's."""
    return ["--variant", variant, "--out", str(out), "--timeout", "20",
            "--sctp-stack", "usrsctp", "--sctp-udp-port", str(free_udp_port()),
            "--sctp-peer-udp-port", str(server_udp), f"127.0.0.1:{port}", *commands]


def start_ftpc(bindir: Path, args: list[str]) -> subprocess.Popen:
    return subprocess.Popen([str(bindir / "ftpc"), *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, **ftphelp.SAN_ENV))


def wait_for_part(out: Path, size: int, process: subprocess.Popen) -> None:
    """Until the client's partial file holds `size` bytes: the transfer is under way."""
    part = out / "huge.bin.part"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        if part.exists() and part.stat().st_size >= size:
            return
        time.sleep(0.005)
    raise AssertionError(f"no {size} bytes in {part} (client rc {process.poll()})")


def fetch_after(bindir: Path, tmp_path: Path, port: int, udp: int) -> float:
    """The next client's whole file, checked byte for byte; the seconds it took."""
    out = tmp_path / "after"
    out.mkdir()
    t0 = time.monotonic()
    r = ftphelp.run_ftpc(bindir, *ftpc_args("sctp-ms", out, port, udp, "get", "after.bin"),
                         timeout=90)
    took = time.monotonic() - t0
    assert r.returncode == 0, r.stderr
    assert (out / "after.bin").read_bytes() == (tmp_path / "root" / "after.bin").read_bytes()
    return took


@pytest.mark.parametrize("variant, reason", [
    ("sctp-naive", "426 Failure writing network stream"),   # the data association's end
    ("sctp-ms", "control connection lost"),                 # the one association aborted
])
def test_a_file_that_shrinks_under_ftpd_on_usrsctp_aborts_the_transfer(
        bindir, tmp_path, server, variant, reason):
    ftpd, port, udp = server
    out = tmp_path / "out"
    out.mkdir()
    client = start_ftpc(bindir, ftpc_args(variant, out, port, udp, "get", "huge.bin"))
    try:
        wait_for_part(out, 1_000_000, client)
        os.truncate(tmp_path / "root" / "huge.bin", 1_000_000)
        _, err = client.communicate(timeout=60)
    finally:
        client.kill()
    assert client.returncode == 1 and reason in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert not any(m in err for m in SANITIZER_MARKS), err
    assert not (out / "huge.bin").exists()
    log = ftpd.logtext()
    assert "FAIL RETR huge.bin 300000000 bytes" in log, log
    assert variant == "sctp-naive" or "ABORT association after failed transfer" in log, log
    fetch_after(bindir, tmp_path, port, udp)
    assert ftpd.alive()


@pytest.mark.parametrize("variant", ["sctp-naive", "sctp-ms"])
def test_a_client_killed_mid_file_is_given_up_and_the_next_one_served_whole(
        bindir, tmp_path, server, variant):
    """No ABORT comes from a dead usrsctp: ftpd's send stalls, it gives the transfer up at
    --data-timeout; sctp-ms's session ends with its one association, sctp-naive's control
    association is then left at --idle-timeout. The next client waits behind it (one session
    at a time) and is served whole."""
    ftpd, port, udp = server
    out = tmp_path / "out"
    out.mkdir()
    client = start_ftpc(bindir, ftpc_args(variant, out, port, udp, "get", "huge.bin"))
    wait_for_part(out, 1_000_000, client)
    client.kill()
    client.communicate(timeout=30)
    fds_during = ftphelp.fd_count(ftpd.pid)
    took = fetch_after(bindir, tmp_path, port, udp)
    bound = DATA_TIMEOUT_S + (IDLE_TIMEOUT_S if variant == "sctp-naive" else 0)
    assert took < bound + 8, took
    log = ftpd.logtext()
    assert "FAIL RETR huge.bin 300000000 bytes" in log, log
    assert log.count("END after") == 2, log
    assert ftphelp.fd_count(ftpd.pid) <= fds_during
    assert ftpd.alive()
