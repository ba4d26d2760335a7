"""Run a command inside the pinned kernel (User-Mode Linux, with SCTP and
netem), through the testbed's runner `python3 -m topology run`.  The one
place the FTP tests touch the kernel runner: swap it here."""
import subprocess

from tests.ftp.ftphelp import ROOT

PYTHON = "/usr/bin/python3"


def run_in_kernel(argv, timeout=240, env=None):
    """CompletedProcess of argv run as root inside the pinned kernel."""
    cmd = [PYTHON, "-m", "topology", "run", "--timeout", str(timeout), "--"]
    if env:
        cmd += ["env"] + [f"{k}={v}" for k, v in env.items()]
    return subprocess.run(cmd + list(argv), cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout + 60)
