"""A one-node Slurm cluster in a folder of its own: munged, slurmctld and slurmd from Debian's
packages, configured for this machine (its hostname, cores, memory), on ports of their own, so
nothing outside the folder is touched and any Slurm already on the machine is left alone.
Every client command finds it through SLURM_CONF.

    python3 -m tests.slurm.cluster start DIR     # prints the `export SLURM_CONF=...` to use
    python3 -m tests.slurm.cluster stop DIR"""
from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

DAEMONS = ("slurmd", "slurmctld", "munged")
PACKAGES = "slurmctld slurmd slurm-client munge"


class ClusterError(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def memory_mb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    raise ClusterError("no MemTotal in /proc/meminfo")


def config(folder: Path, host: str) -> str:
    node = (f"NodeName={host} NodeAddr=127.0.0.1 CPUs={os.cpu_count() or 1} "
            f"RealMemory={memory_mb() - 1024} State=UNKNOWN")
    return f"""\
ClusterName=testbed
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
AuthType=auth/munge
AuthInfo=socket={folder}/munge/munge.socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={folder}/state
SlurmdSpoolDir={folder}/spool
SlurmctldPidFile={folder}/slurmctld.pid
SlurmdPidFile={folder}/slurmd.pid
SlurmctldLogFile={folder}/log/slurmctld.log
SlurmdLogFile={folder}/log/slurmd.log
# no cgroups in a container: processes are tracked by parentage
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
KillWait=10
MinJobAge=30
{node}
PartitionName=testbed Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


class OneNodeCluster:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.conf = folder / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def start(self) -> OneNodeCluster:
        missing = [d for d in (*DAEMONS, "sbatch", "squeue", "scancel", "sinfo")
                   if shutil.which(d) is None]
        if missing:
            raise ClusterError(f"{', '.join(missing)} missing: apt-get install {PACKAGES} "
                               "(make setup-test does)")
        for sub in ("munge", "state", "spool", "log"):
            (self.folder / sub).mkdir(parents=True, exist_ok=True)
        self.folder.chmod(0o755)
        (self.folder / "munge").chmod(0o700)
        key = self.folder / "munge" / "munge.key"
        if not key.exists():
            key.write_bytes(secrets.token_bytes(1024))
            key.chmod(0o400)
        munge = self.folder / "munge"
        self._daemon(["munged", "--force", f"--key-file={key}", f"--socket={munge}/munge.socket",
                      f"--pid-file={munge}/munged.pid", f"--seed-file={munge}/seed",
                      f"--log-file={self.folder}/log/munged.log"])
        # Slurm names hosts by their short name; slurmd is told its own, whatever the machine's
        # hostname looks like
        host = socket.gethostname().split(".")[0]
        self.conf.write_text(config(self.folder, host))
        self._daemon(["slurmctld", "-c"])
        self._daemon(["slurmd", "-N", host])
        self._wait_idle()
        return self

    def _daemon(self, argv: list[str]) -> None:
        proc = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=60)
        if proc.returncode != 0:
            raise ClusterError(f"{argv[0]} did not start (exit {proc.returncode}): "
                               f"{proc.stderr.strip()}; logs in {self.folder / 'log'}")

    def _wait_idle(self, limit_s: float = 60) -> None:
        deadline = time.monotonic() + limit_s
        state = ""
        while time.monotonic() < deadline:
            proc = subprocess.run(["sinfo", "-h", "-o", "%T"], env=self.env,
                                  capture_output=True, text=True)
            state = proc.stdout.strip()
            if proc.returncode == 0 and state == "idle":
                return
            time.sleep(1)
        raise ClusterError(f"the node did not come up idle within {limit_s:.0f} s (state "
                           f"{state!r}); logs in {self.folder / 'log'}")

    def squeue(self) -> list[str]:
        proc = subprocess.run(["squeue", "-h", "-o", "%i %T"], env=self.env,
                              capture_output=True, text=True, check=True)
        return proc.stdout.split("\n") if proc.stdout.strip() else []

    def stop(self) -> None:
        """Every daemon of the folder, by its pid file; jobs still running end with slurmd."""
        pid_files = {"slurmd": self.folder / "slurmd.pid",
                     "slurmctld": self.folder / "slurmctld.pid",
                     "munged": self.folder / "munge" / "munged.pid"}
        for name in DAEMONS:
            try:
                pid = int(pid_files[name].read_text().split()[0])
            except (OSError, ValueError, IndexError):
                continue
            _terminate(pid)


def _terminate(pid: int, limit_s: float = 20) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("start", "stop"):
        print(__doc__, file=sys.stderr)
        return 2
    cluster = OneNodeCluster(Path(argv[1]).resolve())
    if argv[0] == "start":
        cluster.start()
        print(f"export SLURM_CONF={cluster.conf}")
    else:
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
