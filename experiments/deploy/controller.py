"""What the playbooks do on the controller, as one command with a subcommand per step:

    testbed controller tc --up-dev IF --down-dev IF --rate R --delay D --loss L --queue Q
                          --out FILE
    testbed controller source --out DIR
    testbed controller dataset --size B --count N --seed S --out DIR
    testbed controller analyse RUN_DIR --variant V --client-ip A --manifest FILE
    testbed controller mgmt-check PCAP --port 22

Each step writes files and prints one JSON line saying what it wrote or found; the router's
shaping comes from topology/net/shaping.py, the nodes run experiments/procedure.py and the
pcap analysis is the ftp-mget workload's, so a deployed point and an emulated one are run,
shaped and read alike."""
from __future__ import annotations

import argparse
import base64
import gzip
import hashlib
import io
import json
import math
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

from topology.kernel.base import REPO_ROOT
from topology.params import LinkShape

FTP_IMPL = REPO_ROOT / "ftp-impl"
SOURCE_ARCHIVE = "ftp-impl-src.tar.gz"
# The same archive as text: small enough to travel as a task's input, which saves the
# several round trips of a file copy.
SOURCE_ARCHIVE_B64 = SOURCE_ARCHIVE + ".b64"
DATA_ARCHIVE = "dataset.tar.gz"
CLIENT_BUNDLE = "client.tar"
METRIC = "nlst150-to-last226"
LINUX_SCTP_RTO_MIN_S = 1.0


def tc_lines(up_dev: str, down_dev: str, shape: LinkShape) -> list[str]:
    """The router's two egresses shaped alike, as `path` shapes them (Path.set_both)."""
    # Imported here: topology.net brings Mininet in, which the other steps do not need.
    from topology.net import shaping

    return shaping.build(up_dev, shape) + shaping.build(down_dev, shape)


def write_tc(args: argparse.Namespace) -> dict[str, Any]:
    shape = LinkShape.parse(args.rate, args.delay, args.loss, args.queue)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(tc_lines(args.up_dev, args.down_dev, shape)) + "\n")
    return {"tc_batch": str(out), "shape": shape.to_dict()}


def source_files() -> list[Path]:
    """The Makefile and the C sources the nodes build: common/ and each program's folder
    (not fuzz/, whose targets only the controller builds)."""
    return [FTP_IMPL / "Makefile",
            *sorted(p for p in FTP_IMPL.glob("*/*.[ch]") if p.parent.name != "fuzz")]


def source_version() -> dict[str, str]:
    """The sources' digest (what the nodes build) and the commit they came from, if known."""
    digest = hashlib.sha256()
    for path in source_files():
        digest.update(path.relative_to(FTP_IMPL).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    # rev-parse only reads: nothing here may change the repository's state.
    commit = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"],
                            capture_output=True, text=True)
    return {"sources_sha256": digest.hexdigest(),
            "commit": commit.stdout.strip() if commit.returncode == 0 else "unknown"}


