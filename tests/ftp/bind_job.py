"""Runs INSIDE the pinned kernel (see test_bind.py). The client is an emulated node as a
deployment has it: the path topology's experiment link (client-eth0, 10.0.1.1, plus a second
address 10.0.1.11) and the management network of the emulated nodes beside it
(topology/net/management.py: a veth from each node to a bridge, each node's sshd on it).
ftpd listens on the server's experiment address only. Each run is captured on both client
links; every step goes through experiments/procedure.py on the nodes. job.json holds the exit
statuses and the management addresses.

    python3 tests/ftp/bind_job.py WORK BIN_DIR..."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from experiments import procedure
from topology.net.management import ManagementNetwork
from topology.net.node_exec import run_script
from topology.net.path import SERVER_IP, PathTopology
from topology.params import LinkShape

BOUND = "10.0.1.11"          # the client's second experiment address
EXP_IF = "client-eth0"
CLIENT_TIMEOUT_S = 30
RUN_LIMIT_S = 120
RUNS = (  # name, variant, the address ftpc binds to, its other options
    ("unbound-sctp-naive", "sctp-naive", None, ()),
    ("bound-sctp-naive", "sctp-naive", BOUND, ()),
    ("bound-sctp-ms", "sctp-ms", BOUND, ()),
    ("bound-tcp", "tcp", BOUND, ()),
    ("bound-active-tcp", "tcp", BOUND, ("--active",)),
    ("bound-active-sctp-naive", "sctp-naive", BOUND, ("--active",)),
)


def log(work: Path, text: str) -> None:
    print(text, flush=True)
    with open(work / "job.log", "a") as out:
        out.write(text + "\n")


def session(client: Any, mgmt_if: str, work: Path, bin_dir: Path, name: str, variant: str,
            bind: str | None, options: tuple[str, ...]) -> int | None:
    """One ftpc mget under capture on both of the client's links; its exit status."""
    downloads = work / f"dl-{name}"
    downloads.mkdir()
    captures = {iface: (work / f"{name}.{kind}.pcap") for iface, kind in
                ((EXP_IF, "exp"), (mgmt_if, "mgmt"))}
    running = {iface: procedure.launch_capture(client.popen, iface, pcap)
               for iface, pcap in captures.items()}
    try:
        for iface, capture in running.items():
            procedure.await_capture(capture, iface)
        argv = procedure.ftp_client_argv(str(bin_dir / "ftpc"), variant, SERVER_IP,
                                         str(downloads), CLIENT_TIMEOUT_S, bind=bind,
                                         options=options)
        try:
            return procedure.run(client.popen, argv, work / f"ev-{name}.jsonl",
                                 work / f"err-{name}.txt", RUN_LIMIT_S)
        except procedure.RunFailure as failure:
            (work / f"err-{name}.txt").write_text(str(failure))
            return None
    finally:
        time.sleep(1)  # whatever the session left behind (closing chunks) is captured too
        for capture in running.values():
            procedure.stop_capture(capture)


def main(work_dir: str, *bin_dirs: str) -> int:
    work = Path(work_dir)
    state: dict[str, Any] = {"rc": {}}
    with PathTopology(LinkShape()) as path:
        client, server = path.client, path.server
        run_script(client, [["ip", "addr", "add", f"{BOUND}/24", "dev", EXP_IF]])
        with ManagementNetwork({n.name: n for n in path.net.hosts}) as mgmt:
            state["management"] = mgmt.describe()
            mgmt_if = next(m.node_if for m in mgmt.plan.members if m.name == "client")
            state["client_mgmt_if"] = mgmt_if
            log(work, f"path and management network up: {state['management']}")
            for bin_dir in map(Path, bin_dirs):
                build = bin_dir.name
                ftpd = procedure.start(server.popen, procedure.ftp_server_argv(
                    str(bin_dir / "ftpd"), str(work / "root"), SERVER_IP,
                    str(work / f"ftpd-{build}.log"), 60), work / f"ftpd-{build}.out")
                try:
                    for name, variant, bind, options in RUNS:
                        run = f"{build}-{name}"
                        state["rc"][run] = session(client, mgmt_if, work, bin_dir, run,
                                                   variant, bind, options)
                        log(work, f"run {run} rc={state['rc'][run]}")
                finally:
                    procedure.stop(ftpd)
                (work / "job.json").write_text(json.dumps(state, indent=1))
    log(work, "job end")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
