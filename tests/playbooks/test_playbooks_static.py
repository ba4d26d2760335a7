"""The deployment playbooks without nodes: every playbook parses against both inventories,
ansible-lint passes, and the controller's steps (tc file, source and data set archives, the
emulated inventory) agree with the code the emulated testbed runs."""
from __future__ import annotations

import base64
import io
import json
import os
import subprocess
import tarfile
from pathlib import Path

import pytest
import yaml

from experiments.harness import dataset
from topology.deploy import controller
from topology.net import shaping
from topology.net.base import OFFLOADS_OFF
from topology.net.management import read_plan, sshd_config
from topology.net.path import CLIENT_IP, SERVER_IP
from topology.params import LinkShape

REPO = Path(__file__).resolve().parents[2]
PLAYBOOKS = REPO / "playbooks"
OURS = ("deploy.yml", "shape.yml", "run_point.yml", "site.yml")
INVENTORIES = ("emulated.yml", "lab.example.yml")


@pytest.fixture
def ansible_env(tmp_path) -> dict[str, str]:
    """Ansible's and ansible-lint's scratch files in a temporary directory, never in the
    repository or the user's home."""
    return {**os.environ, "HOME": str(tmp_path), "ANSIBLE_HOME": str(tmp_path / "ansible"),
            "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp"),
            "ANSIBLE_CONFIG": str(PLAYBOOKS / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
            "XDG_CACHE_HOME": str(tmp_path / "cache")}


@pytest.mark.parametrize("inventory", INVENTORIES)
@pytest.mark.parametrize("playbook", OURS)
def test_syntax(ansible_env, playbook, inventory):
    r = subprocess.run(["ansible-playbook", "--syntax-check", "-i",
                        str(PLAYBOOKS / "inventories" / inventory), playbook],
                       cwd=PLAYBOOKS, env=ansible_env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "WARNING" not in r.stderr, r.stderr


def test_ansible_lint(ansible_env):
    files = [*OURS, *(f"inventories/{i}" for i in INVENTORIES)]
    r = subprocess.run(["ansible-lint", "--offline", "-p", *files], cwd=PLAYBOOKS,
                       env=ansible_env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Passed" in r.stdout + r.stderr


def test_emulated_inventory_matches_the_path():
    inventory = yaml.safe_load((PLAYBOOKS / "inventories" / "emulated.yml").read_text())
    groups = inventory["all"]["children"]
    hosts = {g: next(iter(groups[g]["hosts"].values())) for g in ("client", "router", "server")}
    # addresses and interfaces of topology/net/path.py, where the emulated nodes come from
    assert hosts["client"]["testbed_exp_addr"] == CLIENT_IP
    assert hosts["server"]["testbed_exp_addr"] == SERVER_IP
    assert hosts["client"]["testbed_exp_ifs"] == ["client-eth0"]
    assert hosts["server"]["testbed_exp_ifs"] == ["server-eth0"]
    assert (hosts["router"]["testbed_up_if"], hosts["router"]["testbed_down_if"]) == \
        ("router-eth1", "router-eth0")
    plan = read_plan()
    assert [m.name for m in plan.members] == ["client", "router", "server"]
    assert len({m.address for m in plan.members} | {plan.controller}) == 4


def test_lab_inventory_has_what_the_roles_use():
    inventory = yaml.safe_load((PLAYBOOKS / "inventories" / "lab.example.yml").read_text())
    groups = inventory["all"]["children"]
    assert set(groups) == {"client", "router", "server"}
    needs = {"client": {"ansible_host", "testbed_exp_addr", "testbed_exp_ifs"},
             "server": {"ansible_host", "testbed_exp_addr", "testbed_exp_ifs"},
             "router": {"ansible_host", "testbed_exp_ifs", "testbed_up_if", "testbed_down_if"}}
    for group, keys in needs.items():
        for host, hostvars in groups[group]["hosts"].items():
            assert keys <= set(hostvars), (group, host)
    assert inventory["all"]["vars"]["testbed_prefix"] == "/opt/testbed"


def test_sshd_listens_on_the_management_address_only():
    member = read_plan().members[0]
    config = sshd_config(member, Path("/run/x/authorized_keys"))
    listens = [line for line in config.splitlines() if line.startswith("ListenAddress")]
    assert listens == [f"ListenAddress {member.address}:22"]
    assert "UsePAM no" in config and "PasswordAuthentication no" in config


def test_offloads_are_the_emulated_paths():
    defaults = yaml.safe_load((PLAYBOOKS / "roles/links/defaults/main.yml").read_text())
    assert defaults["links_offloads_off"] == OFFLOADS_OFF


def test_tc_file_is_the_shaping_code(tmp_path):
    out = tmp_path / "router.tc"
    assert controller.main(["tc", "--up-dev", "eth1", "--down-dev", "eth0", "--rate", "256kbit",
                            "--delay", "125ms", "--loss", "1%", "--queue", "50p",
                            "--out", str(out)]) == 0
    shape = LinkShape.parse("256kbit", "125ms", "1%", "50p")
    assert out.read_text().splitlines() == shaping.build("eth1", shape) + \
        shaping.build("eth0", shape)


def test_source_archive(tmp_path, capsys):
    assert controller.main(["source", "--out", str(tmp_path)]) == 0
    printed = json.loads(capsys.readouterr().out)
    with tarfile.open(tmp_path / controller.SOURCE_ARCHIVE) as tar:
        names = set(tar.getnames())
        version = tar.extractfile("ftp-impl/VERSION").read().decode()
    sources = {f"ftp-impl/{p.relative_to(REPO / 'ftp-impl').as_posix()}"
               for p in controller.source_files()}
    assert "ftp-impl/src/ftpc.c" in sources and "ftp-impl/Makefile" in sources
    assert names == sources | {"ftp-impl/VERSION"}
    assert f"sources_sha256={printed['sources_sha256']}\n" in version
    # the text form the build task sends is the same archive
    text = (tmp_path / controller.SOURCE_ARCHIVE_B64).read_bytes()
    assert base64.decodebytes(text) == (tmp_path / controller.SOURCE_ARCHIVE).read_bytes()


def test_dataset_archive_is_the_harness_data_set(tmp_path, capsys):
    assert controller.main(["dataset", "--size", "1000", "--count", "3", "--seed", "7",
                            "--out", str(tmp_path)]) == 0
    printed = json.loads(capsys.readouterr().out)
    made = dataset.ensure(tmp_path / "reference", 1000, 3, 7)
    assert printed["name"] == made.root.name == "1000B-x3-seed7"
    with tarfile.open(tmp_path / controller.DATA_ARCHIVE) as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    sums = files.pop(f"{made.root.name}.sha256").decode().splitlines()
    assert {n.split("/")[1] for n in files} == set(made.digests)
    assert sorted(sums) == sorted(f"{d}  {made.root.name}/{n}" for n, d in made.digests.items())
    # made again, the archive is the same bytes: a node that has it sees no change
    first = (tmp_path / controller.DATA_ARCHIVE).read_bytes()
    assert controller.main(["dataset", "--size", "1000", "--count", "3", "--seed", "7",
                            "--out", str(tmp_path)]) == 0
    assert (tmp_path / controller.DATA_ARCHIVE).read_bytes() == first


def test_unpack_refuses_paths_outside(tmp_path):
    bundle = tmp_path / "evil.tar"
    with tarfile.open(bundle, "w") as tar:
        info = tarfile.TarInfo("../outside.txt")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"hi"))
    with pytest.raises(ValueError, match="refusing"):
        controller.unpack(bundle, tmp_path / "run")
    assert not (tmp_path / "outside.txt").exists()
