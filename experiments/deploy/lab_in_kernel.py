"""Inside the pinned kernel: the emulated nodes as a lab would have them, then the playbooks.

The client-router-server `path` comes up unshaped (shape.yml shapes it), the management network
and the nodes' sshd come up beside it, a capture watches the management bridge, and
ansible-playbook runs each playbook from the root namespace (the controller) over SSH. What it
did goes to SPEC's `out` directory: summary.json (timings, RTT after shaping, the router's
qdiscs), one log per playbook and the management capture.

    python3 -m experiments.deploy.lab_in_kernel SPEC.json"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path as FsPath
from typing import Any

from topology.fidelity import probes
from topology.net.management import BRIDGE, STATE, ManagementNetwork
from topology.net.path import SERVER_IP, PathTopology
from topology.params import LinkShape

PLAYBOOKS = FsPath(__file__).resolve().parents[2] / "playbooks"
CAPTURE_START_TIMEOUT_S = 30.0


def start_capture(pcap: FsPath) -> subprocess.Popen[bytes]:
    """Whole packets on the management bridge, from before the first SSH connection."""
    capture = subprocess.Popen(["tcpdump", "-i", BRIDGE, "-n", "--immediate-mode", "-U", "-s",
                                "0", "-w", str(pcap)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert capture.stderr is not None
    deadline = time.monotonic() + CAPTURE_START_TIMEOUT_S
    while time.monotonic() < deadline:
        line = capture.stderr.readline().decode(errors="replace")
        if "listening on" in line:
            return capture
        if not line and capture.poll() is not None:
            break
    capture.kill()
    raise RuntimeError("tcpdump on the management bridge did not start")


def stop_capture(capture: subprocess.Popen[bytes]) -> None:
    time.sleep(0.5)  # tcpdump lags in this kernel; the last packets are still on their way
    capture.send_signal(signal.SIGINT)
    try:
        capture.wait(timeout=30)
    except subprocess.TimeoutExpired:
        capture.kill()
        capture.wait()


def run_playbook(name: str, env: dict[str, str], extra: FsPath, log: FsPath) -> dict[str, Any]:
    argv = ["ansible-playbook", "-i", str(PLAYBOOKS / "inventories" / "emulated.yml"),
            "-e", f"@{extra}", str(PLAYBOOKS / name)]
    started = time.monotonic()
    with log.open("wb") as out:
        status = subprocess.run(argv, cwd=PLAYBOOKS, env=env, stdout=out,
                                stderr=subprocess.STDOUT).returncode
    result: dict[str, Any] = {"playbook": name, "returncode": status,
                              "wall_s": time.monotonic() - started}
    if status != 0:
        result["errors"] = failure_lines(log)
    return result


def failure_lines(log: FsPath, limit: int = 40) -> list[str]:
    """What ansible said about the failed tasks (its one-line "fatal: ... FAILED! => {...}"
    reports), or the log's end: the report then says why without the log, which a test's
    temporary folder does not keep."""
    lines = log.read_text(errors="replace").splitlines()
    picked = [line for line in lines if "fatal:" in line or "ERROR!" in line]
    return (picked or lines)[-limit:]


def main(spec_file: str) -> int:
    spec = json.loads(FsPath(spec_file).read_text())
    out = FsPath(spec["out"])
    out.mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = {"playbooks": [], "timings_s": {}}
    extra = out / "extra-vars.json"
    extra.write_text(json.dumps({**spec["extra_vars"], "testbed_results_dir": str(out),
                                 "testbed_controller_dir": str(STATE / "controller")}))
    try:
        # Unshaped at first: shape.yml shapes the router, as on a lab.
        with PathTopology(LinkShape()) as path:
            summary["timings_s"]["path_build"] = path.timings_s["build"]
            with ManagementNetwork({n.name: n for n in path.net.hosts}) as mgmt:
                summary["timings_s"]["management_start"] = mgmt.timings_s["start"]
                summary["management"] = mgmt.describe()
                env = {**os.environ, **mgmt.ssh_environment(STATE / "ansible"),
                       "ANSIBLE_CONFIG": str(PLAYBOOKS / "ansible.cfg"),
                       "ANSIBLE_FORCE_COLOR": "0",
                       # per-task times in each playbook's log
                       "ANSIBLE_CALLBACKS_ENABLED": "ansible.posix.profile_tasks",
                       # the controller's result loop polls every millisecond by default:
                       # in this kernel that takes the CPU the workers need
                       "ANSIBLE_INTERNAL_POLL_INTERVAL": "0.05"}
                capture = start_capture(out / "mgmt.pcap")
                try:
                    for name in spec["playbooks"]:
                        result = run_playbook(name, env, extra,
                                              out / f"ansible-{name.removesuffix('.yml')}.log")
                        summary["playbooks"].append(result)
                        print(json.dumps(result), flush=True)
                        if result["returncode"] != 0:
                            break
                        if name == "shape.yml":
                            summary["router_qdiscs"] = path.node("router").cmd("tc qdisc show")
                            summary["rtt_after_shaping"] = probes.ping(path.client, SERVER_IP,
                                                                       5, 0.2)
                finally:
                    stop_capture(capture)
    finally:
        (out / "summary.json").write_text(json.dumps(summary, indent=1))
    return 0 if all(p["returncode"] == 0 for p in summary["playbooks"]) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
