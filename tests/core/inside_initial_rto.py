"""Runs inside a kernel: TCP clients whose SYNs get no answer, captured, before, during and after
an InitialRto(3000); writes what it saw as JSON for tests/core/test_initial_rto.py to judge.

    python3 tests/core/inside_initial_rto.py OUT.json PCAP

Two namespaces joined by a veth pair; the client connects to 10.9.0.3, which a permanent
neighbour entry sends to the other namespace, where nobody has it (no forwarding): the SYN and
its retransmissions leave and nothing comes back. Each client binds its own port:
    41001  before the program is attached                 (1 s expected)
    41002  wrapped into the cgroup while attached          (3 s)
    41003  not wrapped, at the same time                  (1 s)
    41004  after the block has ended                      (1 s)
Each waits for its first retransmission plus 0.6 s, so it sends exactly two SYNs."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from topology.net.initial_rto import InitialRto, configured_hz, measured_hz

PYTHON = "/usr/bin/python3"
CLIENT_NS, OTHER_NS = "rto-client", "rto-other"
CLIENT_IP, NOWHERE = "10.9.0.1", "10.9.0.3"
CLIENT = ("import socket, sys\n"
          "s = socket.socket()\n"
          "s.bind((sys.argv[1], int(sys.argv[2])))\n"
          "s.settimeout(float(sys.argv[3]))\n"
          "try:\n"
          "    s.connect((sys.argv[4], 5000))\n"
          "    sys.exit('connected: the SYN was answered')\n"
          "except TimeoutError:\n"
          "    pass\n")


def sh(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout


def client(port: int, wait_s: float) -> list[str]:
    return ["ip", "netns", "exec", CLIENT_NS, PYTHON, "-c", CLIENT, CLIENT_IP, str(port),
            str(wait_s), NOWHERE]


def finish(proc: subprocess.Popen) -> None:
    _, err = proc.communicate(timeout=30)
    if proc.returncode != 0:
        raise RuntimeError(f"client {proc.args!r} failed ({proc.returncode}): {err}")


def main(out: Path, pcap: Path) -> None:
    seen: dict = {"configured_hz": configured_hz(), "measured_hz": measured_hz()}
    sh("ip", "netns", "add", CLIENT_NS)
    sh("ip", "netns", "add", OTHER_NS)
    sh("ip", "link", "add", "rto0", "netns", CLIENT_NS, "type", "veth", "peer", "rto1",
       "netns", OTHER_NS)
    sh("ip", "-n", CLIENT_NS, "addr", "add", f"{CLIENT_IP}/24", "dev", "rto0")
    sh("ip", "-n", OTHER_NS, "addr", "add", "10.9.0.2/24", "dev", "rto1")
    for ns, dev in ((CLIENT_NS, "rto0"), (OTHER_NS, "rto1"), (CLIENT_NS, "lo")):
        sh("ip", "-n", ns, "link", "set", dev, "up")
    mac = json.loads(sh("ip", "-j", "-n", OTHER_NS, "link", "show", "rto1"))[0]["address"]
    sh("ip", "-n", CLIENT_NS, "neigh", "replace", NOWHERE, "lladdr", mac, "dev", "rto0",
       "nud", "permanent")

    capture = subprocess.Popen(["ip", "netns", "exec", CLIENT_NS, "tcpdump", "-i", "rto0",
                                "-s", "0", "-U", "-n", "-w", str(pcap), "tcp"],
                               stderr=subprocess.PIPE, text=True)
    seen["tcpdump"] = capture.stderr.readline().strip()     # "listening on rto0 ..."
    try:
        finish(subprocess.Popen(client(41001, 1.6), stderr=subprocess.PIPE, text=True))
        with InitialRto(3000) as rto:
            seen.update(hz=rto.hz, jiffies=rto.jiffies, cgroup=str(rto.cgroup))
            wrapped = subprocess.Popen(rto.wrap(client(41002, 3.6)), stderr=subprocess.PIPE,
                                       text=True)
            plain = subprocess.Popen(client(41003, 1.6), stderr=subprocess.PIPE, text=True)
            time.sleep(0.3)
            seen["cgroup_procs"] = len((rto.cgroup / "cgroup.procs").read_text().split())
            finish(plain)
            finish(wrapped)
        seen["cgroup_left"] = Path(seen["cgroup"]).exists()
        finish(subprocess.Popen(client(41004, 1.6), stderr=subprocess.PIPE, text=True))
    finally:
        time.sleep(1.0)     # tcpdump lags in a slow kernel: let it read the last SYN first
        capture.terminate()
        capture.wait(timeout=30)
    out.write_text(json.dumps(seen))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
