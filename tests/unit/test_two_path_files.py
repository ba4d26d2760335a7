"""ftp-mget on dualpath in experiment files: path 2's own shape ([network.path2]), the SCTP
settings axis ([[matrix.sctp_settings]]) and what each point's runs are given: the
multihoming options of the programs, and sysctls in which a point's own failover knobs never
carry over to the next point."""
from __future__ import annotations

from pathlib import Path

import pytest

from experiments import spec
from experiments.stacks import SCTP_PATH_DEFAULTS, sysctls_for
from experiments.workloads.ftp_mget.workload import multihoming

REPO = Path(__file__).resolve().parents[2]

GOOD = """
name = "trial"
metric = "first-packet-to-last226"
workload = "ftp-mget"
topology = "dualpath"
[network]
queue = "50p"
[network.path2]
rate = "100Mbit"
delay = "0ms"
[[network.paths]]
name = "uav"
rate = "3Mbit"
delay = "1ms"
[matrix]
loss = [0.0, 0.03]
file_sizes = ["200K"]
files = 2
variants = ["tcp", "sctp-naive"]
[[matrix.sctp_settings]]
name = "rfc4960"
pf_enable = 0
path_max_retrans = 5
[[matrix.sctp_settings]]
name = "linux"
[repetitions]
min = 2
max = 3
"""


def load(tmp_path: Path, text: str) -> spec.Experiment:
    path = tmp_path / "trial.toml"
    path.write_text(text)
    return spec.load(str(path))


def test_path_two_keeps_its_own_shape_and_the_loss_stays_on_path_one(tmp_path):
    experiment = load(tmp_path, GOOD)
    network = experiment.network
    links = network.links(network.entry("uav"), 0.03)
    assert links["path1-up"].loss == links["path1-down"].loss == 0.03
    assert links["path1-up"].rate_bps == 3e6
    assert links["path2-up"].loss == links["path2-down"].loss == 0.0
    assert links["path2-down"].rate_bps == 100e6 and links["path2-down"].delay_s == 0.0
    assert links["path2-down"].queue == links["path1-down"].queue   # [network]'s
    assert network.lossy_links(network.entry("uav")) == ["path1-up", "path1-down"]
    assert network.record()["path2"]["rate_bps"] == 100e6


def test_the_sctp_settings_multiply_the_sctp_points_only(tmp_path):
    points = load(tmp_path, GOOD).points()
    tcp = [p for p in points if p.get("variant") == "tcp"]
    sctp = [p for p in points if p.get("variant") == "sctp-naive"]
    assert len(tcp) == 2 and len(sctp) == 4
    assert {p.get("sctp_settings") for p in tcp} == {""}
    assert all(p.sctp_knobs == () for p in tcp)
    assert {p.get("sctp_settings") for p in sctp} == {"rfc4960", "linux"}
    rfc = next(p for p in sctp if p.get("sctp_settings") == "rfc4960")
    assert dict(rfc.sctp_knobs) == {"pf_enable": 0, "path_max_retrans": 5}
    assert rfc.key.endswith("_rfc4960")


def test_a_points_knobs_are_set_and_every_other_run_gets_linuxs_defaults_back():
    own = sysctls_for("sctp", {"pf_enable": 0, "path_max_retrans": 2}, "linux")
    assert own["net.sctp.pf_enable"] == "0" and own["net.sctp.path_max_retrans"] == "2"
    plain = sysctls_for("tcp-newreno", {}, "linux")
    for key, value in SCTP_PATH_DEFAULTS.items():
        assert plain[key] == value


def test_only_sctp_on_dualpath_is_multihomed():
    sctp = multihoming("dualpath", "sctp")
    assert sctp == {"server": ["--sctp-also-bind", "10.2.2.1"],
                    "client": ["--sctp-also-bind", "10.2.1.1", "--sctp-also-peer", "10.2.2.1"],
                    "bind": "10.1.1.1"}
    assert multihoming("dualpath", "tcp") is None
    assert multihoming("path", "sctp") is None


@pytest.mark.parametrize("change, key, reason", [
    (('name = "linux"\n', 'name = "linux"\npath_max_retrans = 0\n'),
     "matrix.sctp_settings[1].path_max_retrans", "out of range (1 to 100)"),
    (('name = "linux"\n', 'name = "linux"\nmax_retrans = 3\n'),
     "matrix.sctp_settings[1].max_retrans", "unknown key"),
    (('name = "linux"\n', 'name = "rfc4960"\n'), "matrix.sctp_settings", "unique"),
    (('name = "linux"\n', 'name = "Linux PF"\n'), "matrix.sctp_settings[1].name",
     "lower-case"),
    (('variants = ["tcp", "sctp-naive"]', 'variants = ["tcp"]'), "matrix.sctp_settings",
     "SCTP variants"),
    (('rate = "100Mbit"', 'rate = "fast"'), "network.path2.rate", ""),
    (('delay = "0ms"\n[[', 'delay = "0ms"\nloss = 2.0\n[['), "network.path2.loss", ""),
    (('[network.path2]', '[network.path2]\nname = "ctl"'), "network.path2.name",
     "unknown key"),
    (('topology = "dualpath"', 'topology = "path"'), "network.path2", "unknown key"),
])
def test_bad_two_path_values_are_refused_with_file_key_and_reason(tmp_path, change, key,
                                                                  reason):
    assert change[0] in GOOD
    with pytest.raises(spec.SpecError) as refused:
        load(tmp_path, GOOD.replace(*change))
    message = str(refused.value)
    assert str(tmp_path / "trial.toml") in message and key in message and reason in message


@pytest.mark.parametrize("name", ["failover", "failover-return", "fcs-control-net"])
def test_the_two_path_experiments_are_valid(name):
    experiment = spec.load(str(REPO / "experiments" / f"{name}.toml"))
    assert experiment.network.kind == "dualpath"
    assert any(p.sctp_knobs for p in experiment.points())
