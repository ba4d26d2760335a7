"""Where an experiment's runs live on disk, and which of them are finished.

results/<experiment>/runs/<run id>/result.json marks a finished run (written last, atomically,
inside the kernel); a run directory without it is a half-finished attempt and counts for
nothing. pcaps live in results/<experiment>/pcaps/<run id>.pcap: found there, beside the
record, whatever absolute path the record names (runs merged from another host name that
host's directories).

A record that cannot be read, or lacks what counting its run needs (a hand edit, a copy cut
short), is set aside as runs/<run id>/result.json.bad-<time> with a line on stderr naming the
run and why: its run counts as not finished, and `testbed run` redoes it beside the bad copy.

One harness at a time writes into a ledger: `lock()` holds .work/lock (flock) and writes into
it who holds it (pid, host, since when, command). The lock dies with its holder: a process
forked from the holder (an analysis worker) does not keep it, so a harness killed with SIGKILL
leaves nothing that refuses the next."""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from topology.kernel.base import default_results_root

RESULTS_ROOT = default_results_root()
RECORD = "result.json"
SET_ASIDE = RECORD + ".bad-"      # + a UTC time: a record that could not be counted, kept
LOCK = "lock"
CLAIMS_GLOB = "claims-*"          # a round's claims (inkernel/sharing.py), stale once it ended
# What every record needs for its run to count anywhere (a merge, a bundle, a plan)...
ENVELOPE: dict[str, type] = {"point": str, "status": str}
# ...and what the harness reads of each one to plan rounds and write the tables (records
# from before workloads name their link `shape`, not `links`).
COUNTED: dict[str, type] = {**ENVELOPE, "rep": int, "params": dict}
COUNTED_IF_PRESENT: dict[str, type] = {"links": dict, "queues": dict, "reasons": list}
KIND_NAMES = {str: "text", int: "a whole number", dict: "a JSON object", list: "a list"}


class LedgerBusy(RuntimeError):
    """Another process is writing into this ledger."""


def record_problem(run_id: str, record: Any, required: Mapping[str, type],
                   if_present: Mapping[str, type] | None = None) -> str | None:
    """Why `record` (parsed from run `run_id`'s result.json) cannot count, or None: a field of
    `required` missing or of another type, or one of `if_present` of another type."""
    if not isinstance(record, dict):
        return f"not a JSON object but {type(record).__name__}"
    missing = [field for field in required if field not in record]
    if missing:
        return f"no {missing[0]!r} field"
    for field, kind in {**(if_present or {}), **required}.items():
        value = record.get(field, kind())
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            return f"{field!r} is {repr(value)[:60]}, not {KIND_NAMES[kind]}"
    if record.get("id", run_id) != run_id:
        return f"it names run {record['id']!r}, not the run of its folder"
    if "rep" in required and f"{record['point']}_r{record['rep']:03d}" != run_id:
        return f"point {record['point']!r} and rep {record['rep']} do not make its run id"
    return None


def _read_record(path: Path) -> tuple[Any, str | None]:
    """The parsed record, or None and why it could not be read."""
    try:
        return json.loads(path.read_bytes()), None
    except FileNotFoundError:
        raise
    except (OSError, UnicodeDecodeError) as error:
        return None, f"unreadable ({error})"
    except json.JSONDecodeError as error:
        size = path.stat().st_size if path.exists() else 0
        return None, f"not valid JSON ({error}; the file holds {size} bytes)"


