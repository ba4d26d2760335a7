"""The management network of the emulated nodes: how a controller reaches them over SSH the
way it reaches real hosts, without touching the experiment's links.

Inside the kernel, a Linux bridge in the root namespace (where the controller runs) has one
veth into each node's namespace; each node runs its own sshd listening on its management
address only. Keys are made per boot: one host key per node (written to a known_hosts file,
so the controller checks every host key and is never asked) and one client key.

Everything lives under STATE (on the kernel's private tmpfs /run): no two kernels share it
and nothing lands in the repository or on the host. The node names and management addresses
come from the emulated inventory, so the playbooks and this module cannot disagree."""
from __future__ import annotations

import ipaddress
import shlex
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from mininet.node import Node

from .node_exec import run_script

STATE = Path("/run/testbed-mgmt")
BRIDGE = "mgmt0"
SSH_PORT = 22
SSHD = "/usr/sbin/sshd"
SFTP_SERVER = "/usr/lib/openssh/sftp-server"
SSHD_START_TIMEOUT_S = 30.0
REPO_ROOT = Path(__file__).resolve().parents[2]
EMULATED_INVENTORY = REPO_ROOT / "playbooks" / "inventories" / "emulated.yml"


class ManagementError(RuntimeError):
    pass


@dataclass(frozen=True)
class Member:
    """One node on the management network."""

    name: str      # Mininet node (the inventory's testbed_node)
    address: str   # management address (the inventory's ansible_host)

    @property
    def node_if(self) -> str:
        return f"{self.name}-mgmt"[:15]

    @property
    def bridge_if(self) -> str:
        return f"mg-{self.name}"[:15]

    @property
    def state(self) -> Path:
        return STATE / self.name


@dataclass(frozen=True)
class Plan:
    """What the inventory says about the management network."""

    members: tuple[Member, ...]
    controller: str   # the controller's address on the bridge
    prefix_len: int


def read_plan(inventory: Path = EMULATED_INVENTORY) -> Plan:
    data = yaml.safe_load(inventory.read_text())
    top = data.get("all", {})
    variables = top.get("vars", {})
    members = []
    for group in top.get("children", {}).values():
        for host, hostvars in (group.get("hosts") or {}).items():
            hostvars = hostvars or {}
            members.append(Member(str(hostvars.get("testbed_node", host)),
                                  str(hostvars["ansible_host"])))
    network = ipaddress.ip_network(str(variables["testbed_mgmt_network"]))
    controller = str(variables["testbed_mgmt_controller"])
    for address in [controller, *(m.address for m in members)]:
        if ipaddress.ip_address(address) not in network:
            raise ManagementError(f"{inventory}: {address} is outside {network}")
    if not members:
        raise ManagementError(f"{inventory}: no hosts")
    return Plan(tuple(members), controller, network.prefixlen)


def _host(argv: list[str]) -> None:
    """A command in the controller's (root) namespace, checked."""
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ManagementError(f"`{shlex.join(argv)}` failed: {proc.stderr.strip()}")


def _keygen(path: Path) -> str:
    _host(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "", "-f", str(path)])
    return path.with_suffix(".pub").read_text().strip()


def sshd_config(member: Member, authorized_keys: Path) -> str:
    # StrictModes off: the host filesystem (hostfs) shows the host's owners and modes, which
    # sshd would judge against this kernel's root. PAM, DNS and lastlog off: nothing here to
    # consult, and each costs time in a kernel where every system call is slow.
    return "\n".join([
        f"ListenAddress {member.address}:{SSH_PORT}",
        f"HostKey {member.state / 'host_key'}",
        f"PidFile {member.state / 'sshd.pid'}",
        f"AuthorizedKeysFile {authorized_keys}",
        "PermitRootLogin prohibit-password",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        "StrictModes no",
        "UseDNS no",
        "PrintMotd no",
        "PrintLastLog no",
        "MaxSessions 64",
        "MaxStartups 64",
        f"Subsystem sftp {SFTP_SERVER}",
        "",
    ])


