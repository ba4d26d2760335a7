"""Deploy to the emulated nodes and run one point over SSH, as on a lab (`make deploy-emulated`).

Boots the pinned kernel, where lab_in_kernel.py brings up the path, the management
network and each node's sshd, and runs deploy.yml, shape.yml and run_point.yml against
playbooks/inventories/emulated.yml. Back on the host it checks that only SSH crossed the
management network and prints what each step took.

    testbed deploy-emulated [--out DIR] [--variant V] [--rate R] [--delay D] [--loss L]
                            [--queue Q] [--files N] [--file-size B]"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

from experiments.workloads.ftp_mget.workload import VARIANTS
from topology.kernel import BackendError, open_backend
from topology.kernel.base import default_results_root

from .controller import mgmt_traffic

PYTHON = "/usr/bin/python3"
PLAYBOOKS = ("deploy.yml", "shape.yml", "run_point.yml")
DEFAULT_OUT = default_results_root() / "ansible" / "emulated"
# Ansible's controller, three sshd and the Python of each module run side by side.
MEMORY = "512M"
SSH_PORT = 22


def point_vars(args: argparse.Namespace) -> dict[str, Any]:
    chosen = {"testbed_variant": args.variant, "testbed_rate": args.rate,
              "testbed_delay": args.delay, "testbed_loss": args.loss,
              "testbed_queue": args.queue, "testbed_files": args.files,
              "testbed_file_size": args.file_size}
    return {key: value for key, value in chosen.items() if value is not None}


def prepare(out: Path) -> None:
    """A fresh output directory; an old one is replaced only if it is a previous run's."""
    if out.exists() and any(out.iterdir()):
        if not (out / "summary.json").exists() and not (out / "spec.json").exists():
            raise SystemExit(f"error: {out} holds something else; choose another --out")
        shutil.rmtree(out)
    out.mkdir(parents=True)


def deploy(out: Path, extra_vars: dict[str, Any], timeout_s: float,
           playbooks: tuple[str, ...] = PLAYBOOKS, stream: bool = True) -> dict[str, Any]:
    """Boot, run the playbooks inside, check the management capture; the report is also
    written to out/report.json."""
    prepare(out)
    spec = out / "spec.json"
    spec.write_text(json.dumps({"out": str(out), "extra_vars": extra_vars,
                                "playbooks": list(playbooks)}, indent=1))
    result = open_backend("uml", memory=MEMORY).run(
        [PYTHON, "-m", "experiments.deploy.lab_in_kernel", str(spec)], timeout_s=timeout_s,
        stream=stream)
    summary_file = out / "summary.json"
    summary = json.loads(summary_file.read_text()) if summary_file.exists() else {}
    report: dict[str, Any] = {"returncode": result.returncode,
                              "kernel_release": result.kernel_release,
                              "boot_timings_s": result.timings_s, **summary}
    if (out / "mgmt.pcap").exists():
        report["mgmt_traffic"] = mgmt_traffic(out / "mgmt.pcap", SSH_PORT)
    analyses = sorted(out.glob("*/analysis.json"))
    if analyses:
        report["analysis"] = json.loads(analyses[0].read_text())
        report["run_dir"] = str(analyses[0].parent)
    if result.returncode != 0:
        report["stderr_tail"] = result.stderr[-3000:]
    (out / "report.json").write_text(json.dumps(report, indent=1))
    return report


def describe(report: dict[str, Any]) -> str:
    lines = [f"kernel {report.get('kernel_release')}, exit {report['returncode']}"]
    for key, value in report.get("timings_s", {}).items():
        lines.append(f"  {key:<24} {value:7.1f} s")
    for step in report.get("playbooks", []):
        lines.append(f"  {step['playbook']:<24} {step['wall_s']:7.1f} s  (exit "
                     f"{step['returncode']})")
        lines += [f"    {line}" for line in step.get("errors", [])]
    rtt = report.get("rtt_after_shaping")
    if rtt:
        lines.append(f"  RTT after shaping        {rtt['avg_ms']:7.2f} ms")
    analysis = report.get("analysis")
    if analysis:
        lines.append(f"  transfer time (pcap)     {analysis['transfer_time_s']} s, "
                     f"status {analysis['status']}, {analysis['files_expected']} files")
    traffic = report.get("mgmt_traffic")
    if traffic:
        lines.append(f"  management network       {traffic['packets']} packets, "
                     f"{traffic['not_ssh']} not SSH")
    return "\n".join(lines)


EXAMPLE = "example:\n  testbed deploy-emulated --variant sctp-ms --loss 0.03"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="testbed deploy-emulated",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=EXAMPLE)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--variant", choices=VARIANTS)
    for name in ("rate", "delay", "loss", "queue"):
        parser.add_argument(f"--{name}")
    parser.add_argument("--files", type=int)
    parser.add_argument("--file-size", type=int)
    parser.add_argument("--timeout", type=float, default=1800, help="wall-time limit (s)")
    args = parser.parse_args(argv)
    try:
        report = deploy(args.out.resolve(), point_vars(args), args.timeout)
    except BackendError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(describe(report))
    print(f"results: {args.out}")
    ok = (report["returncode"] == 0 and report.get("analysis", {}).get("status") == "ok"
          and report.get("mgmt_traffic", {}).get("not_ssh", 1) == 0)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