@dataclass(frozen=True)
class Ledger:
    root: Path

    @classmethod
    def for_experiment(cls, name: str, results_root: Path = RESULTS_ROOT) -> Ledger:
        return cls(results_root / name)

    @property
    def runs(self) -> Path:
        return self.root / "runs"

    @property
    def pcaps(self) -> Path:
        return self.root / "pcaps"

    @property
    def work(self) -> Path:
        return self.root / ".work"

    @property
    def data(self) -> Path:
        return self.root.parent / ".data"

    def prepare(self) -> None:
        """The ledger's folders made, and what an interrupted harness left cleared: pcaps
        never moved into place, and the claims of rounds that ended with it (a resume within
        the same second would otherwise find its runs claimed). Called with the lock held."""
        for directory in (self.runs, self.pcaps, self.work, self.data):
            directory.mkdir(parents=True, exist_ok=True)
        for stale in self.pcaps.glob("*.partial"):
            stale.unlink()
        for stale in self.work.glob(CLAIMS_GLOB):
            shutil.rmtree(stale, ignore_errors=True)

    def run_dir(self, run_id: str) -> Path:
        return self.runs / run_id

    def pcap(self, run_id: str) -> Path:
        return self.pcaps / f"{run_id}.pcap"

    def server_pcap(self, run_id: str) -> Path:
        return self.pcaps / f"{run_id}.server.pcap"

    def finished(self, required: Mapping[str, type] = ENVELOPE,
                 if_present: Mapping[str, type] | None = None) -> dict[str, dict[str, Any]]:
        """Records of every finished run, by run id. A record that cannot be read or lacks a
        field of `required` (record_problem) is set aside (`set_aside`): its run is not
        finished."""
        records = {}
        if self.runs.is_dir():
            for path in self.runs.glob(f"*/{RECORD}"):
                run_id = path.parent.name
                try:
                    record, problem = _read_record(path)
                except FileNotFoundError:
                    continue  # set aside meanwhile by another reader
                problem = problem or record_problem(run_id, record, required, if_present)
                if problem:
                    self.set_aside(run_id, problem)
                else:
                    records[run_id] = record
        return records

    def counted(self) -> dict[str, dict[str, Any]]:
        """The finished runs' records as the harness counts them: every field it reads
        (COUNTED) present, or the record is set aside and its run redone."""
        return self.finished(COUNTED, COUNTED_IF_PRESENT)

    def set_aside(self, run_id: str, problem: str) -> Path | None:
        """Moves the run's record to result.json.bad-<UTC time> beside it (nothing is lost; a
        redo of the run keeps it) and says so on stderr. None if it was gone already."""
        record = self.run_dir(run_id) / RECORD
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        kept = record.with_name(SET_ASIDE + stamp)
        for extra in range(1, 100):
            if not kept.exists():
                break
            kept = record.with_name(f"{SET_ASIDE}{stamp}-{extra}")
        try:
            os.rename(record, kept)
        except FileNotFoundError:
            return None
        print(f"warning: set aside the record of run {run_id}: {problem}. Kept as "
              f"{kept.relative_to(self.root)}; the run counts as not finished, and `testbed run` "
              "redoes it", file=sys.stderr, flush=True)
        return kept

    def batch_metadata(self) -> list[dict[str, Any]]:
        """What each batch's kernel recorded about itself (backend, release, clock, host, ...),
        in the order of the files' names."""
        batches = []
        for path in sorted(self.work.glob("*.metadata.json")):
            try:
                batches.append(json.loads(path.read_text()))
            except json.JSONDecodeError:
                continue  # a batch still writing it
        return batches

    def is_finished(self, run_id: str) -> bool:
        return (self.run_dir(run_id) / RECORD).is_file()

    def record(self, run_id: str) -> dict[str, Any]:
        return json.loads((self.run_dir(run_id) / RECORD).read_text())

    def record_written(self, run_id: str) -> float:
        """When the run's record reached this host's disk, by this host's clock (the times in
        the record are the kernel's, virtual on the virtual clock)."""
        return (self.run_dir(run_id) / RECORD).stat().st_mtime

    def busy(self) -> bool:
        """Whether another process holds the lock (a harness still running here)."""
        path = self.work / LOCK
        if not path.exists():
            return False
        with open(path) as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(handle, fcntl.LOCK_UN)
        return False

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Held while runs or merged runs are written here: two harnesses on one ledger would
        run the same run ids into the same directories. LedgerBusy, at once, names the holder."""
        self.work.mkdir(parents=True, exist_ok=True)
        path = self.work / LOCK
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise LedgerBusy(busy_message(self.root, path, _read_holder(fd))) from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(_this_holder()).encode() + b"\n", 0)
            _HELD.add(fd)
            try:
                yield
            finally:
                _HELD.discard(fd)
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


# Lock descriptors this process holds. A process forked from it (a ProcessPoolExecutor's
# worker) would share the lock and keep it after this one is killed: every later harness
# would be refused, naming a pid that is gone. The child lets go of them at once.
_HELD: set[int] = set()


def _let_go_in_child() -> None:
    for fd in list(_HELD):
        with suppress(OSError):
            null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
            os.dup2(null, fd)   # the number stays valid for its owner's close, the lock goes
            os.close(null)
    _HELD.clear()


os.register_at_fork(after_in_child=_let_go_in_child)


def _this_holder() -> dict[str, Any]:
    return {"pid": os.getpid(), "host": socket.gethostname(),
            "since": time.strftime("%Y-%m-%d %H:%M:%S %z"),
            "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])[:300]}


def _read_holder(fd: int) -> dict[str, Any]:
    """Who wrote the lock (a bare pid in the files of older harnesses)."""
    text = os.pread(fd, 4096, 0).decode(errors="replace").strip()
    try:
        holder = json.loads(text)
    except json.JSONDecodeError:
        holder = None
    if isinstance(holder, int):
        return {"pid": holder}
    return holder if isinstance(holder, dict) else {}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def processes_holding(path: Path) -> list[str]:
    """"PID COMMAND" of each process on this host with `path` open (/proc/*/fd)."""
    target = str(path.resolve())
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            fds = os.scandir(f"/proc/{entry.name}/fd")
            with fds:
                if not any(os.readlink(fd.path) == target for fd in fds):
                    continue
            argv = Path(f"/proc/{entry.name}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        found.append(f"{entry.name} {b' '.join(argv).decode(errors='replace').strip()[:120]}")
    return found


def busy_message(root: Path, path: Path, holder: dict[str, Any]) -> str:
    """What a harness refused by the lock is told: who holds it, and what to do."""
    pid, host = holder.get("pid"), holder.get("host")
    here = host in (None, socket.gethostname())
    who = (f"pid {pid if pid is not None else 'unknown'} on "
           f"{host or 'an unknown host (an older harness)'}")
    if holder.get("since"):
        who += f", since {holder['since']}"
    if holder.get("command"):
        who += f": {holder['command']}"
    if here and isinstance(pid, int) and not _alive(pid):
        left = processes_holding(path)
        if left:
            pids = " ".join(line.split()[0] for line in left)
            return (f"{root} is locked by processes that the harness which took the lock ({who}) "
                    f"left behind when it ended: {'; '.join(left)}. Stop them (kill {pids}), "
                    "then run this again; the finished runs are kept")
        return (f"{root} is locked by another host's harness or a process this one cannot see "
                f"(the lock names {who}, which is gone): if none is running, remove "
                f"{path} and run this again")
    stop = f"kill {pid}" if here else f"on {host}: kill {pid}"
    return (f"another harness is writing into {root} ({who}). Wait for it to finish, or stop "
            f"it ({stop}; its finished runs are kept), then run this again")
