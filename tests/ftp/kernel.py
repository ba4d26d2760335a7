"""Run a job inside the pinned kernel (User-Mode Linux, with SCTP and netem), through the
testbed's runner `python3 -m testbed kernel`. The one place the FTP tests touch the kernel
runner: swap it here."""
import os
import subprocess

from tests.ftp.ftphelp import IMPL, ROOT

PYTHON = "/usr/bin/python3"


def run_in_kernel(argv, timeout=240, env=None, virtual=False):
    """CompletedProcess of argv run as root inside the pinned kernel (from the repository's
    root, which is importable there). `virtual`: in the time-travel kernel's inf-cpu clock,
    where a job that mostly waits on its sessions' timers waits no wall time for them."""
    cmd = [PYTHON, "-m", "testbed", "kernel", "--timeout", str(timeout)]
    if virtual:
        cmd += ["--kernel", "uml-virtual"]
    cmd += ["--"]
    if env:
        cmd += ["env"] + [f"{k}={v}" for k, v in env.items()]
    host_env = {**os.environ, "TESTBED_TIME_TRAVEL": "inf-cpu"} if virtual else None
    return subprocess.run(cmd + [str(a) for a in argv], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout + 60, env=host_env)


def run_job(job, *args, timeout=240, virtual=False):
    """A Python job file inside the pinned kernel: `job` with `args` on its command line."""
    return run_in_kernel([PYTHON, str(job), *map(str, args)], timeout=timeout, virtual=virtual)


def run_script_in_kernel(script, work, timeout=300, env=None):
    """A test's shell job (`script`) inside the pinned kernel on the UBSan build of the
    programs (BIN) with its folder WORK, and any more of `env`; fails the test with the job's
    stderr unless it exits 0. Returns `work`."""
    r = run_in_kernel(["bash", str(script)], timeout=timeout,
                      env={"BIN": IMPL / "build-ubsan", "WORK": work, **(env or {})})
    assert r.returncode == 0, f"kernel job failed ({r.returncode}):\n{r.stderr[-3000:]}"
    return work
