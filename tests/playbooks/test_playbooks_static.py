"""The deployment playbooks without nodes: every playbook parses against both inventories,
ansible-lint passes, the controller's steps (tc file, source and data set archives, the
emulated inventory) agree with the code the emulated testbed runs, and the nodes' steps are the
harness's run procedure (experiments/procedure.py), whose command line works on a host that
has nothing of the testbed but that one file."""
from __future__ import annotations

import base64
import io
import json
import os
import re
import shutil
import socket
import subprocess
import tarfile
from pathlib import Path

import pytest
import yaml

from experiments import procedure
from experiments.deploy import controller
from experiments.workloads import dataset
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
    assert {"ftp-impl/ftpc/ftpc.c", "ftp-impl/common/str.c", "ftp-impl/Makefile"} <= sources
    assert not any(name.startswith("ftp-impl/fuzz/") for name in sources)
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


def tasks(path: Path) -> list[dict]:
    """Every task of a task file, those inside blocks included."""
    found = []
    for task in yaml.safe_load(path.read_text()) or []:
        found.append(task)
        for part in ("block", "rescue", "always"):
            found += task.get(part, [])
    return found


def test_node_steps_are_the_run_procedure():
    """The point role starts, waits for, runs and stops the programs only through
    experiments/procedure.py (Ansible's script module copies it to the node): no shell of its
    own, no program started any other way."""
    role = PLAYBOOKS / "roles" / "point" / "tasks"
    steps = {}
    for name in ("server_start.yml", "client_run.yml", "server_stop.yml"):
        for task in tasks(role / name):
            assert "ansible.builtin.shell" not in task, (name, task["name"])
            if "ansible.builtin.script" in task:
                script = task["ansible.builtin.script"]
                command = script["cmd"].split()
                assert command[0] == "{{" and command[1] == "testbed_procedure", task["name"]
                assert script["executable"] == "{{ testbed_node_python }}"
                steps[task["name"]] = command[5]     # after `{{ testbed_procedure | quote }}`
    assert steps == {"Start the FTP server": "ftp-server", "Start the capture": "capture",
                     "Download the data set": "ftp-client", "Stop the capture": "stop",
                     "Stop the FTP server": "stop"}
    defaults = yaml.safe_load((PLAYBOOKS / "roles/testbed_common/defaults/main.yml").read_text())
    assert defaults["testbed_procedure"] == "{{ testbed_repo }}/experiments/procedure.py"


def test_controller_steps_run_the_testbed_command_from_the_checkout():
    """`python3 -m testbed ...` from the checkout's root: no PYTHONPATH anywhere, and no
    entry point that is gone."""
    steps = []
    for path in sorted(PLAYBOOKS.rglob("*.yml")):
        text = path.read_text()
        assert "PYTHONPATH" not in text, path
        assert not re.search(r"experiments\.harness|topology\.deploy|-m, topology", text), path
        for task in tasks(path) if path.parent.name == "tasks" else []:
            command = task.get("ansible.builtin.command", {})
            argv = command.get("argv", [])
            if "testbed" in (argv if isinstance(argv, list) else [argv]) or \
                    "'testbed'" in str(argv):
                assert command.get("chdir") in ("{{ testbed_repo }}", "{{ fanout_repo }}"), \
                    (path, task["name"])
                steps.append(task["name"])
    assert len(steps) == 11, steps   # controller: tc, source, dataset, analyse; fan-out: 7


@pytest.fixture
def lone_procedure(tmp_path) -> Path:
    """procedure.py alone in a folder, as the script module leaves it on a node."""
    copy = tmp_path / "node" / "procedure.py"
    copy.parent.mkdir()
    shutil.copy(procedure.__file__, copy)
    return copy


def node_step(script: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["/usr/bin/python3", "-I", str(script), *args], cwd=script.parent,
                          capture_output=True, text=True, timeout=120)


