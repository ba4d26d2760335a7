"""Inside the pinned kernel: the measurements of `testbed bench sctp-stacks` (sctp_stacks.py)
on one client-router-server path (PathTopology), reshaped in place for each condition of the
plan. The server sends and the client receives, as E1's downloads go.

Per condition and repetition, back to back, so that a change of the host's load hits all alike:
- bulk: bulkflow's sender into bulkflow's receiver on the kernel's SCTP, the same on usrsctp
  (inside UDP, port 9899 at both ends), and usrsctp's own `tsctp` into bulkflow's usrsctp
  receiver (the reference sender), each for the condition's seconds with the same message
  size; on the project's kernel also the kernel's SCTP with a switch of its own set in the
  sender's namespace for that run alone (KERNEL_SWITCH_SENDERS). With "cpu" in the plan (a
  real-time kernel): the sender's and the receiver's own CPU (the children's rusage, each
  reaped alone) and the whole guest's busy time (/proc/stat).
- per file: ftpc's mget of the plan's files, by variant, against ftpd on each SCTP stack, and
  over TCP once, the reference.
Raw outputs go to WORK; OUT lists what ran, read by sctp_stacks.py. With "pcaps" in the plan,
each run's packets at the server's interface (the sender's side of the router, before the
loss) go to WORK/<run>.pcap, headers only.

    python3 -m experiments.benchmarks.sctp_stacks_job PLAN.json WORK OUT.json"""
from __future__ import annotations

import contextlib
import json
import os
import resource
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from topology.net.path import CLIENT_IP, SERVER_IP, PathTopology
from topology.params import LinkShape, Queue

from .. import procedure
from ..inkernel.kernel_batch import apply_sysctls
from ..stacks import KERNEL_SWITCHES

DATA = Path("/dev/shm/bench-sctp-stacks")   # the kernel's tmpfs
TSCTP = "/usr/lib/usrsctp/tsctp"
MESSAGE_BYTES = 16384          # bulkflow's default SCTP message; tsctp is given the same
SENDERS = ("bulkflow-kernel", "bulkflow-usrsctp", "tsctp")
# bulkflow on the kernel's SCTP with one of the project kernel's era switches
# (topology/kernel/timetravel/patches/) set in the sender's namespace: the one in which
# usrsctp's SCTP differs from the kernel's at a loss (a chunk whose fast retransmission is
# lost is fast-retransmitted again)
KERNEL_SWITCH_SENDERS = {
    "bulkflow-kernel-strikes-again": {"net.sctp.fast_rtx_strikes_again": "1"}}
SCTP_VARIANTS = ("sctp-naive", "sctp-ms", "sctp-ms-cp")
FIRST_PORT = 5001
PCAP_SNAPLEN = 0               # whole: Wireshark reads a truncated DATA chunk as no chunk
SERVER_IFACE = "server-eth0"
SLACK_S = 120                  # beyond a transfer's own seconds: start, drain, shutdown
USER_HZ = os.sysconf("SC_CLK_TCK")


class Progress:
    """`k of n` with an ETA from the mean wall time of the steps done so far."""

    def __init__(self, total: int) -> None:
        self.total, self.done, self.started = total, 0, time.monotonic()

    def step(self, what: str) -> None:
        self.done += 1
        spent = time.monotonic() - self.started
        eta = spent / self.done * (self.total - self.done)
        print(f"sctp-stacks: {self.done} of {self.total} done ({what}), "
              f"ETA {eta:.0f} s on the kernel's clock", flush=True)


def busy_s() -> float:
    """The guest's non-idle CPU time so far (user to steal, less idle and iowait)."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return (sum(values) - values[3] - values[4]) / USER_HZ


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def receiver_argv(bin_dir: Path, stack: str, port: int) -> list[str]:
    return procedure.bulk_receiver_argv(
        str(bin_dir / "bulkflow"), "sctp", CLIENT_IP, port,
        ["--accept-timeout", "60", *procedure.sctp_stack_options(stack, peer=False)])


def sender_argv(bin_dir: Path, sender: str, port: int, seconds: float) -> list[str]:
    if sender == "tsctp":
        # -U/-E: the peer's UDP port and its own (RFC 6951); -D: no Nagle, as bulkflow's
        udp = str(procedure.SCTP_UDP_PORT)
        return [TSCTP, "-U", udp, "-E", udp, "-D", "-l", str(MESSAGE_BYTES),
                "-T", f"{seconds:g}", "-p", str(port), CLIENT_IP]
    return [str(bin_dir / "bulkflow"), "send", "--proto", "sctp", "--to", f"{CLIENT_IP}:{port}",
            "--duration", f"{seconds:g}", "--write-size", str(MESSAGE_BYTES),
            *procedure.sctp_stack_options(stack_of(sender))]


def stack_of(sender: str) -> str:
    """The SCTP stack a bulk sender runs on, and its receiver with it."""
    return "usrsctp" if sender in ("bulkflow-usrsctp", "tsctp") else "kernel"


@contextlib.contextmanager
def switched(path: PathTopology, sender: str) -> Iterator[None]:
    """The sender's switches set for its run (a kernel without them refuses), and put back to
    Linux's own after it."""
    values = KERNEL_SWITCH_SENDERS.get(sender, {})
    if values:
        apply_sysctls(path.server, values)
    try:
        yield
    finally:
        if values:
            apply_sysctls(path.server, {name: KERNEL_SWITCHES[name] for name in values})


