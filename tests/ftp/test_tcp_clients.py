"""Real clients nobody here wrote (curl, lftp) against ftpd over TCP on
loopback, and ftpc against vsftpd and against ftpd.  Checksums decide."""
import json
import shutil
import subprocess
import time

import pytest

from tests.ftp import ftphelp


def need(tool):
    path = shutil.which(tool) or (f"/usr/sbin/{tool}" if tool == "vsftpd" else None)
    assert path and shutil.os.path.exists(path), \
        f"{tool} is required for these tests (apt-get install {tool})"
    return path


def curl(*args):
    need("curl")
    return subprocess.run(["curl", "-sS", "--max-time", "30", *args],
                          capture_output=True, timeout=60)


def lftp(port, script):
    need("lftp")
    full = (f"set net:max-retries 1; set net:timeout 10; set cmd:fail-exit yes; "
            f"open -p {port} ftp://anonymous:x@127.0.0.1; {script}; bye")
    return subprocess.run(["lftp", "-c", full], capture_output=True, text=True, timeout=90)


def test_curl_list_nlst_size(ftpd, tree):
    s = ftpd()
    r = curl(f"ftp://127.0.0.1:{s.port}/")
    assert r.returncode == 0, r.stderr
    listing = r.stdout.decode()
    assert "big0.bin" in listing and "s000.dat" in listing and listing.startswith(("-", "d", "l"))
    r = curl("--list-only", f"ftp://127.0.0.1:{s.port}/")
    names = set(r.stdout.decode().split())
    assert {"big0.bin", "big1.bin", "s000.dat", "sub"} <= names
    r = curl("-I", f"ftp://127.0.0.1:{s.port}/big0.bin")
    assert b"Content-Length: 1000000" in r.stdout


@pytest.mark.parametrize("mode", [[], ["--disable-epsv"], ["-P", "-"],
                                  ["-P", "-", "--disable-eprt"]],
                         ids=["epsv", "pasv", "eprt", "port"])
def test_curl_download(ftpd, tree, tmp_path, mode):
    s = ftpd()
    root, sums = tree
    for name in ("big1.bin", "s001.dat", "sub/inner.txt", "inlink"):
        out = tmp_path / "dl"
        r = curl(*mode, "-o", str(out), f"ftp://127.0.0.1:{s.port}/{name}")
        assert r.returncode == 0, r.stderr
        want = sums.get(name) or sums["sub/inner.txt"]
        assert ftphelp.sha256(out) == want


def test_curl_resume(ftpd, tree, tmp_path):
    s = ftpd()
    root, sums = tree
    out = tmp_path / "part"
    out.write_bytes((root / "big1.bin").read_bytes()[:1234567])
    r = curl("-C", "-", "-o", str(out), f"ftp://127.0.0.1:{s.port}/big1.bin")
    assert r.returncode == 0, r.stderr
    assert ftphelp.sha256(out) == sums["big1.bin"]
    assert "RETR big1.bin 1765433 bytes" in s.logtext()


@pytest.mark.parametrize("passive", ["on", "off"])
def test_lftp_get_mirror_resume(ftpd, tree, tmp_path, passive):
    s = ftpd()
    root, sums = tree
    dl = tmp_path / "lftp"
    dl.mkdir()
    (dl / "big0.bin").write_bytes((root / "big0.bin").read_bytes()[:300000])
    r = lftp(s.port, f"set ftp:passive-mode {passive}; lcd {dl}; ls; get s002.dat; "
                     f"get -c big0.bin; mirror sub sub; quote SIZE big1.bin")
    assert r.returncode == 0, r.stderr
    assert "s004.dat" in r.stdout
    assert "213 3000000" in r.stdout or "3000000" in r.stdout
    assert ftphelp.sha256(dl / "s002.dat") == sums["s002.dat"]
    assert ftphelp.sha256(dl / "big0.bin") == sums["big0.bin"]
    assert ftphelp.sha256(dl / "sub" / "inner.txt") == sums["sub/inner.txt"]
    assert "RETR big0.bin 700000 bytes" in s.logtext()


