"""ftpc --bind ADDR: the control connection and every data connection (passive connects,
active listeners) use ADDR as their local address. On the host over TCP with the plain and
the ASan build (127.0.0.2 is local there); over SCTP inside the pinned kernel, on the path
topology with the emulated nodes' management network beside it, where an unbound client
announces every local address in its INIT (the management address included) and a bound one
announces ADDR only and sends nothing over the other network."""
import json
import subprocess
from pathlib import Path

import pytest

from tests.ftp import ftphelp
from tests.ftp.kernel import run_job
from topology.net.path import CLIENT_IP, SERVER_IP

JOB = Path(__file__).with_name("bind_job.py")
BOUND = "10.0.1.11"          # the client's second experiment address (bind_job.BOUND)
N_FILES = 3


# -- on the host, TCP ------------------------------------------------------------------------

def _mget(bindir, port, out, *options):
    return ftphelp.run_ftpc(bindir, "--variant", "tcp", *options, "--out", out,
                            f"127.0.0.1:{port}", "mget", "*.dat")


@pytest.mark.parametrize("mode", [[], ["--active"]], ids=["passive", "active"])
def test_bind_tcp_on_host(bindir, ftpd, tree, tmp_path, mode):
    root, sums = tree
    server = ftpd()
    out = tmp_path / "dl"
    out.mkdir()
    r = _mget(bindir, server.port, out, *mode, "--bind", "127.0.0.2")
    assert r.returncode == 0, r.stderr
    got = {p.name: ftphelp.sha256(p) for p in out.iterdir()}
    assert got == {k: v for k, v in sums.items() if k.endswith(".dat")}
    log = server.logtext()
    peers = {line.split("[")[2].split("]")[0] for line in log.splitlines() if "CONNECT" in line}
    assert peers and all(p.startswith("127.0.0.2:") for p in peers), log
    commands = [json.loads(line) for line in r.stdout.splitlines()]
    ports = [e["arg"] for e in commands if e["event"] == "command" and e["cmd"] == "PORT"]
    if mode:
        # the active listener is on the bound address: the server connects back to it
        assert ports and all(a.startswith("127,0,0,2,") for a in ports), ports
    else:
        # a passive data connection from another address than the control's is refused
        # by ftpd, so the transfers prove the data connections were bound too
        assert not ports


def test_bind_refuses_bad_addresses(bindir, ftpd, tree, tmp_path):
    server = ftpd()
    for bad in ("not-an-address.invalid", "127.0.0.2:2121"):
        r = _mget(bindir, server.port, tmp_path, "--bind", bad)
        assert r.returncode == 2 and "--bind" in r.stderr, (bad, r.stderr)
    r = _mget(bindir, server.port, tmp_path, "--bind", "192.0.2.1")  # not this host's
    assert r.returncode == 1, r.stderr
    assert "cannot connect" in r.stderr and "assign requested address" in r.stderr


# -- in the pinned kernel, SCTP and TCP next to a management network ------------------------

@pytest.fixture(scope="module")
def job(built, tmp_path_factory):
    work = tmp_path_factory.mktemp("bind")
    (work / "root").mkdir()
    sums = ftphelp.make_tree(work / "root", nsmall=N_FILES, big=())
    r = run_job(JOB, work, *(ftphelp.IMPL / b for b in ftphelp.KERNEL_BUILDS), timeout=600)
    joblog = (work / "job.log").read_text() if (work / "job.log").exists() else ""
    assert r.returncode == 0, f"kernel job failed ({r.returncode}):\n{r.stderr}\n{joblog}"
    return work, sums


def state(work):
    return json.loads((work / "job.json").read_text())


def mgmt_address(work):
    """The client's management address (the emulated inventory's, as the job set it up)."""
    return state(work)["management"]["nodes"]["client"]


