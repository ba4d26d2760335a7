"""Run the libFuzzer targets of ftp-impl one after the other and report, per target, the
executions, the coverage (libFuzzer's final cov and ft) and whether it crashed.

Each target first replays its regression inputs (fuzz/regressions/<target>/) and its seed
corpus (fuzz/corpus/<target>/), then fuzzes for --seconds with the dictionary fuzz/ftp.dict.
New inputs go to a scratch folder (--work/<target>/), never into the repository, unless --merge
(then `-merge=1` folds them into fuzz/corpus/<target>/). Crash inputs land in
--work/artifacts/. Exit status: 0 when every target ran clean, 1 on any crash, leak, sanitizer
report or a target that did not run.

    python3 fuzz/run.py --build build-fuzz --work build-fuzz/work --seconds 60
    python3 fuzz/run.py --targets "session" --runs 10000000     # a campaign, by executions
    python3 fuzz/run.py --replay-only                           # regressions and corpus once
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ALL_TARGETS = ("cmdio", "session", "addrparse", "reply", "listing", "confine", "msxfer",
               "cmdline", "blockmode", "extblock", "httpmsg")
# What a sanitizer or libFuzzer prints when something went wrong.
BAD = re.compile(r"ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|"
                 r"SUMMARY: (Address|Leak|UndefinedBehavior)Sanitizer|==\d+==ERROR")


@dataclass
class Result:
    target: str
    execs: int = 0
    cov: int = 0
    ft: int = 0
    corpus: int = 0
    replayed: int = 0
    seconds: float = 0.0
    crashed: bool = False
    reason: str = ""

    def line(self) -> str:
        status = f"CRASH ({self.reason})" if self.crashed else "ok"
        return (f"fuzz_{self.target:<10} execs {self.execs:>10}  cov {self.cov:>5}  "
                f"ft {self.ft:>6}  corpus {self.corpus:>5}  replayed {self.replayed:>4}  "
                f"{self.seconds:6.1f} s  crashes {int(self.crashed)}  {status}")


def files_in(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []


def stat(text: str, name: str) -> int:
    found = re.findall(rf"stat::{name}:\s+(\d+)", text)
    return int(found[-1]) if found else 0


def final_cov(text: str) -> tuple[int, int, int]:
    """cov, ft and corpus size of libFuzzer's last status line (DONE, or the last one)."""
    lines = re.findall(r"#\d+\s+\w+\s+cov: (\d+) ft: (\d+) corp: (\d+)", text)
    return tuple(int(v) for v in lines[-1]) if lines else (0, 0, 0)  # type: ignore[return-value]


def failure(proc: subprocess.CompletedProcess[str]) -> str:
    for line in proc.stderr.splitlines():
        if BAD.search(line):
            return line.strip()[:160]
    return f"exit status {proc.returncode}" if proc.returncode != 0 else ""


SHM = Path("/dev/shm")


def make_tmp(work: Path) -> Path:
    """The folder the targets make their served tree and download folder in (TMPDIR): in
    memory (/dev/shm) where there is one, else WORK/tmp.  The session target walks and
    resolves that tree on every command and restores it after each upload, the client
    targets write and rename their downloads: on disk, with the path's every component
    resolved again, that cost more than the parsing itself."""
    if SHM.is_dir() and os.access(SHM, os.W_OK | os.X_OK):
        return Path(tempfile.mkdtemp(prefix="ftpfuzz-run-", dir=SHM))
    tmp = work / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    return tmp


def target_env(tmp: Path) -> dict[str, str]:
    return {**os.environ, "TMPDIR": str(tmp)}


def replay(binary: Path, inputs: list[Path], tmp: Path, result: Result) -> bool:
    """Run the target once on each input (libFuzzer's file mode). False on a failure."""
    if not inputs:
        return True
    proc = subprocess.run([str(binary), "-runs=1", *map(str, inputs)], capture_output=True,
                          text=True, timeout=600, env=target_env(tmp))
    result.replayed += len(inputs)
    reason = failure(proc)
    if reason:
        result.crashed, result.reason = True, f"replay: {reason}"
        sys.stderr.write(proc.stderr[-6000:])
        return False
    return True


def fuzz(binary: Path, target: str, work: Path, tmp: Path, args: argparse.Namespace,
         result: Result) -> None:
    scratch = work / target
    artifacts = work / "artifacts"
    scratch.mkdir(parents=True, exist_ok=True)
    artifacts.mkdir(parents=True, exist_ok=True)
    argv = [str(binary), f"-dict={HERE / 'ftp.dict'}", "-print_final_stats=1",
            f"-artifact_prefix={artifacts}/{target}-", "-timeout=20", "-rss_limit_mb=2560",
            "-max_len=4096", "-detect_leaks=1"]
    argv += [f"-runs={args.runs}"] if args.runs else [f"-max_total_time={args.seconds}"]
    # libFuzzer adds new inputs to the first folder: the scratch one.
    argv += [str(scratch), str(HERE / "corpus" / target)]
    proc = subprocess.run(argv, capture_output=True, text=True,
                          timeout=(args.seconds or 0) + 3600 * 12, env=target_env(tmp))
    result.execs = stat(proc.stderr, "number_of_executed_units")
    result.cov, result.ft, result.corpus = final_cov(proc.stderr)
    reason = failure(proc)
    if reason:
        result.crashed, result.reason = True, reason
        sys.stderr.write(proc.stderr[-6000:])
        return
    if args.log:
        (work / f"{target}.log").write_text(proc.stderr)
    if args.merge:
        subprocess.run([str(binary), "-merge=1", str(HERE / "corpus" / target), str(scratch)],
                       capture_output=True, text=True, check=True, timeout=3600)


def run_target(target: str, args: argparse.Namespace) -> Result:
    result = Result(target)
    binary = args.build / f"fuzz_{target}"
    start = time.monotonic()
    if not binary.is_file():
        result.crashed, result.reason = True, f"{binary} is not built"
        return result
    inputs = files_in(HERE / "regressions" / target) + files_in(HERE / "corpus" / target)
    tmp = make_tmp(args.work)
    try:
        if replay(binary, inputs, tmp, result) and not args.replay_only:
            fuzz(binary, target, args.work, tmp, args, result)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    result.seconds = time.monotonic() - start
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", type=Path, default=HERE.parent / "build-fuzz")
    ap.add_argument("--work", type=Path, default=None, help="scratch folder (BUILD/work)")
    ap.add_argument("--targets", default=" ".join(ALL_TARGETS))
    ap.add_argument("--seconds", type=int, default=60, help="fuzzing time per target")
    ap.add_argument("--runs", type=int, default=0, help="executions per target instead")
    ap.add_argument("--merge", action="store_true", help="merge new inputs into fuzz/corpus")
    ap.add_argument("--replay-only", action="store_true", help="regressions and corpus only")
    ap.add_argument("--log", action="store_true", help="keep each target's output in WORK")
    args = ap.parse_args(argv)
    args.build = args.build.resolve()
    args.work = (args.work or args.build / "work").resolve()
    bad = 0
    for target in args.targets.split():
        if target not in ALL_TARGETS:
            ap.error(f"unknown target {target} (known: {' '.join(ALL_TARGETS)})")
        result = run_target(target, args)
        print(result.line(), flush=True)
        bad += result.crashed
    if bad:
        print(f"{bad} target(s) failed; inputs in {args.work / 'artifacts'}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