def events(stdout):
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def test_ftpc_tcp_against_ftpd(bindir, ftpd, tree, tmp_path):
    s = ftpd()
    root, sums = tree
    for active in ([], ["--active"]):
        out = tmp_path / f"out{len(active)}"
        out.mkdir()
        r = ftphelp.run_ftpc(bindir, "--variant", "tcp", *active, "--out", out,
                             f"127.0.0.1:{s.port}", "mget", "*.dat", "get", "big1.bin", "ls", "sub")
        assert r.returncode == 0, r.stderr
        for name in [n for n in sums if n.endswith(".dat")] + ["big1.bin"]:
            assert ftphelp.sha256(out / name) == sums[name]
        assert not list(out.glob("*.part"))
        ev = events(r.stdout)
        kinds = [e["event"] for e in ev]
        assert kinds[0] == "session_start" and kinds[-1] == "session_end"
        assert ev[-1]["status"] == "ok"
        assert kinds.count("file_done") == 6 and kinds.count("file_first_byte") == 6
        assert "nlst_150" in kinds and "last_226" in kinds
        t = [e["t"] for e in ev if e["event"] in ("nlst_150", "last_226")]
        assert t[0] < t[1]
        listing = [e for e in ev if e["event"] == "listing"][-1]
        assert listing["entries"] == ["inner.txt"]
        assert all(e["code"] for e in ev if e["event"] == "reply")


def test_ftpc_put(bindir, ftpd, tree, tmp_path):
    s = ftpd("--allow-upload")
    src = tmp_path / "up.bin"
    src.write_bytes(bytes(range(256)) * 4000)
    r = ftphelp.run_ftpc(bindir, "--variant", "tcp", f"127.0.0.1:{s.port}", "put", src)
    assert r.returncode == 0, r.stderr
    assert ftphelp.sha256(tree[0] / "up.bin") == ftphelp.sha256(src)


def test_ftpc_against_vsftpd(bindir, tree, tmp_path):
    vsftpd = need("vsftpd")
    root, sums = tree
    port = ftphelp.free_port()
    empty = tmp_path / "empty"
    empty.mkdir()
    conf = tmp_path / "vsftpd.conf"
    conf.write_text("\n".join([
        "listen=YES", "listen_ipv6=NO", "listen_address=127.0.0.1", f"listen_port={port}",
        "anonymous_enable=YES", "local_enable=NO", "write_enable=NO", f"anon_root={root}",
        "no_anon_password=YES", "run_as_launching_user=YES", "background=NO",
        "seccomp_sandbox=NO", f"secure_chroot_dir={empty}", "xferlog_enable=NO",
        "pasv_enable=YES", "port_enable=YES", "connect_from_port_20=NO", ""]))
    proc = subprocess.Popen([vsftpd, str(conf)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                ftphelp.socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, proc.stdout.read()
                time.sleep(0.05)
        for active in ([], ["--active"]):
            out = tmp_path / f"v{len(active)}"
            out.mkdir()
            r = ftphelp.run_ftpc(bindir, "--variant", "tcp", *active, "--out", out,
                                 f"127.0.0.1:{port}", "mget", "s00*.dat", "get", "big0.bin")
            assert r.returncode == 0, r.stderr + r.stdout
            for name in [n for n in sums if n.startswith("s00")] + ["big0.bin"]:
                assert ftphelp.sha256(out / name) == sums[name]
        # vsftpd has no block mode: tcp-pipelined stops at MODE B, saying so
        r = ftphelp.run_ftpc(bindir, "--variant", "tcp-pipelined", "--out", tmp_path,
                             f"127.0.0.1:{port}", "mget", "s00*.dat")
        assert r.returncode == 1 and "server refused block mode: 504" in r.stderr, r.stderr
    finally:
        proc.terminate()
        proc.wait(10)


def test_many_clients_at_once(bindir, ftpd, tree, tmp_path):
    """Ten sessions in parallel (one process each), all byte-identical."""
    s = ftpd()
    root, sums = tree
    procs = []
    for i in range(10):
        out = tmp_path / f"c{i}"
        out.mkdir()
        procs.append((out, subprocess.Popen(
            [str(bindir / "ftpc"), "--variant", "tcp", "--out", str(out), f"127.0.0.1:{s.port}",
             "get", "big1.bin", "mget", "s*.dat"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            env=dict(ftphelp.os.environ, **ftphelp.SAN_ENV))))
    for out, p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert ftphelp.sha256(out / "big1.bin") == sums["big1.bin"]
        assert ftphelp.sha256(out / "s004.dat") == sums["s004.dat"]
    assert s.logtext().count("OK RETR big1.bin 3000000 bytes") == 10