@contextlib.contextmanager
def captured(path: PathTopology, work: Path, name: str, on: bool) -> Iterator[None]:
    """tcpdump at the server around a run when the plan asks for pcaps; its counts checked,
    so a pcap that lost packets says so."""
    if not on:
        yield
        return
    capture = procedure.start_capture(path.server.popen, SERVER_IFACE, work / f"{name}.pcap",
                                      snaplen=PCAP_SNAPLEN)
    try:
        yield
    finally:
        shortfall = procedure.capture_shortfall(procedure.stop_capture(capture))
        if shortfall:
            print(f"sctp-stacks: {name}.pcap: {shortfall}", file=sys.stderr, flush=True)


def bulk(path: PathTopology, bin_dir: Path, work: Path, row: dict[str, Any],
         seconds: float, pcaps: bool = False) -> dict[str, Any]:
    """One transfer; the receiver started first and reaped last, so each rusage delta is one
    program's."""
    name = f"bulk-{row['condition']}-{row['sender']}-{row['rep']}"
    with captured(path, work, name, pcaps), switched(path, row["sender"]):
        receiver = procedure.start(path.client.popen,
                                   receiver_argv(bin_dir, stack_of(row["sender"]), row["port"]),
                                   work / f"{name}.recv.jsonl")
        cpu, busy = children_cpu_s(), busy_s()
        try:
            row["sender_rc"] = procedure.run(
                path.server.popen, sender_argv(bin_dir, row["sender"], row["port"], seconds),
                work / f"{name}.send.out", work / f"{name}.send.err", seconds + SLACK_S)
            sent_cpu = children_cpu_s()
            row["receiver_rc"] = procedure.wait_exit(receiver, SLACK_S)
        finally:
            procedure.stop(receiver)
    row.update(sender_cpu_s=sent_cpu - cpu, receiver_cpu_s=children_cpu_s() - sent_cpu,
               guest_busy_s=busy_s() - busy, name=name)
    return row


def make_files(count: int, size: int) -> None:
    (DATA / "files").mkdir(parents=True, exist_ok=True)
    for i in range(count):
        (DATA / "files" / f"f{i:03d}.dat").write_bytes(os.urandom(size))


def mget(path: PathTopology, bin_dir: Path, work: Path, row: dict[str, Any],
         timeout_s: float, pcaps: bool = False) -> dict[str, Any]:
    name = f"mget-{row['condition']}-{row['stack']}-{row['variant']}-{row['rep']}"
    row["name"] = name
    with captured(path, work, name, pcaps):
        row["rc"] = procedure.run(path.client.popen, procedure.ftp_client_argv(
            str(bin_dir / "ftpc"), row["variant"], SERVER_IP, "/dev/null", timeout_s,
            options=procedure.sctp_stack_options(row["stack"]) if row["variant"] != "tcp"
            else (), commands=("mget", "files/*.dat")),
            work / f"{name}.jsonl", work / f"{name}.err", timeout_s + SLACK_S)
    return row


def per_file(path: PathTopology, bin_dir: Path, work: Path, condition: dict[str, Any],
             rep: int, timeout_s: float, progress: Progress,
             pcaps: bool = False) -> list[dict[str, Any]]:
    rows = []
    for stack in ("kernel", "usrsctp"):
        ftpd = procedure.start(path.server.popen, procedure.ftp_server_argv(
            str(bin_dir / "ftpd"), str(DATA), SERVER_IP, str(work / f"ftpd-{stack}.log"),
            timeout_s, options=procedure.sctp_stack_options(stack, peer=False)),
            work / f"ftpd-{condition['name']}-{stack}-{rep}.out")
        try:
            variants = ("tcp", *SCTP_VARIANTS) if stack == "kernel" else SCTP_VARIANTS
            for variant in variants:
                rows.append(mget(path, bin_dir, work, {
                    "condition": condition["name"], "rep": rep, "stack":
                    "kernel" if variant == "tcp" else stack, "variant": variant}, timeout_s,
                    pcaps))
                progress.step(rows[-1]["name"])
        finally:
            procedure.stop(ftpd)
    return rows


def shape(condition: dict[str, Any], queue_bytes: int) -> LinkShape:
    return LinkShape(condition["rate_bps"], condition["delay_s"], condition["loss"],
                     Queue(queue_bytes, "bytes"))


def main(plan_file: str, work_dir: str, out_file: str) -> int:
    plan, work = json.loads(Path(plan_file).read_text()), Path(work_dir)
    bin_dir = Path(plan["bin_dir"])
    make_files(plan["files"], plan["file_bytes"])
    senders = plan.get("senders", SENDERS)
    steps = len(plan["conditions"]) * plan["reps"] * (
        len(senders) + (4 + len(SCTP_VARIANTS) if plan["files"] else 0))
    progress, rows, port = Progress(steps), [], FIRST_PORT
    out: dict[str, Any] = {"kernel_release": os.uname().release, "bulk": rows, "mget": []}
    first = plan["conditions"][0]
    with PathTopology(shape(first, plan["queue_bytes"])) as path:
        for condition in plan["conditions"]:
            link = shape(condition, plan["queue_bytes"])
            path.set_links({"up": link, "down": link})
            for rep in range(plan["reps"]):
                for sender in senders:
                    rows.append(bulk(path, bin_dir, work, {
                        "condition": condition["name"], "rep": rep, "sender": sender,
                        "port": port}, condition["bulk_s"], plan.get("pcaps", False)))
                    port += 1
                    progress.step(rows[-1]["name"])
                if plan["files"]:
                    out["mget"] += per_file(path, bin_dir, work, condition, rep,
                                            plan["mget_timeout_s"], progress,
                                            plan.get("pcaps", False))
    Path(out_file).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