def test_run_procedure_command_line_on_a_bare_host(lone_procedure, tmp_path):
    """The steps the point role runs, on this host over TCP (no SCTP here): a server started
    and waited for, a capture, the client's session, the stops; only the standard library
    (python3 -I: no project on the path)."""
    build = REPO / "ftp-impl" / "build"
    if not (build / "ftpd").exists():
        pytest.skip("the FTP programs are not built (make build)")
    for tool in ("tcpdump", "tshark"):
        assert shutil.which(tool), f"{tool} is required"
    root = tmp_path / "data"
    sums = dataset.ensure(root, 3000, 3, 1)
    run, port = tmp_path / "run", free_port()
    # ftp-server would also listen on SCTP, which this kernel may lack: `start` with its
    # command line minus SCTP, as the role's `ftp-server` starts it
    argv = procedure.ftp_server_argv(str(build / "ftpd"), str(sums.root), "127.0.0.1",
                                     str(run / "ftpd.log"), 60, port)
    cut = argv.index("--sctp")
    (run / "downloads").mkdir(parents=True)
    (run / "downloads" / "stale.dat").write_text("an earlier attempt's")
    server = node_step(lone_procedure, "start", "ftpd", "--dir", str(run), "--fresh", "--",
                       *argv[:cut], *argv[cut + 2:])
    assert server.returncode == 0, server.stderr
    try:
        capture = node_step(lone_procedure, "capture", "capture", "--dir", str(run), "--iface",
                            "lo", "--pcap", str(run / "client.pcap"))
        assert capture.returncode == 0, capture.stderr
        assert not (run / "downloads").exists()       # --fresh emptied the run's folder
        client = node_step(lone_procedure, "ftp-client", "client", "--dir", str(run), "--ftpc",
                           str(build / "ftpc"), "--variant", "tcp", "--bind", "127.0.0.1",
                           "--server", "127.0.0.1", "--port", str(port), "--out",
                           str(run / "downloads"), "--timeout", "30", "--", "mget", "*")
        assert client.returncode == 0, client.stderr + (run / "client.err").read_text()
        # a loaded machine can leave packets in the kernel buffer that SIGINT would drop
        stopped = node_step(lone_procedure, "stop", "capture", "--dir", str(run), "--signal",
                            "INT", "--settle", "1.0")
        assert stopped.returncode == 0, stopped.stderr
    finally:
        assert node_step(lone_procedure, "stop", "ftpd", "--dir", str(run)).returncode == 0
    assert dataset.verify_download(run / "downloads", sums.digests) == []
    events = [json.loads(line) for line in (run / "client.jsonl").read_text().splitlines()]
    assert events[-1]["status"] == "ok"
    assert "ready" in (run / "ftpd.out").read_text().splitlines()
    assert "listening on lo" in (run / "capture.tcpdump").read_text()
    assert not (run / "ftpd.pid").exists() and not (run / "capture.pid").exists()
    # the session is in the capture: its control connection's 226 replies, one per file and
    # the listing's
    replies = subprocess.run(["tshark", "-r", str(run / "client.pcap"), "-n", "-Y",
                              f"tcp.srcport == {port} && ftp.response.code == 226",
                              "-d", f"tcp.port=={port},ftp", "-T", "fields",
                              "-e", "frame.number"], capture_output=True, text=True, timeout=60)
    assert len(replies.stdout.split()) == 4, replies.stderr


def test_run_procedure_refuses_what_it_cannot_do(lone_procedure, tmp_path):
    """A program that never says ready and one that outlives its limit are stopped and fail
    the step; stopping what was never started fails too."""
    run = tmp_path / "run"
    late = node_step(lone_procedure, "start", "late", "--dir", str(run), "--timeout", "1",
                     "--", "sleep", "30")
    assert late.returncode == 1 and "not ready within 1 s" in late.stderr
    slow = node_step(lone_procedure, "run", "slow", "--dir", str(run), "--timeout", "1", "--",
                     "sleep", "30")
    assert slow.returncode == 1 and "ran past 1 s" in slow.stderr
    never = node_step(lone_procedure, "stop", "never", "--dir", str(run))
    assert never.returncode == 1 and "nothing started as never" in never.stderr


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