def packets(pcap, display_filter, *fields):
    fields = fields or ("frame.number",)
    r = subprocess.run(["tshark", "-r", str(pcap), "-n", "-Y", display_filter, "-T", "fields",
                        "-E", "occurrence=a", "-E", "aggregator=,",
                        *[a for f in fields for a in ("-e", f)]],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return [line.split("\t") for line in r.stdout.splitlines() if line]


def init_addresses(pcap, sender, chunk):
    """(source address, addresses listed) of every INIT (1) or INIT ACK (2) from sender."""
    rows = packets(pcap, f"sctp.chunk_type == {chunk} && ip.src == {sender}", "ip.src",
                   "sctp.parameter_ipv4_address")
    return [(src, set(filter(None, listed.split(",")))) for src, listed in rows]


def check_download(work, sums, name):
    assert state(work)["rc"][name] == 0, (work / f"err-{name}.txt").read_text()
    got = {p.name: ftphelp.sha256(p) for p in (work / f"dl-{name}").iterdir()}
    assert got == sums


def no_traffic(pcap):
    """Nothing but ARP on the management link during the run."""
    assert packets(pcap, "ip") == []


@pytest.mark.kernel
@pytest.mark.parametrize("build", ftphelp.KERNEL_BUILDS)
def test_unbound_sctp_announces_the_management_address(job, build):
    work, sums = job
    name = f"{build}-unbound-sctp-naive"
    check_download(work, sums, name)
    inits = init_addresses(work / f"{name}.exp.pcap", CLIENT_IP, 1)
    assert len(inits) == N_FILES + 2                 # control, NLST, one per file
    # this is what --bind is for: the association would also run over the other network
    assert all(mgmt_address(work) in listed for _, listed in inits), inits


@pytest.mark.kernel
@pytest.mark.parametrize("build", ftphelp.KERNEL_BUILDS)
@pytest.mark.parametrize("variant,associations", [("sctp-naive", N_FILES + 2), ("sctp-ms", 1)])
def test_bound_sctp_announces_only_the_bound_address(job, build, variant, associations):
    work, sums = job
    name = f"{build}-bound-{variant}"
    check_download(work, sums, name)
    pcap = work / f"{name}.exp.pcap"
    inits = init_addresses(pcap, BOUND, 1)
    assert len(inits) == associations
    assert all(listed <= {BOUND} for _, listed in inits), inits
    assert packets(pcap, f"sctp && ip.src == {CLIENT_IP}") == []   # the unbound address is unused
    no_traffic(work / f"{name}.mgmt.pcap")


@pytest.mark.kernel
@pytest.mark.parametrize("build", ftphelp.KERNEL_BUILDS)
def test_bound_tcp_connections(job, build):
    work, sums = job
    name = f"{build}-bound-tcp"
    check_download(work, sums, name)
    syns = packets(work / f"{name}.exp.pcap", "tcp.flags.syn == 1 && tcp.flags.ack == 0",
                   "ip.src")
    assert len(syns) == N_FILES + 2 and {s for (s,) in syns} == {BOUND}, syns
    no_traffic(work / f"{name}.mgmt.pcap")


@pytest.mark.kernel
@pytest.mark.parametrize("build", ftphelp.KERNEL_BUILDS)
@pytest.mark.parametrize("variant", ["tcp", "sctp-naive"])
def test_bound_active_listener(job, build, variant):
    work, sums = job
    name = f"{build}-bound-active-{variant}"
    check_download(work, sums, name)
    pcap = work / f"{name}.exp.pcap"
    if variant == "tcp":
        to_client = packets(pcap, "tcp.flags.syn == 1 && tcp.flags.ack == 0 && "
                                  f"ip.src == {SERVER_IP}", "ip.dst")
        assert len(to_client) == N_FILES + 1 and {d for (d,) in to_client} == {BOUND}
    else:
        # the server opens each data association to the bound address, and the client's
        # answer lists no other
        assert len(init_addresses(pcap, SERVER_IP, 1)) == N_FILES + 1
        acks = init_addresses(pcap, BOUND, 2)
        assert len(acks) == N_FILES + 1 and all(listed <= {BOUND} for _, listed in acks), acks
    no_traffic(work / f"{name}.mgmt.pcap")
