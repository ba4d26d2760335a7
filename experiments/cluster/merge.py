"""Moving finished runs between ledgers: several hosts run shares of one experiment, and their
runs are merged into one result set (and the merged runs pushed back to whichever host goes
on with a point).

Only finished runs move (a run counts when its result.json exists), each with its pcap, its
cached analysis and its logs; the batches' metadata files move too, so meta.json can say which
kernel every host used. A run already finished in the destination is never overwritten, and a
run lands whole or not at all: its directory is assembled aside and renamed into place after
its pcap.

A bundle is a .tar.gz of a ledger's layout (runs/, pcaps/, work/), made by `bundle` on the host
that holds the runs and read by `merge`, so only two files cross the network."""
from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from experiments.onhost.ledger import Ledger

METADATA_GLOB = "*.metadata.json"
# Written beside a file and renamed over it: never part of a finished run.
TRANSIENT_SUFFIXES = (".tmp", ".partial")


class MergeError(RuntimeError):
    pass


@dataclass
class MergeReport:
    copied: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)
    metadata: int = 0

    def as_dict(self) -> dict[str, object]:
        return {"copied": len(self.copied), "already": len(self.already),
                "metadata_files": self.metadata}


def selected(ledger: Ledger, points: set[str] | None = None,
             skip: set[str] | None = None) -> list[str]:
    """Finished run ids of the ledger, of the given points only if any, less those in skip."""
    return sorted(run_id for run_id, record in ledger.finished().items()
                  if (points is None or record.get("point") in points)
                  and (skip is None or run_id not in skip))


def bundle(ledger: Ledger, out: Path, points: set[str] | None = None,
           skip: set[str] | None = None) -> list[str]:
    """Writes the finished runs (and every batch metadata file) into a .tar.gz; returns the run
    ids it holds. An absent ledger gives an empty bundle: a host that has run nothing yet."""
    run_ids = selected(ledger, points, skip)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    with tarfile.open(partial, "w:gz") as tar:
        for run_id in run_ids:
            pcap = ledger.pcap(run_id)
            if pcap.is_file():
                tar.add(pcap, f"pcaps/{pcap.name}")
            for path in sorted(ledger.run_dir(run_id).iterdir()):
                if path.is_file() and not path.name.endswith(TRANSIENT_SUFFIXES):
                    tar.add(path, f"runs/{run_id}/{path.name}")
        if ledger.work.is_dir():
            for path in sorted(ledger.work.glob(METADATA_GLOB)):
                tar.add(path, f"work/{path.name}")
    os.replace(partial, out)
    return run_ids


def merge(source: Path, into: Ledger) -> MergeReport:
    """Copies the finished runs of a bundle or of another ledger's directory into `into`.
    The caller holds `into`'s lock."""
    into.prepare()
    if source.is_file():
        with tempfile.TemporaryDirectory(dir=into.work, prefix="unbundle-") as scratch:
            _extract(source, Path(scratch))
            return _merge_ledger(Ledger(Path(scratch)), into, Path(scratch) / "work")
    if source.resolve() == into.root.resolve():
        raise MergeError(f"{source} is the destination itself")
    return _merge_ledger(Ledger(source), into, Ledger(source).work)


def _merge_ledger(source: Ledger, into: Ledger, metadata_dir: Path) -> MergeReport:
    report = MergeReport()
    staging = into.work / "merging"
    staging.mkdir(parents=True, exist_ok=True)
    for run_id, record in sorted(source.finished().items()):
        if into.is_finished(run_id):
            report.already.append(run_id)
            continue
        pcap = source.pcap(run_id)
        if record.get("pcap") and pcap.is_file():
            partial = into.pcaps / f"{run_id}.pcap.partial"
            shutil.copy2(pcap, partial)
            os.replace(partial, into.pcap(run_id))
        assembled = staging / run_id
        shutil.rmtree(assembled, ignore_errors=True)
        # copy2 keeps modification times: a cached analysis stays newer than its record
        shutil.copytree(source.run_dir(run_id), assembled, copy_function=shutil.copy2,
                        ignore=shutil.ignore_patterns(*(f"*{s}" for s in TRANSIENT_SUFFIXES)))
        target = into.run_dir(run_id)
        if target.exists():
            shutil.rmtree(target)  # a half-finished attempt here counts for nothing
        os.replace(assembled, target)
        report.copied.append(run_id)
    staging.rmdir()
    report.metadata = _merge_metadata(metadata_dir, into.work)
    return report


def _merge_metadata(source: Path, work: Path) -> int:
    """Copies batch metadata files not already present (by content); a name taken by another
    file gets a suffix, so nothing is overwritten."""
    if not source.is_dir():
        return 0
    present = {_digest(p.read_bytes()) for p in work.glob(METADATA_GLOB)}
    copied = 0
    for path in sorted(source.glob(METADATA_GLOB)):
        content = path.read_bytes()
        if _digest(content) in present:
            continue
        target = work / path.name
        stem = path.name[: -len(".metadata.json")]
        number = 1
        while target.exists():
            number += 1
            target = work / f"{stem}-{number}.metadata.json"
        target.write_bytes(content)
        present.add(_digest(content))
        copied += 1
    return copied


def _digest(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def _extract(bundle_file: Path, into: Path) -> None:
    """Unpacks a bundle, refusing anything outside its three folders: a bundle comes from
    another machine."""
    try:
        with tarfile.open(bundle_file, "r:gz") as tar:
            for member in tar.getmembers():
                name = PurePosixPath(member.name)
                if (name.is_absolute() or ".." in name.parts or len(name.parts) < 2
                        or name.parts[0] not in ("runs", "pcaps", "work")
                        or not (member.isfile() or member.isdir())):
                    raise MergeError(f"{bundle_file}: unexpected member {member.name!r}; "
                                     "make bundles with `testbed bundle EXP`")
            for member in tar.getmembers():
                if member.isfile():
                    target = into / member.name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with tar.extractfile(member) as src, open(target, "wb") as dst:
                        shutil.copyfileobj(src, dst)
                    os.utime(target, (member.mtime, member.mtime))
    except (tarfile.TarError, EOFError, OSError) as error:
        raise MergeError(f"{bundle_file}: not a readable bundle ({error}); fetch it again"
                         ) from None


def read_ids(path: Path | None) -> set[str] | None:
    """Run ids or point keys from a file, one a line; blank lines and # comments are ignored."""
    if path is None:
        return None
    try:
        lines = path.read_text().splitlines()
    except OSError as error:
        raise MergeError(f"cannot read {path}: {error.strerror}") from None
    return {line.strip() for line in lines if line.strip() and not line.startswith("#")}
