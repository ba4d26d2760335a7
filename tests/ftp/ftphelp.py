"""Helpers for the ftp-impl tests: build, start ftpd / vsftpd, a raw FTP
control client for bad-input tests, and file trees with known checksums."""
import hashlib
import os
import random
import re
import socket
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
IMPL = ROOT / "ftp-impl"
BUILDS = ["build", "build-asan"]          # host tests: plain and ASan+UBSan
KERNEL_BUILDS = ["build", "build-ubsan"]  # in UML: ASan's shadow does not fit

SAN_ENV = {
    "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0:halt_on_error=1",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
}


def build_all():
    for target in ([], ["sanitize"], ["sanitize-ub"]):
        r = subprocess.run(["make", "-C", str(IMPL), "-s"] + target,
                           capture_output=True, text=True)
        assert r.returncode == 0, f"build failed:\n{r.stdout}\n{r.stderr}"


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def make_tree(root, nsmall=5, small=10_000, big=(1_000_000,), seed=1):
    """Files with deterministic random content; returns {name: sha256}."""
    rng = random.Random(seed)
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    sums = {}
    for i in range(nsmall):
        name = f"s{i:03d}.dat"
        (root / name).write_bytes(rng.randbytes(small))
    for i, size in enumerate(big):
        name = f"big{i}.bin"
        (root / name).write_bytes(rng.randbytes(size))
    for p in root.iterdir():
        if p.is_file():
            sums[p.name] = sha256(p)
    return sums


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def children(pid):
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except FileNotFoundError:
        return []
    return [int(x) for x in text.split()]


def reachable_by_others(root):
    """ftpd started as root serves as `nobody` (ftp-impl/TRUST.md), which must be able to
    reach the tree: each folder from /tmp down to `root` gets o+x (search only). The tests'
    folders (tests/ftp/conftest.py, `tmp_path`) are reachable already; this covers others."""
    root = Path(root).resolve()
    top = Path("/tmp").resolve()
    for folder in [root, *root.parents]:
        if folder == top or top not in folder.parents:
            break
        folder.chmod(folder.stat().st_mode | 0o001)


def owned_by_nobody(root):
    """Uploads write as `nobody`: the served tree becomes its own."""
    import pwd
    nobody = pwd.getpwnam("nobody")
    for path in [Path(root), *Path(root).rglob("*")]:
        os.chown(path, nobody.pw_uid, nobody.pw_gid, follow_symlinks=False)


class Ftpd:
    """ftpd on 127.0.0.1 (port chosen by the kernel), stopped by stop(). Started as root (as
    tests run), it drops to `nobody`, so the tree is made reachable for that user."""

    def __init__(self, bindir, root, *args, tmp=None):
        if os.geteuid() == 0 and "--run-as" not in args:
            reachable_by_others(root)
            if "--allow-upload" in args:
                owned_by_nobody(root)
        self.log = Path(tmp or root).parent / f"ftpd-{os.getpid()}-{time.monotonic_ns()}.log"
        # kept open for ftpd's whole life; closed by stop()
        self.errfile = open(str(self.log) + ".stderr", "w+")  # noqa: SIM115
        env = dict(os.environ, **SAN_ENV)
        self.proc = subprocess.Popen(
            [str(Path(bindir) / "ftpd"), "--root", str(root), "--tcp", "127.0.0.1:0",
             "--log", str(self.log), *args],
            stdout=subprocess.PIPE, stderr=self.errfile, text=True, env=env)
        self.port = None
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            m = re.match(r"listening tcp 127\.0\.0\.1:(\d+)", line)
            if m:
                self.port = int(m.group(1))
            if line.strip() == "ready":
                break
        assert self.port, f"ftpd did not start: {self.stderr()}"

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc.poll() is None

    def stderr(self):
        self.errfile.flush()
        self.errfile.seek(0)
        return self.errfile.read()

    def logtext(self):
        return self.log.read_text() if self.log.exists() else ""

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        err = self.stderr()
        self.errfile.close()
        assert "AddressSanitizer" not in err and "runtime error" not in err \
            and "LeakSanitizer" not in err, err
        return err


class Ctl:
    """A raw FTP control connection for hand-made (and malformed) input."""

    def __init__(self, port, host="127.0.0.1", timeout=10):
        self.s = socket.create_connection((host, port), timeout=timeout)
        self.buf = b""

    def send(self, data):
        if isinstance(data, str):
            data = data.encode()
        self.s.sendall(data)

    def cmd(self, line):
        self.send(line + "\r\n")
        return self.reply()

    def reply(self):
        """(code, text) of the next complete reply (multi-line aware)."""
        lines = []
        while True:
            while b"\n" not in self.buf:
                chunk = self.s.recv(65536)
                if not chunk:
                    raise ConnectionError("closed: " + repr(self.buf))
                self.buf += chunk
            line, self.buf = self.buf.split(b"\n", 1)
            line = line.rstrip(b"\r").decode("latin-1")
            lines.append(line)
            if len(lines) == 1 and line[3:4] != "-":
                return int(line[:3]), line[4:]
            if len(lines) > 1 and line[:3] == lines[0][:3] and line[3:4] == " ":
                return int(line[:3]), "\n".join(lines)

    def login(self):
        code, _ = self.reply()
        assert code == 220
        assert self.cmd("USER anonymous")[0] == 331
        assert self.cmd("PASS x@")[0] == 230

    def pasv(self):
        code, text = self.cmd("PASV")
        assert code == 227, text
        nums = [int(x) for x in re.search(r"(\d+,\d+,\d+,\d+,\d+,\d+)", text).group(1).split(",")]
        return socket.create_connection((".".join(map(str, nums[:4])), nums[4] * 256 + nums[5]),
                                        timeout=10)

    def close(self):
        self.s.close()


def run_ftpc(bindir, *args, timeout=120):
    r = subprocess.run([str(Path(bindir) / "ftpc"), *map(str, args)],
                       capture_output=True, text=True, timeout=timeout,
                       env=dict(os.environ, **SAN_ENV))
    assert "AddressSanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr
    return r
