"""All six variants inside the pinned kernel (SCTP exists only there), on the path topology
(client, router, server): mget of 100 small and of 3 large files, byte-identical; connections
and associations counted in real pcaps; 10% loss; associations aborted mid-file; MODE B
refused over SCTP. One kernel
boot per build runs everything (sctp_job.py, through experiments/procedure.py), the builds' two
kernels side by side, in the time-travel kernel's inf-cpu clock: the jobs mostly wait on the
lossy sessions' timers, which then cost no wall time (93 s for both builds, 5.5 min in real
time). The tests below check what each left behind."""
import json
import os
import random
import shutil
import signal
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.ftp import ftphelp
from tests.ftp.kernel import run_job
from topology.net.path import CLIENT_IP, SERVER_IP

pytestmark = pytest.mark.kernel

VARIANTS = ["tcp", "sctp-naive", "sctp-ms", "sctp-ms-cp", "tcp-pipelined", "xftp"]
XFTP_CONNECTIONS = 4   # ftpc's default --parallel
JOB = Path(__file__).with_name("sctp_job.py")
N_SMALL, N_BIG, N_LOSS = 100, 3, 20


def _tree(work):
    rng = random.Random(42)
    sums = {}
    layout = ([("small", f"f{i:03d}.dat", 10_000) for i in range(N_SMALL)]
              + [("big", f"b{i}.bin", 1_000_000) for i in range(N_BIG)]
              + [("loss", f"l{i:02d}.dat", 10_000) for i in range(N_LOSS)]
              + [("loss", "large.bin", 1_000_000)])
    for d, name, size in layout:
        p = work / "root" / d / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(rng.randbytes(size))
        sums[f"{d}/{name}"] = ftphelp.sha256(p)
    (work / "root" / "empty").mkdir()
    for name, size in (("a.dat", 5_000), ("z.dat", 7_000), ("d/inner.dat", 10)):
        p = work / "root" / "mixed" / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(rng.randbytes(size))
        sums[f"mixed/{name}"] = ftphelp.sha256(p)
    for v in ("ms", "naive"):
        (work / f"upload-{v}.bin").write_bytes(rng.randbytes(2_500_000))
    (work / "root" / "abort").mkdir()
    (work / "root" / "abort" / "huge.bin.orig").write_bytes(rng.randbytes(10_000_000))
    return sums


@pytest.fixture(scope="module")
def jobs(built, tmp_path_factory):
    """Every build's job, their kernels at once: build -> (its work folder, the files' digests,
    the job's CompletedProcess)."""
    for tool in ("tcpdump", "tshark", "tc"):
        assert shutil.which(tool) or os.path.exists(f"/usr/sbin/{tool}"), f"{tool} is required"
    works = {build: tmp_path_factory.mktemp(f"sctp-{build}") for build in ftphelp.KERNEL_BUILDS}
    sums = {build: _tree(work) for build, work in works.items()}
    with ThreadPoolExecutor(len(works)) as pool:
        done = {build: pool.submit(run_job, JOB, ftphelp.IMPL / build, work, timeout=600,
                                   virtual=True)
                for build, work in works.items()}
        return {build: (works[build], sums[build], done[build].result()) for build in works}


@pytest.fixture(scope="module", params=ftphelp.KERNEL_BUILDS)
def job(request, jobs):
    work, sums, r = jobs[request.param]
    assert r.returncode == 0, f"kernel job failed ({r.returncode}):\n{r.stdout}\n{r.stderr}\n" + \
        ((work / "job.log").read_text() if (work / "job.log").exists() else "")
    return work, sums


def state(work):
    """What the job recorded: exit statuses, the server's descriptors and its end."""
    return json.loads((work / "job.json").read_text())


def events(work, name):
    return [json.loads(line) for line in (work / f"ev-{name}.jsonl").read_text().splitlines()
            if line]


def rc(work, name):
    return state(work)["rc"][name]