class ManagementNetwork:
    """The bridge, the veths and one sshd per node; `stop` ends the sshds it started."""

    def __init__(self, nodes: dict[str, Node], plan: Plan | None = None) -> None:
        self.plan = plan or read_plan()
        missing = [m.name for m in self.plan.members if m.name not in nodes]
        if missing:
            raise ManagementError(f"inventory hosts without a node: {', '.join(missing)}")
        self.nodes = nodes
        self.sshd: dict[str, subprocess.Popen[bytes]] = {}
        self.timings_s: dict[str, float] = {}

    @property
    def client_key(self) -> Path:
        return STATE / "id_ed25519"

    @property
    def known_hosts(self) -> Path:
        return STATE / "known_hosts"

    def __enter__(self) -> ManagementNetwork:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        started = time.monotonic()
        try:
            self._links()
            self._keys()
            for member in self.plan.members:
                self._start_sshd(member)
            for member in self.plan.members:
                self._await_sshd(member)
        except BaseException:
            self.stop()
            raise
        self.timings_s["start"] = time.monotonic() - started

    def stop(self) -> None:
        for proc in self.sshd.values():
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        self.sshd.clear()

    def _links(self) -> None:
        plan = self.plan
        _host(["ip", "link", "add", BRIDGE, "type", "bridge"])
        _host(["ip", "addr", "add", f"{plan.controller}/{plan.prefix_len}", "dev", BRIDGE])
        # IPv6 off on the management links: their router solicitations and the like would be
        # the only non-SSH packets there, and the network is checked for carrying SSH only.
        _host(["sysctl", "-q", "-w", f"net.ipv6.conf.{BRIDGE}.disable_ipv6=1"])
        for member in plan.members:
            node = self.nodes[member.name]
            _host(["ip", "link", "add", member.bridge_if, "type", "veth", "peer", "name",
                   member.node_if, "netns", str(node.pid)])
            _host(["sysctl", "-q", "-w", f"net.ipv6.conf.{member.bridge_if}.disable_ipv6=1"])
            _host(["ip", "link", "set", member.bridge_if, "master", BRIDGE, "up"])
            # The router forwards between its experiment links, never into management.
            run_script(node, [
                ["sysctl", "-q", "-w", f"net.ipv6.conf.{member.node_if}.disable_ipv6=1"],
                ["sysctl", "-q", "-w", f"net.ipv4.conf.{member.node_if}.forwarding=0"],
                ["ip", "addr", "add", f"{member.address}/{plan.prefix_len}", "dev",
                 member.node_if],
                ["ip", "link", "set", member.node_if, "up"]])
        _host(["ip", "link", "set", BRIDGE, "up"])

    def _keys(self) -> None:
        STATE.mkdir(parents=True, exist_ok=True)
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation
        authorized = STATE / "authorized_keys"
        authorized.write_text(_keygen(self.client_key) + "\n")
        known = []
        for member in self.plan.members:
            member.state.mkdir(parents=True, exist_ok=True)
            host_key = _keygen(member.state / "host_key")
            known.append(f"{member.address} {host_key}")
            (member.state / "sshd_config").write_text(sshd_config(member, authorized))
        self.known_hosts.write_text("\n".join(known) + "\n")

    def _start_sshd(self, member: Member) -> None:
        node = self.nodes[member.name]
        # root's home is the host's (hostfs): its shell start-up files would run in every SSH
        # session (seconds each in this kernel) and Ansible would write there. In a mount
        # namespace of its own, sshd and its sessions get an empty home instead; /run stays
        # shared, so the node still sees what the others install there.
        script = (f"mount -t tmpfs -o mode=700 tmpfs /root && exec {SSHD} -D -e -f "
                  f"{shlex.quote(str(member.state / 'sshd_config'))}")
        log = open(member.state / "sshd.log", "wb")  # noqa: SIM115 (sshd writes it until stop)
        try:
            self.sshd[member.name] = node.popen(
                ["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        finally:
            log.close()

    def _await_sshd(self, member: Member) -> None:
        node = self.nodes[member.name]
        deadline = time.monotonic() + SSHD_START_TIMEOUT_S
        while time.monotonic() < deadline:
            if f"{member.address}:{SSH_PORT}" in node.cmd(f"ss -Hltn 'sport = :{SSH_PORT}'"):
                return
            proc = self.sshd[member.name]
            if proc.poll() is not None:
                break
            time.sleep(0.1)
        log = (member.state / "sshd.log").read_text(errors="replace").strip()
        raise ManagementError(f"{member.name}: sshd did not start listening: {log[-500:]}")

    def ssh_environment(self, scratch: Path) -> dict[str, str]:
        """Environment for ansible-playbook on the controller: every scratch file of Ansible
        and ssh under `scratch`, nothing in the repository or the host's home."""
        home = scratch / "home"
        for directory in (home, scratch / "ansible-local", scratch / "cp"):
            directory.mkdir(parents=True, exist_ok=True)
        return {
            "HOME": str(home),
            "ANSIBLE_HOME": str(scratch / "ansible-home"),
            "ANSIBLE_LOCAL_TEMP": str(scratch / "ansible-local"),
            "ANSIBLE_SSH_CONTROL_PATH_DIR": str(scratch / "cp"),
            "ANSIBLE_RETRY_FILES_ENABLED": "false",
        }

    def describe(self) -> dict[str, Any]:
        return {"bridge": BRIDGE, "controller": self.plan.controller,
                "nodes": {m.name: m.address for m in self.plan.members}}
