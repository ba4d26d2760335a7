"""A real deployment over SSH: the pinned kernel boots the emulated nodes with their
management network and sshd, and ansible-playbook (deploy.yml, shape.yml, run_point.yml)
builds and installs the FTP programs, installs the data set, shapes the router and runs one
point, whose pcap and logs come back to the controller. Judged here on the host: the analysis
finds a transfer time in the fetched pcap, the downloads are byte-identical to the data set,
the router was shaped as asked, and only SSH crossed the management network."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from experiments.harness import analyze, dataset, pcap
from topology.deploy import controller, emulated

VARIANT = "sctp-naive"       # control and data associations: every INIT is checked
FILES, FILE_SIZE, SEED = 5, 10000, 1
DELAY_S = 0.035
CLIENT_EXP, SERVER_EXP = "10.0.1.1", "10.0.2.1"
MGMT_NET = "192.168.77."
BUDGET_S = 900               # a wall-time limit for the kernel, well above the ~5 minutes


@pytest.fixture(scope="module")
def deployed(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("deploy") / "emulated"
    started = time.monotonic()
    report = emulated.deploy(out, {"testbed_variant": VARIANT, "testbed_files": FILES,
                                   "testbed_file_size": FILE_SIZE, "testbed_seed": SEED},
                             timeout_s=BUDGET_S, stream=False)
    report["_wall_s"] = time.monotonic() - started
    report["_out"] = out
    print("\n" + emulated.describe(report) + f"\n  whole deployment test     "
          f"{report['_wall_s']:7.1f} s")
    return report


def run_dir(report: dict) -> Path:
    assert "run_dir" in report, f"no analysed run; report: {report}"
    return Path(report["run_dir"])


def test_every_playbook_succeeded(deployed):
    steps = [(p["playbook"], p["returncode"]) for p in deployed.get("playbooks", [])]
    assert steps == [("deploy.yml", 0), ("shape.yml", 0), ("run_point.yml", 0)], \
        deployed.get("stderr_tail")
    assert deployed["returncode"] == 0


def test_the_fetched_pcap_has_a_transfer_time(deployed):
    analysis = deployed["analysis"]
    assert analysis["status"] == "ok" and analysis["transfer_time_s"] > 0, analysis
    # read again here, on the host, with the harness's own code
    capture = run_dir(deployed) / "client.pcap"
    channel = pcap.control_channel(capture, "sctp")
    measured = analyze.pcap_interval(channel, controller.METRIC)
    assert measured == pytest.approx(analysis["transfer_time_s"])
    # a file per round trip at least: the shaped path's delay shows in the time
    assert measured > FILES * 2 * DELAY_S
    counts = pcap.counters(capture, "sctp", CLIENT_EXP, 1.0)
    assert counts.connections == FILES + 2      # control, NLST and one per file (naive)


def test_downloads_are_the_servers_data_set(deployed, tmp_path):
    reference = dataset.ensure(tmp_path, FILE_SIZE, FILES, SEED)
    downloads = run_dir(deployed) / "downloads"
    assert dataset.verify_download(downloads, reference.digests) == []
    assert len(list(downloads.iterdir())) == FILES


def test_the_client_was_bound_to_its_experiment_address(deployed):
    capture = run_dir(deployed) / "client.pcap"
    rows = pcap.tshark(capture, ["ip.src", "sctp.parameter_ipv4_address"],
                       f"sctp.chunk_type == 1 && ip.src == {CLIENT_EXP}")
    assert len(rows) == FILES + 2
    for _, listed in rows:
        assert set(filter(None, listed.split("|"))) <= {CLIENT_EXP}, rows


def test_only_ssh_on_the_management_network(deployed):
    capture = deployed["_out"] / "mgmt.pcap"
    traffic = deployed["mgmt_traffic"]
    assert traffic["not_ssh"] == 0, traffic["examples"]
    assert traffic["ssh"] > 100     # the whole deployment went through it
    assert pcap.tshark(capture, ["frame.number"],
                       "sctp || tcp.port == 21 || ip.addr == 10.0.0.0/8") == []
    endpoints = pcap.tshark(capture, ["ip.src", "ip.dst"], "ip")
    assert all(a.startswith(MGMT_NET) for row in endpoints for a in row)


def test_the_router_was_shaped_as_asked(deployed):
    qdiscs = deployed["router_qdiscs"]
    for dev in ("router-eth0", "router-eth1"):
        assert f"qdisc netem 1: dev {dev} root" in qdiscs and "delay 35ms" in qdiscs
        assert f"qdisc htb 10: dev {dev}" in qdiscs and f"qdisc bfifo 20: dev {dev}" in qdiscs
    rtt = deployed["rtt_after_shaping"]
    assert 2000 * DELAY_S <= rtt["avg_ms"] < 2000 * DELAY_S + 15, rtt


def test_nodes_run_the_controllers_sources(deployed):
    versions = (run_dir(deployed) / "versions.txt").read_text().splitlines()
    digest = controller.source_version()["sources_sha256"]
    assert f"ftp_impl_sources_sha256={digest}" in versions
    assert any(line.startswith("ftpc=") for line in versions)


def test_timings_are_recorded(deployed):
    timings = {p["playbook"]: p["wall_s"] for p in deployed["playbooks"]}
    assert set(timings) == {"deploy.yml", "shape.yml", "run_point.yml"}
    assert deployed["timings_s"]["management_start"] > 0
