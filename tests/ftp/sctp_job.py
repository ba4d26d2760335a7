"""Runs INSIDE the pinned kernel (see test_sctp_kernel.py): the path topology (client 10.0.1.1,
router, server 10.0.2.1), ftpd on the server serving WORK/root over TCP and SCTP, ftpc of
every variant on the client (and a probe of MODE B over SCTP, mode_probe.py), each run
captured on the client's interface. Every step goes through experiments/procedure.py on the
nodes (`node.popen`), as the harness's runs do.
Everything lands in WORK for the host-side tests (checksums, tshark); job.json holds the exit
statuses and the server's state.

    python3 tests/ftp/sctp_job.py BIN WORK"""
from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from experiments import procedure
from topology.net.path import SERVER_IP, PathTopology
from topology.params import LinkShape

CLIENT_IF = "client-eth0"
VARIANTS = ("tcp", "sctp-naive", "sctp-ms", "sctp-ms-cp", "tcp-pipelined", "xftp")
MODE_PROBE = Path(__file__).with_name("mode_probe.py")
# Short SCTP timers, so that lost handshakes under 10% loss cost little.
KNOBS = ["--sctp-rto-min", "100", "--sctp-rto-initial", "300", "--sctp-rto-max", "2000"]
CLIENT_TIMEOUT_S = 60       # ftpc's stall limit
RUN_LIMIT_S = 300           # a whole session's
ABORT_TIMEOUT_S = 30
# a close whose FIN or SHUTDOWN is lost (10% loss) waits for its retransmission timer
TEARDOWN_LIMIT_S = 20
# A pcap is written to the kernel's tmpfs (cheap), then moved to WORK.
SCRATCH = Path("/dev/shm")


class Job:
    def __init__(self, path: PathTopology, bin_dir: Path, work: Path) -> None:
        self.path, self.bin, self.work = path, bin_dir, work
        self.client = path.client
        self.state: dict[str, Any] = {"rc": {}, "failures": {}}

    def log(self, text: str) -> None:
        print(text, flush=True)
        with open(self.work / "job.log", "a") as out:
            out.write(text + "\n")

    def save(self) -> None:
        (self.work / "job.json").write_text(json.dumps(self.state, indent=1))

    def client_argv(self, name: str, variant: str, commands: list[str],
                    options: tuple[str, ...] = (), timeout_s: int = CLIENT_TIMEOUT_S
                    ) -> list[str]:
        out = self.work / f"dl-{name}"
        out.mkdir(exist_ok=True)
        return procedure.ftp_client_argv(str(self.bin / "ftpc"), variant, SERVER_IP, str(out),
                                         timeout_s, commands=commands,
                                         options=[*options, *KNOBS])

    def start_capture(self, name: str) -> Any:
        return procedure.start_capture(self.client.popen, CLIENT_IF, SCRATCH / f"{name}.pcap")

    def stop_capture(self, name: str, capture: Any) -> None:
        """Once the session's closing exchange is on the wire and tcpdump has written all it
        was handed (it lags in this kernel); its closing counts go to NAME.capture.json,
        checked by the tests."""
        pcap = SCRATCH / f"{name}.pcap"
        # a close still under way as tcpdump stops is handed to it but not written
        procedure.await_sessions_closed((self.client.pid, self.path.server.pid), TEARDOWN_LIMIT_S)
        counts = procedure.stop_capture(capture)
        (self.work / f"{name}.capture.json").write_text(json.dumps(counts))
        shutil.move(pcap, self.work / f"{name}.pcap")

    def session(self, name: str, variant: str, *commands: str,
                options: tuple[str, ...] = ()) -> None:
        """One captured ftpc session to its end."""
        capture = self.start_capture(name)
        try:
            self.state["rc"][name] = procedure.run(
                self.client.popen, self.client_argv(name, variant, list(commands), options),
                self.work / f"ev-{name}.jsonl", self.work / f"err-{name}.txt", RUN_LIMIT_S)
        except procedure.RunFailure as failure:
            self.state["rc"][name] = None
            self.state["failures"][name] = str(failure)
        finally:
            self.stop_capture(name, capture)
        self.log(f"run {name} done rc={self.state['rc'][name]}")
        self.save()

    def aborted_by_server(self, variant: str, huge: Path) -> None:
        """The file shrinks under the server mid-transfer: it cannot send the byte count it
        announced and aborts the association."""
        name = f"abort-{variant}"
        capture = self.start_capture(name)
        try:
            with ThreadPoolExecutor(1) as pool:
                session = pool.submit(
                    procedure.run, self.client.popen,
                    self.client_argv(name, variant, ["get", "abort/huge.bin"],
                                     timeout_s=ABORT_TIMEOUT_S),
                    self.work / f"ev-{name}.jsonl", self.work / f"err-{name}.txt",
                    RUN_LIMIT_S)
                time.sleep(1)
                with open(huge, "r+b") as shrinking:  # by path, hostfs refuses (EINVAL)
                    shrinking.truncate(1_000_000)
                self.state["rc"][name] = session.result()
        finally:
            self.stop_capture(name, capture)
        self.log(f"run {name} done rc={self.state['rc'][name]}")

    def mode_probe(self) -> None:
        """MODE B asked over an SCTP control association (tcp-pipelined is TCP only)."""
        name = "mode-b-sctp"
        try:
            self.state["rc"][name] = procedure.run(
                self.client.popen, [sys.executable, str(MODE_PROBE), SERVER_IP,
                                    str(procedure.FTP_PORT)],
                self.work / f"{name}.json", self.work / f"err-{name}.txt", RUN_LIMIT_S)
        except procedure.RunFailure as failure:
            self.state["rc"][name] = None
            self.state["failures"][name] = str(failure)
        self.log(f"run {name} done rc={self.state['rc'][name]}")

    def killed_client(self, variant: str) -> None:
        """The client killed with unread data: its kernel aborts the association."""
        name = f"kill-{variant}"
        argv = self.client_argv(name, variant, ["get", "abort/huge.bin"],
                                timeout_s=ABORT_TIMEOUT_S)
        process = procedure.launch_logged(self.client.popen, argv, self.work / f"{name}.out")
        time.sleep(1)
        self.state["rc"][name] = procedure.stop(process, signal.SIGKILL)
        self.log(f"run {name} done rc={self.state['rc'][name]}")


def fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def main(bin_dir: str, work_dir: str) -> int:
    work = Path(work_dir)
    with PathTopology(LinkShape()) as path:
        job = Job(path, Path(bin_dir), work)
        job.log(f"path up in {path.timings_s['build']:.1f} s")
        ftpd = procedure.start(path.server.popen, procedure.ftp_server_argv(
            str(job.bin / "ftpd"), str(work / "root"), SERVER_IP, str(work / "ftpd.log"),
            RUN_LIMIT_S, options=["--allow-upload", *KNOBS]), work / "ftpd.out")
        try:
            job.state["ftpd_fds_before"] = fd_count(ftpd.pid)
            for variant in VARIANTS:
                job.session(f"small-{variant}", variant, "mget", "small/*.dat")
                job.session(f"big-{variant}", variant, "mget", "big/*.bin")

            # Active mode over SCTP, uploads on stream 1 / data associations, and an empty
            # listing (a 150 announcing 0 bytes, no message on stream 1).
            job.session("active-sctp-naive", "sctp-naive", "mget", "big/*.bin",
                        options=("--active",))
            job.session("put-sctp-ms", "sctp-ms", "put", str(work / "upload-ms.bin"),
                        "ls", "empty")
            job.session("put-sctp-naive", "sctp-naive", "put", str(work / "upload-naive.bin"),
                        "ls", "empty")

            # mget over a folder that holds a folder: skipped, the rest fetched (exit 3)
            for variant in VARIANTS:
                job.session(f"skip-{variant}", variant, "mget", "mixed/*")

            job.mode_probe()

            # 10% loss in both directions, drawn on the router.
            path.set_both(LinkShape(loss=0.1))
            for variant in VARIANTS:
                job.session(f"loss-{variant}", variant, "mget", "loss/*")
            # tcp-pipelined's acceptance: the small and the big set under loss too
            job.session("loss-small-tcp-pipelined", "tcp-pipelined", "mget", "small/*.dat")
            job.session("loss-big-tcp-pipelined", "tcp-pipelined", "mget", "big/*.bin")
            # and xftp's, with its 4 connections per transfer
            job.session("loss-small-xftp", "xftp", "mget", "small/*.dat")
            job.session("loss-big-xftp", "xftp", "mget", "big/*.bin")
            path.set_both(LinkShape())

            # Associations aborted mid-file, on a link slow enough (40 Mbit/s from the server)
            # that the transfer is still under way a second in.
            path.set_link("down", LinkShape.parse("40Mbit"))
            huge, original = work / "root/abort/huge.bin", work / "root/abort/huge.bin.orig"
            for variant in ("sctp-naive", "sctp-ms"):
                shutil.copyfile(original, huge)
                job.aborted_by_server(variant, huge)
                shutil.copyfile(original, huge)
                job.killed_client(variant)
            path.set_link("down", LinkShape())
            job.save()
            time.sleep(0.5)

            # The server still serves, and its main process holds no extra descriptors.
            job.session("after-sctp-ms-cp", "sctp-ms-cp", "mget", "big/*.bin")
            job.session("after-sctp-naive", "sctp-naive", "mget", "big/*.bin")
            time.sleep(0.5)
            job.state["ftpd_fds_after"] = fd_count(ftpd.pid)
            job.state["ftpd_alive"] = ftpd.poll() is None
        finally:
            job.state["ftpd_rc"] = procedure.stop(ftpd)
            job.save()
    job.log("job end")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
