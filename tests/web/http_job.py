"""Runs INSIDE the pinned kernel (see test_http_kernel.py): the path topology (client 10.0.1.1,
router, server 10.0.2.1), httpd on the server serving WORK/www over TCP and SCTP, httpc on the
client fetching the page over each, at loss 0 and at 10% each way, each run captured on the
client's interface. Everything lands in WORK for the host-side tests; job.json holds the exit
statuses and the server's state.

    python3 tests/web/http_job.py BIN WORK"""
from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from experiments import procedure
from topology.net.path import SERVER_IP, PathTopology
from topology.params import LinkShape

CLIENT_IF = "client-eth0"
PAGE = ["/page.html"] + [f"/o{i}.png" for i in range(1, 8)]
RUN_LIMIT_S = 120
# a close whose FIN or SHUTDOWN is lost (10% loss) waits for its retransmission timer
TEARDOWN_LIMIT_S = 20
SCRATCH = Path("/dev/shm")


def fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


class Job:
    def __init__(self, path: PathTopology, bin_dir: Path, work: Path) -> None:
        self.path, self.bin, self.work = path, bin_dir, work
        self.state: dict[str, Any] = {"rc": {}, "failures": {}}

    def save(self) -> None:
        (self.work / "job.json").write_text(json.dumps(self.state, indent=1))

    def fetch(self, name: str, proto: str, paths: list[str] = PAGE,
              options: tuple[str, ...] = ()) -> None:
        out = self.work / f"dl-{name}"
        out.mkdir(exist_ok=True)
        pcap = SCRATCH / f"{name}.pcap"
        capture = procedure.start_capture(self.path.client.popen, CLIENT_IF, pcap)
        try:
            self.state["rc"][name] = procedure.run(
                self.path.client.popen,
                procedure.http_client_argv(str(self.bin / "httpc"), proto, SERVER_IP, str(out),
                                           60, paths, options=options),
                self.work / f"ev-{name}.jsonl", self.work / f"err-{name}.txt", RUN_LIMIT_S)
        except procedure.RunFailure as failure:
            self.state["rc"][name] = None
            self.state["failures"][name] = str(failure)
        finally:
            # a close still under way as tcpdump stops is handed to it but not written
            procedure.await_sessions_closed((self.path.client.pid, self.path.server.pid),
                                            TEARDOWN_LIMIT_S)
            counts = procedure.stop_capture(capture)
            (self.work / f"{name}.capture.json").write_text(json.dumps(counts))
            shutil.move(pcap, self.work / f"{name}.pcap")
        self.save()


def main(bin_dir: str, work_dir: str) -> int:
    work = Path(work_dir)
    with PathTopology(LinkShape()) as path:
        job = Job(path, Path(bin_dir), work)
        httpd = procedure.start(path.server.popen, procedure.http_server_argv(
            str(job.bin / "httpd"), str(work / "www"), SERVER_IP, str(work / "httpd.log"),
            RUN_LIMIT_S), work / "httpd.out")
        try:
            job.state["httpd_fds_before"] = fd_count(httpd.pid)
            for proto in ("tcp", "sctp"):
                job.fetch(f"page-{proto}", proto)
            # fewer streams than objects: a stream is reused once its answer is whole
            job.fetch("page-sctp-2streams", "sctp", options=("--streams", "2"))
            job.fetch("missing-sctp", "sctp", paths=["/page.html", "/o1.png", "/gone.png"])
            path.set_both(LinkShape(loss=0.1))
            for proto in ("tcp", "sctp"):
                job.fetch(f"loss-{proto}", proto)
            path.set_both(LinkShape())
            time.sleep(2.5)        # the lingering closes end
            job.state["httpd_fds_after"] = fd_count(httpd.pid)
            job.state["httpd_alive"] = httpd.poll() is None
        finally:
            job.state["httpd_rc"] = procedure.stop(httpd)
            job.save()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