def check_run(work, sums, name, folder, nfiles):
    assert rc(work, name) == 0, (work / f"err-{name}.txt").read_text() + \
        state(work)["failures"].get(name, "")
    got = sorted(p.name for p in (work / f"dl-{name}").iterdir())
    want = sorted(k.split("/")[1] for k in sums if k.startswith(folder + "/"))
    assert got == want and len(got) == nfiles
    for n in got:
        assert ftphelp.sha256(work / f"dl-{name}" / n) == sums[f"{folder}/{n}"], n
    ev = events(work, name)
    kinds = [e["event"] for e in ev]
    assert kinds.count("file_done") == nfiles
    assert "nlst_150" in kinds and "last_226" in kinds and ev[-1] == {**ev[-1], "status": "ok"}
    return ev


def opened(pcap, by=CLIENT_IP):
    """(TCP connections, SCTP associations) opened by host `by` (default the
    client): distinct port pairs of its SYNs and INIT chunks."""
    counts = json.loads(pcap.with_suffix(".capture.json").read_text())
    assert counts.get("dropped") == 0 and counts["captured"] > 0, counts
    assert counts["received"] - counts["after_drain"] <= counts["captured"], counts
    r = subprocess.run(["tshark", "-r", str(pcap), "-Y",
                        f"ip.src=={by} && ((tcp.flags.syn==1 && tcp.flags.ack==0)"
                        " || sctp.chunk_type==1)",
                        "-T", "fields", "-e", "tcp.srcport", "-e", "tcp.dstport",
                        "-e", "sctp.srcport", "-e", "sctp.dstport"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    tcp, sctp = set(), set()
    for line in r.stdout.splitlines():
        f = line.split("\t")
        if f[0]:
            tcp.add((f[0], f[1]))
        elif len(f) > 3 and f[2]:
            sctp.add((f[2], f[3]))
    return len(tcp), len(sctp)


def data_streams(pcap):
    """Stream ids of DATA chunks sent by the server."""
    r = subprocess.run(["tshark", "-r", str(pcap), "-Y", f"ip.src=={SERVER_IP} && sctp.data_sid",
                        "-T", "fields", "-e", "sctp.data_sid"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return {int(s, 0) for line in r.stdout.split() for s in line.split(",")}


@pytest.mark.parametrize("variant", VARIANTS)
def test_mget_small_and_big(job, variant):
    work, sums = job
    check_run(work, sums, f"small-{variant}", "small", N_SMALL)
    check_run(work, sums, f"big-{variant}", "big", N_BIG)


@pytest.mark.parametrize("variant", VARIANTS)
def test_connections_in_pcap(job, variant):
    work, _ = job
    for name, nfiles in ((f"small-{variant}", N_SMALL), (f"big-{variant}", N_BIG)):
        tcp, sctp = opened(work / f"{name}.pcap")
        per_transfer = nfiles + 2          # control + NLST + one per file
        expected = {"tcp": (per_transfer, 0), "sctp-naive": (0, per_transfer),
                    "sctp-ms": (0, 1), "sctp-ms-cp": (0, 1), "tcp-pipelined": (2, 0),
                    "xftp": (1, 0)}[variant]
        assert (tcp, sctp) == expected, name
        # in MODE E the server opens the data connections, N for the listing and each file
        by_server = XFTP_CONNECTIONS * (nfiles + 1) if variant == "xftp" else 0
        assert opened(work / f"{name}.pcap", by=SERVER_IP) == (by_server, 0), name


@pytest.mark.parametrize("variant", ["sctp-ms", "sctp-ms-cp"])
def test_multistream_uses_two_streams(job, variant):
    work, _ = job
    assert data_streams(work / f"big-{variant}.pcap") == {0, 1}
    assert data_streams(work / "small-sctp-naive.pcap") == {0}


def test_pipelining_sends_sizes_before_replies(job):
    work, _ = job
    for variant in ("sctp-ms-cp", "tcp-pipelined"):
        ev = events(work, f"small-{variant}")
        sizes = [e for e in ev if e["event"] == "command" and e["cmd"] == "SIZE"]
        first_retr = next(i for i, e in enumerate(ev)
                          if e["event"] == "command" and e["cmd"] == "RETR")
        assert len(sizes) == N_SMALL
        assert all(ev.index(s) < first_retr for s in sizes)   # all SIZEs before any RETR
    seq = events(work, "small-sctp-ms")
    cmds = [e["cmd"] for e in seq if e["event"] == "command" and e["cmd"] in ("SIZE", "RETR")]
    assert cmds == ["SIZE", "RETR"] * N_SMALL              # strictly one file at a time


@pytest.mark.parametrize("variant", VARIANTS)
def test_under_10_percent_loss(job, variant):
    work, sums = job
    check_run(work, sums, f"loss-{variant}", "loss", N_LOSS + 1)
    tcp, sctp = opened(work / f"loss-{variant}.pcap")
    one_data = {"sctp-ms": 1, "sctp-ms-cp": 1, "tcp-pipelined": 2, "xftp": 1}
    assert (tcp + sctp) == one_data.get(variant, N_LOSS + 3)


def test_xftp_under_loss_small_and_big(job):
    """The acceptance sets (100 x 10 kB, 3 x 1 MB) at 10% loss: byte-exact, with N
    connections per transfer opened by the server."""
    work, sums = job
    for name, folder, nfiles in (("loss-small-xftp", "small", N_SMALL),
                                 ("loss-big-xftp", "big", N_BIG)):
        ev = check_run(work, sums, name, folder, nfiles)
        assert opened(work / f"{name}.pcap") == (1, 0), name
        assert opened(work / f"{name}.pcap", by=SERVER_IP) == \
            (XFTP_CONNECTIONS * (nfiles + 1), 0), name
        conns = [e["connections"] for e in ev if e["event"] == "data_connections"]
        assert conns == [XFTP_CONNECTIONS] * (nfiles + 1), name


def test_tcp_pipelined_under_loss_small_and_big(job):
    """The acceptance sets (100 x 10 kB, 3 x 1 MB) at 10% loss, still over one data
    connection each."""
    work, sums = job
    check_run(work, sums, "loss-small-tcp-pipelined", "small", N_SMALL)
    check_run(work, sums, "loss-big-tcp-pipelined", "big", N_BIG)
    for name in ("loss-small-tcp-pipelined", "loss-big-tcp-pipelined"):
        assert opened(work / f"{name}.pcap") == (2, 0), name


def test_tcp_pipelined_opens_one_data_connection(job):
    """Two SYNs from the client per tcp-pipelined session (control + the one data
    connection, after a single PASV); tcp opens a data connection per file and listing."""
    work, _ = job
    for name, nfiles in (("small", N_SMALL), ("big", N_BIG)):
        assert opened(work / f"{name}-tcp-pipelined.pcap") == (2, 0)
        assert opened(work / f"{name}-tcp.pcap") == (nfiles + 2, 0)
        cmds = [e["cmd"] for e in events(work, f"{name}-tcp-pipelined")
                if e["event"] == "command"]
        assert cmds.count("PASV") + cmds.count("EPSV") == 1 and "MODE" in cmds


def test_mode_b_is_refused_over_sctp(job):
    work, _ = job
    assert rc(work, "mode-b-sctp") == 0, (work / "err-mode-b-sctp.txt").read_text()
    replies = json.loads((work / "mode-b-sctp.json").read_text())["replies"]
    assert replies == [["", 220], ["USER anonymous", 331], ["PASS probe@", 230],
                       ["TYPE I", 200], ["MODE B", 504], ["OPTS MSTREAM ON", 200],
                       ["MODE B", 504], ["MODE E", 504], ["MODE S", 200], ["QUIT", 221]]
    assert "REFUSED MODE B: sctp control connection" in (work / "ftpd.log").read_text()


@pytest.mark.parametrize("variant", ["sctp-naive", "sctp-ms"])
def test_association_aborted_mid_file(job, variant):
    work, _ = job
    err = (work / f"err-abort-{variant}.txt").read_text()
    assert rc(work, f"abort-{variant}") == 1
    # naive: the data association is aborted and 426 follows on the control
    # association; multistream: the one association is aborted.
    reasons = {"sctp-naive": ("426 Failure writing", "data connection lost"),
               "sctp-ms": ("control connection lost",)}[variant]
    assert len(err.strip().splitlines()) == 1 and any(x in err for x in reasons), err
    assert not (work / f"dl-abort-{variant}" / "huge.bin").exists()
    r = subprocess.run(["tshark", "-r", str(work / f"abort-{variant}.pcap"), "-Y",
                        f"sctp.chunk_type==6 && ip.src=={SERVER_IP}", "-T", "fields",
                        "-e", "frame.number"],
                       capture_output=True, text=True, timeout=60)
    assert r.stdout.split(), "no ABORT chunk from the server in the pcap"
    assert rc(work, f"kill-{variant}") == -signal.SIGKILL


def test_server_survives_and_keeps_no_fds(job):
    work, sums = job
    check_run(work, sums, "after-sctp-ms-cp", "big", N_BIG)
    check_run(work, sums, "after-sctp-naive", "big", N_BIG)
    job = state(work)
    assert job["ftpd_alive"] is True
    assert job["ftpd_fds_before"] == job["ftpd_fds_after"]
    log = (work / "ftpd.log").read_text()
    assert "ABORT association after failed transfer" in log
    assert "bytes: No data available" in log      # the file shrank under the server
    assert "FAIL RETR abort/huge.bin" in log
    err = (work / "ftpd.out").read_text()      # its stdout and stderr
    assert "AddressSanitizer" not in err and "runtime error" not in err, err


def test_active_mode_over_sctp(job):
    work, sums = job
    check_run(work, sums, "active-sctp-naive", "big", N_BIG)
    cmds = [e["cmd"] for e in events(work, "active-sctp-naive") if e["event"] == "command"]
    assert "PORT" in cmds and "PASV" not in cmds
    # the client opens the control association; the server every data one
    assert opened(work / "active-sctp-naive.pcap") == (0, 1)
    assert opened(work / "active-sctp-naive.pcap", by=SERVER_IP) == (0, N_BIG + 1)


@pytest.mark.parametrize("variant", ["sctp-ms", "sctp-naive"])
def test_upload_and_empty_listing(job, variant):
    work, _ = job
    short = variant.split("-")[1]
    assert rc(work, f"put-{variant}") == 0, (work / f"err-put-{variant}.txt").read_text()
    assert ftphelp.sha256(work / "root" / f"upload-{short}.bin") == \
        ftphelp.sha256(work / f"upload-{short}.bin")
    ev = events(work, f"put-{variant}")
    listing = [e for e in ev if e["event"] == "listing"]
    assert listing and listing[0]["bytes"] == 0 and listing[0]["entries"] == []
    if variant == "sctp-ms":
        cmds = [e["cmd"] for e in ev if e["event"] == "command"]
        assert cmds[cmds.index("ALLO") + 1] == "STOR"
        assert opened(work / f"put-{variant}.pcap") == (0, 1)


@pytest.mark.parametrize("variant", VARIANTS)
def test_mget_skips_a_directory(job, variant):
    """NLST names the directory d; its 550 (to SIZE in the multistream variants, to RETR in
    the others) is a `skipped` event, the other files arrive, and the exit status is 3."""
    work, sums = job
    name = f"skip-{variant}"
    assert rc(work, name) == 3, (work / f"err-{name}.txt").read_text()
    got = sorted(p.name for p in (work / f"dl-{name}").iterdir())
    assert got == ["a.dat", "z.dat"]
    for n in got:
        assert ftphelp.sha256(work / f"dl-{name}" / n) == sums[f"mixed/{n}"], n
    ev = events(work, name)
    assert [e["file"] for e in ev if e["event"] == "skipped"] == ["mixed/d"]
    assert ev[-1]["event"] == "session_end" and ev[-1]["status"] == "partial"
