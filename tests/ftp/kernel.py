"""Run a job inside the pinned kernel (User-Mode Linux, with SCTP and netem), through the
testbed's runner `python3 -m testbed kernel`. The one place the FTP tests touch the kernel
runner: swap it here."""
import subprocess

from tests.ftp.ftphelp import ROOT

PYTHON = "/usr/bin/python3"


def run_in_kernel(argv, timeout=240, env=None):
    """CompletedProcess of argv run as root inside the pinned kernel (from the repository's
    root, which is importable there)."""
    cmd = [PYTHON, "-m", "testbed", "kernel", "--timeout", str(timeout), "--"]
    if env:
        cmd += ["env"] + [f"{k}={v}" for k, v in env.items()]
    return subprocess.run(cmd + [str(a) for a in argv], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout + 60)


def run_job(job, *args, timeout=240):
    """A Python job file inside the pinned kernel: `job` with `args` on its command line."""
    return run_in_kernel([PYTHON, str(job), *map(str, args)], timeout=timeout)