def write_source(args: argparse.Namespace) -> dict[str, Any]:
    """ftp-impl's Makefile and sources with their modification times (so make on a node
    rebuilds exactly what changed) and a VERSION file the nodes report back."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    version = source_version()
    text = "".join(f"{key}={value}\n" for key, value in sorted(version.items())).encode()
    with tarfile.open(out / SOURCE_ARCHIVE, "w:gz") as tar:
        for path in source_files():
            tar.add(path, arcname=f"ftp-impl/{path.relative_to(FTP_IMPL).as_posix()}")
        info = tarfile.TarInfo("ftp-impl/VERSION")
        info.size, info.mode = len(text), 0o644
        info.mtime = int(max(p.stat().st_mtime for p in source_files()))
        tar.addfile(info, io.BytesIO(text))
    encoded = base64.encodebytes((out / SOURCE_ARCHIVE).read_bytes())
    (out / SOURCE_ARCHIVE_B64).write_bytes(encoded)
    return {"archive": str(out / SOURCE_ARCHIVE), "archive_b64": str(out / SOURCE_ARCHIVE_B64),
            **version}


def _normalised(member: tarfile.TarInfo) -> tarfile.TarInfo:
    member.mtime, member.uid, member.gid, member.uname, member.gname = 0, 0, 0, "", ""
    return member


def write_dataset(args: argparse.Namespace) -> dict[str, Any]:
    """The harness's data set (same content and digests as an emulated run of the point),
    archived as NAME/ (the files served) beside NAME.sha256 (sha256sum's format)."""
    from ..workloads.dataset import ensure

    out = Path(args.out)
    data = ensure(out / "cache", args.size, args.count, args.seed)
    name = data.root.name
    sums = "".join(f"{digest}  {name}/{file}\n" for file, digest in sorted(data.digests.items()))
    (out / f"{name}.sha256").write_text(sums)
    (out / f"{name}.manifest.json").write_text(json.dumps(data.digests, indent=1))
    archive = out / DATA_ARCHIVE
    # The same bytes every time for the same data set, so a copy to a node that has it
    # already changes nothing.
    with gzip.GzipFile(archive, "wb", mtime=0) as packed, \
            tarfile.open(fileobj=packed, mode="w") as tar:
        tar.add(data.root, arcname=name, filter=_normalised)
        tar.add(out / f"{name}.sha256", arcname=f"{name}.sha256", filter=_normalised)
    return {"archive": str(archive), "name": name, "files": len(data.digests),
            "manifest": str(out / f"{name}.manifest.json")}


def unpack(bundle: Path, into: Path) -> None:
    """A node's archive, refused if any member would land outside `into` or is not a plain
    file or directory (this Python's tarfile predates extraction filters)."""
    with tarfile.open(bundle) as tar:
        members = tar.getmembers()
        for member in members:
            target = (into / member.name).resolve()
            if not (member.isfile() or member.isdir()) or not target.is_relative_to(
                    into.resolve()):
                raise ValueError(f"{bundle}: refusing member {member.name!r}")
        tar.extractall(into, members=members)


def analyse(run_dir: Path, variant: str, client_ip: str, manifest: Path) -> dict[str, Any]:
    """A fetched run read the harness's way (the ftp-mget workload's `measure`): downloads
    checked against the data set's digests, the transfer time from the client's pcap and
    from its own events."""
    from experiments.workloads.ftp_mget.workload import PhaseSettings, measure

    from ..workloads.dataset import verify_download

    bundle = run_dir / CLIENT_BUNDLE
    if bundle.exists():
        unpack(bundle, run_dir)
    expected = json.loads(manifest.read_text())
    problems = verify_download(run_dir / "downloads", expected)
    capture = run_dir / "client.pcap"
    row: dict[str, Any] = {"variant": variant, "files_expected": len(expected),
                           "download_problems": problems,
                           # a lab's round trip is not known here: phases without stalls
                           **measure(run_dir, capture if capture.exists() else None, variant,
                                     METRIC, LINUX_SCTP_RTO_MIN_S, client_ip,
                                     PhaseSettings(math.inf, len(expected)))}
    if capture.exists():
        row["pcap_bytes"] = capture.stat().st_size
    row["status"] = "ok" if not problems and row["transfer_time_s"] is not None else "failed"
    (run_dir / "analysis.json").write_text(json.dumps(row, indent=1))
    return row


def mgmt_traffic(capture: Path, port: int) -> dict[str, Any]:
    """Packets on the management network that are not SSH (TCP to or from `port`). The
    link's own upkeep that a kernel sends by itself is not counted: ARP, and the IGMP report
    an interface sends when it comes up (seen once in CI: 192.168.77.254 to 224.0.0.22)."""
    from ..tshark import fields

    rows = fields(capture, ["frame.number", "ip.src", "ip.dst", "ip.proto", "tcp.srcport",
                            "tcp.dstport", "_ws.col.Protocol"], "frame")
    other = [r for r in rows if not (r[3] == "6" and str(port) in (r[4], r[5]))
             and r[6] != "ARP" and r[3] != "2"]
    return {"packets": len(rows), "ssh": sum(1 for r in rows if r[3] == "6"),
            "not_ssh": len(other), "examples": [" ".join(r) for r in other[:10]]}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="testbed controller",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=EXAMPLE)
    sub = parser.add_subparsers(dest="step", required=True)
    tc = sub.add_parser("tc", help="the router's tc -batch file")
    tc.add_argument("--up-dev", required=True, help="egress toward the server")
    tc.add_argument("--down-dev", required=True, help="egress toward the client")
    for name in ("rate", "delay", "loss", "queue"):
        tc.add_argument(f"--{name}")
    tc.add_argument("--out", required=True)
    source = sub.add_parser("source", help="archive of ftp-impl's sources")
    source.add_argument("--out", required=True)
    data = sub.add_parser("dataset", help="archive of the data set")
    data.add_argument("--size", type=int, required=True)
    data.add_argument("--count", type=int, required=True)
    data.add_argument("--seed", type=int, default=1)
    data.add_argument("--out", required=True)
    run = sub.add_parser("analyse", help="read a fetched run")
    run.add_argument("run_dir", type=Path)
    run.add_argument("--variant", required=True)
    run.add_argument("--client-ip", required=True)
    run.add_argument("--manifest", type=Path, required=True)
    check = sub.add_parser("mgmt-check", help="what crossed the management network")
    check.add_argument("pcap", type=Path)
    check.add_argument("--port", type=int, default=22)
    return parser


EXAMPLE = ("example:\n  testbed controller tc --up-dev eth1 --down-dev eth0 --rate 1Mbit "
           "--delay 35ms --out shape.batch")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.step == "tc":
        result = write_tc(args)
    elif args.step == "source":
        result = write_source(args)
    elif args.step == "dataset":
        result = write_dataset(args)
    elif args.step == "analyse":
        result = analyse(args.run_dir, args.variant, args.client_ip, args.manifest)
    else:
        result = mgmt_traffic(args.pcap, args.port)
    print(json.dumps(result))
    failed = result.get("status") == "failed" or result.get("not_ssh", 0) > 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
