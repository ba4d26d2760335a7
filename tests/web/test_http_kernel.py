"""httpd and httpc inside the pinned kernel (SCTP exists only there), on the path topology:
the page over TCP and over SCTP, byte-exact, at loss 0 and at 10% each way; from the pcap,
every answer travels on the stream its request used, one stream per object in flight. One
kernel boot per build runs everything (http_job.py); the tests check what it left."""
from __future__ import annotations

import json
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

from tests.ftp import ftphelp
from tests.ftp.kernel import run_job
from tests.web.httphelp import make_site
from topology.net.path import CLIENT_IP, SERVER_IP

pytestmark = pytest.mark.kernel

JOB = Path(__file__).with_name("http_job.py")


@pytest.fixture(scope="module", params=ftphelp.KERNEL_BUILDS)
def job(request, built, tmp_path_factory):
    work = tmp_path_factory.mktemp(f"http-{request.param}")
    work.chmod(0o755)
    files = make_site(work / "www")
    r = run_job(JOB, ftphelp.IMPL / request.param, work, timeout=400)
    assert r.returncode == 0, f"kernel job failed ({r.returncode}):\n{r.stdout}\n{r.stderr}"
    return work, files


def state(work: Path) -> dict:
    return json.loads((work / "job.json").read_text())


def events(work: Path, name: str) -> list[dict]:
    return [json.loads(line) for line in (work / f"ev-{name}.jsonl").read_text().splitlines()
            if line.startswith("{")]


def check_page(work: Path, files: dict[str, bytes], name: str) -> list[dict]:
    assert state(work)["rc"][name] == 0, (work / f"err-{name}.txt").read_text() + \
        state(work)["failures"].get(name, "")
    for file in ["page.html"] + [f"o{i}.png" for i in range(1, 8)]:
        assert (work / f"dl-{name}" / file).read_bytes() == files[file], file
    ev = events(work, name)
    assert [e["object"] for e in ev if e["event"] == "complete"].count(0) == 1
    assert len([e for e in ev if e["event"] == "complete"]) == 8
    return ev


def server_data_streams(pcap: Path) -> dict[int, int]:
    """SCTP DATA chunks from the server per stream id, read from the client's pcap."""
    counts = json.loads(pcap.with_suffix(".capture.json").read_text())
    assert counts.get("dropped") == 0 and counts["captured"] > 0, counts
    r = subprocess.run(["tshark", "-r", str(pcap), "-Y", f"ip.src=={SERVER_IP} && "
                        "sctp.chunk_type==0", "-T", "fields", "-e", "sctp.data_sid"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    per: dict[int, int] = defaultdict(int)
    for line in r.stdout.split():
        for sid in line.split(","):
            per[int(sid, 0)] += 1
    return dict(per)


def request_streams(pcap: Path) -> list[int]:
    r = subprocess.run(["tshark", "-r", str(pcap), "-Y", f"ip.src=={CLIENT_IP} && "
                        "sctp.chunk_type==0", "-T", "fields", "-e", "sctp.data_sid"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return [int(sid, 0) for line in r.stdout.split() for sid in line.split(",")]


@pytest.mark.parametrize("proto", ["tcp", "sctp"])
def test_the_page_arrives_whole(job, proto):
    check_page(*job, f"page-{proto}")


@pytest.mark.parametrize("proto", ["tcp", "sctp"])
def test_the_page_arrives_whole_under_10_percent_loss(job, proto):
    check_page(*job, f"loss-{proto}")


def test_each_answer_travels_on_its_request_s_stream(job):
    work, files = job
    ev = check_page(work, files, "page-sctp")
    asked = {e["object"]: e["stream"] for e in ev if e["event"] == "request"}
    answered = {e["object"]: e["stream"] for e in ev if e["event"] == "complete"}
    assert asked == answered
    assert sorted(asked[i] for i in range(1, 8)) == list(range(7))   # one stream per object
    pcap = work / "page-sctp.pcap"
    assert sorted(request_streams(pcap)) == sorted(asked.values())
    data = server_data_streams(pcap)
    assert sorted(data) == list(range(7))
    # 1 KB writes, each one DATA chunk, the head riding in the first: the 50 KB document and
    # object 1 on stream 0, 4 KB on each other stream (loss 0: nothing sent twice)
    assert data == {0: 50 + 4, **{s: 4 for s in range(1, 7)}}, data


def test_two_streams_are_reused_as_answers_complete(job):
    work, files = job
    ev = check_page(work, files, "page-sctp-2streams")
    connected = next(e for e in ev if e["event"] == "connected")
    assert connected["streams_out"] == 2
    assert {e["stream"] for e in ev if e["event"] == "request"} == {0, 1}


def test_a_missing_object_over_sctp_fails_cleanly(job):
    work, _ = job
    assert state(work)["rc"]["missing-sctp"] == 1
    assert "/gone.png: status 404" in (work / "err-missing-sctp.txt").read_text()
    assert not (work / "dl-missing-sctp" / "gone.png").exists()


def test_the_server_survives_and_keeps_no_descriptors(job):
    s = state(job[0])
    assert s["httpd_alive"] and s["httpd_fds_after"] == s["httpd_fds_before"]
    log = (job[0] / "httpd.log").read_text()
    assert log.count("CONNECT sctp streams=10") == 3 and log.count("CONNECT sctp streams=2") == 1
    assert log.count("CONNECT tcp") == 2
