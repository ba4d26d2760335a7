"""Inside the kernel under test: run one batch of runs. The topology is built once for every run
of the same structure (the same topology, pairs and MTU) and its links changed in place between
runs; each run gets its sysctls on every end host, then its workload runs it (which programs on
which node, what it captures, how its data are verified). A run's record is written last and
atomically: a run without one did not happen.

When the results disk fills, the run in progress gets no record (a failure for want of room is
not the run's), its pcap is removed, and the batch stops with DISK_FULL_EXIT and a line saying
so: the harness reports the full disk, and the run is redone once there is room.

    python3 -m experiments.inkernel.kernel_batch BATCH.json

(kernel_serve.py runs batch after batch in one boot with these same functions.)"""
from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from experiments import workloads
from experiments.diskspace import FULL, refuses_a_write
from experiments.inkernel import sharing
from experiments.procedure import RunFailure
from experiments.stacks import KERNEL_SWITCHES
from topology.fidelity import probes
from topology.kernel import metadata
from topology.net import build, fades
from topology.net.base import Topology
from topology.net.schedule import Change
from topology.params import LinkShape

RECORD = "result.json"
SET_ASIDE = RECORD + ".bad-"   # a record the host could not count (onhost/ledger.py), kept
DISK_FULL_EXIT = 75            # EX_TEMPFAIL: the results disk is full; try again with room


class ResultsDiskFull(Exception):
    """The results disk has no room for a run's files: the batch stops."""


class Marks:
    """Where the batch is, one line per step appended to the batch's marks file the moment it
    is reached. The host stamps each line with its own clock as it appears (launch.py): inside
    a virtual-time kernel this process's clock is the kernel's, so only the host can say how
    much wall time each step took."""

    def __init__(self, path: str | None) -> None:
        self.out = open(path, "a", buffering=1) if path else None  # noqa: SIM115

    def __call__(self, step: str, run: str = "") -> None:
        if self.out is not None:
            self.out.write(json.dumps({"step": step, "run": run}) + "\n")

    def close(self) -> None:
        if self.out is not None:
            self.out.close()
            self.out = None


def write_record(run_dir: Path, record: dict[str, Any]) -> None:
    partial = run_dir / (RECORD + ".tmp")
    try:
        partial.write_text(json.dumps(record, indent=1))
    except OSError as error:
        partial.unlink(missing_ok=True)
        if error.errno in FULL:
            raise ResultsDiskFull(f"its record could not be written ({error.strerror})") from None
        raise
    os.replace(partial, run_dir / RECORD)


def disk_full(folder: Path) -> bool:
    """Whether the results disk, seen through hostfs, cannot take a write (diskspace.py)."""
    return refuses_a_write(folder)


def clear_attempt(run_dir: Path) -> None:
    """The folder of a run about to start, emptied of a half-finished attempt (it counts for
    nothing) but for records the host set aside, which are kept for whoever looks."""
    if not run_dir.exists():
        run_dir.mkdir(parents=True)
        return
    for path in run_dir.iterdir():
        if path.name.startswith(SET_ASIDE):
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()


def give_back(run: dict[str, Any]) -> None:
    """The pcap of a run that will have no record: worthless, and the room is wanted."""
    for pcap in (Path(run["pcap"] + ".partial"), Path(run["pcap"])):
        with contextlib.suppress(OSError):
            pcap.unlink()


def apply_sysctls(node: Any, values: dict[str, str]) -> None:
    """Written by the node's shell itself into /proc/sys (its network namespace's), as sysctl
    does, without starting sysctl: a program start costs about 30 ms inside the kernel, on
    every node of every run. The TCP metrics cache needs no flush: every run's sysctls keep it
    empty (profiles.COMMON_SYSCTLS), and `cached_tcp_metrics` checks that once per topology."""
    writes = "".join(_write(k, v) for k, v in sorted(values.items()))
    out = node.cmd(f"{{ s=0; {writes}echo __status=$s; }} 2>&1")
    if "__status=0" not in out:
        settings = " ".join(f"{k}={v}" for k, v in sorted(values.items()))
        raise RunFailure(f"{node.name}: cannot apply sysctls {settings}: {out.strip()}")


def _write(name: str, value: str) -> str:
    """One sysctl's write. A switch of the project's kernel at Linux's own value is written
    only where the kernel has it: another kernel behaves so already."""
    path = shlex.quote(f"/proc/sys/{name.replace('.', '/')}")
    write = f"echo {shlex.quote(value)} > {path} || s=1; "
    if KERNEL_SWITCHES.get(name) == value:
        return f"[ ! -e {path} ] || {write}"
    return write


def apply_route_metrics(node: Any, metrics: dict[str, int]) -> None:
    """Every IPv4 route of the node again, with the stack's TCP initial window and RTO floor
    (or none), when they differ from what the node's routes carry now: a later run of
    another stack must not inherit them."""
    if getattr(node, "tcp_route_metrics", {}) == metrics:
        return
    # iproute2 locks rto_min itself (Linux reads a route's floor only when locked)
    extra = (f" initcwnd {metrics['initcwnd']} rto_min {metrics['rto_min_ms']}ms"
             if metrics else "")
    script = ("s=0; ip -4 route show | while read -r route; do "
              "route=$(printf '%s' \"$route\" | sed -E 's/ (initcwnd|rto_min)( lock)? [^ ]+//g'); "
              f"ip route replace $route{extra} || exit 1; done || s=1; echo __status=$s")
    out = node.cmd(f"{{ {script}; }} 2>&1")
    if "__status=0" not in out:
        raise RunFailure(f"{node.name}: cannot set the routes' TCP metrics {metrics}: "
                         f"{out.strip()}")
    node.tcp_route_metrics = dict(metrics)


def shapes(links: dict[str, dict[str, Any]]) -> dict[str, LinkShape]:
    return {direction: LinkShape.from_dict(shape) for direction, shape in links.items()}


def execute(net: Topology, run: dict[str, Any], marks: Marks | None = None,
            batch: str | None = None) -> dict[str, Any]:
    """One run on the built topology; its record, as written (`batch`: which one ran it)."""
    run_dir = Path(run["dir"])
    clear_attempt(run_dir)
    record: dict[str, Any] = {"id": run["id"], "point": run["point"], "rep": run["rep"],
                              "workload": run["workload_kind"], "params": run["params"],
                              "links": run["links"], "status": "failed", "reasons": [],
                              "host": run.get("host"), "batch": batch,
                              "started": time.time()}
    phases: dict[str, float] = {}
    last = [time.monotonic()]

    def mark(phase: str) -> None:
        now = time.monotonic()
        phases[phase] = now - last[0]
        last[0] = now
        if marks is not None:
            marks(phase, run["id"])

    try:
        net.set_links(shapes(run["links"]))
        for host in net.end_hosts():
            apply_sysctls(net.node(host), run["sysctls"])
            apply_route_metrics(net.node(host), run.get("route_metrics", {}))
        before = net.queue_counters()
        mark("links_and_sysctls")
        changes = link_changes(run)
        schedule = net.schedule(changes) if changes else None
        try:
            workloads.get(run["workload_kind"]).execute(net, run, run_dir, record, mark)
        finally:
            if schedule is not None:
                record["schedule"] = schedule.stop()
            mark("stop")
        record["queues"] = queue_deltas(before, net.queue_counters())
        record["status"] = "ok"
    except RunFailure as failure:
        record["reasons"].append(str(failure))
    except Exception as error:  # any other fault fails this run, not the batch
        record["reasons"].append(f"harness fault: {error!r}")
    record["phases_s"] = phases
    record["ended"] = time.time()
    record["sysctls"] = run["sysctls"]
    record["route_metrics"] = run.get("route_metrics", {})
    try:
        if record["status"] != "ok" and disk_full(run_dir):
            raise ResultsDiskFull("the run failed with the results disk full: "
                                  + "; ".join(record["reasons"])[-300:])
        write_record(run_dir, record)
    except ResultsDiskFull as full:
        give_back(run)
        raise ResultsDiskFull(f"run {run['id']} was not recorded: {full}") from None
    if marks is not None:
        marks("record", run["id"])
    return record


def link_changes(run: dict[str, Any]) -> list[Change]:
    """The run's link schedule and its fades, drawn up to its time limit, in time order."""
    out = [Change.from_dict(c) for c in run.get("schedule") or []]
    drawn = run.get("fades")
    if drawn:
        out += fades.changes(drawn["links"], drawn["loss"], drawn["fade_s"], run["timeout_s"],
                             drawn["seed"])
    return sorted(out, key=lambda c: c.at_s)


def queue_deltas(before: dict[str, dict[str, int]],
                 after: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """What the run did at each shaped egress: packets sent on, dropped by the queue, lost."""
    return {direction: {key: value - before[direction].get(key, 0)
                        for key, value in counts.items()}
            for direction, counts in after.items()}


def link_signature(run: dict[str, Any]) -> str:
    """A run's links without their loss: what a link check measures."""
    return json.dumps({d: s.with_changes(loss=0.0).to_dict()
                       for d, s in shapes(run["links"]).items()}, sort_keys=True)


def link_check(net: Topology, run: dict[str, Any]) -> dict[str, Any]:
    """Ping across the run's links (without loss) before the run: the fidelity check of the
    links actually used, recorded with the results (once per link setting and topology)."""
    clean = {d: s.with_changes(loss=0.0) for d, s in shapes(run["links"]).items()}
    node, address = net.probe_pair()
    net.set_links(clean)
    main = run["links"][net.named_link]
    rtt = probes.ping(net.node(node), address, 5, 0.2)
    return {"rate_bps": main.get("rate_bps"), "delay_s": main.get("delay_s"),
            "rtt_configured_ms": 1000 * sum(clean[d].delay_s for d in net.probe_route()),
            **rtt, "reconfigure_s": net.timings_s.get("reconfigure")}


def cached_tcp_metrics(net: Topology) -> dict[str, list[str]]:
    """What the end hosts' TCP metrics caches hold after a topology's runs: nothing, as long as
    every run saved none (a cached ssthresh or RTT would carry from one run into the next).
    One `ip` per end host per topology, instead of a flush per run."""
    return {host: [line for line in net.node(host).cmd("ip tcp_metrics show 2>&1").splitlines()
                   if line.strip()]
            for host in net.end_hosts()}


class Topologies:
    """The topology this kernel has up. Consecutive runs of one structure share one build, also
    across batches when the kernel serves several (`serve`): a build, its link checks and its
    teardown cost seconds. Its link checks are made once per link setting while it lives."""

    def __init__(self, marks: Marks) -> None:
        self.marks = marks
        self.net: Topology | None = None
        self.structure = ""
        self.checked: set[str] = set()

    def for_run(self, run: dict[str, Any], collected: dict[str, Any]) -> Topology:
        """The topology for `run`, built if the one up has another structure; its link check
        made if the run's link setting has none yet (recorded in `collected`)."""
        structure = sharing.structure(run)
        if self.net is None or structure != self.structure:
            self.stop(collected)
            net = build({**run["topology"], "links": run["links"]})
            net.start()
            self.net, self.structure, self.checked = net, structure, set()
            collected["topology_build_s"].append(net.timings_s["build"])
            self.marks("topology")
        signature = link_signature(run)
        if signature not in self.checked:
            self.checked.add(signature)
            collected["link_checks"].append(link_check(self.net, run))
            self.marks("link_checks")
        return self.net

    def report(self, collected: dict[str, Any]) -> None:
        """What the end hosts' TCP metrics caches hold now, recorded in `collected`."""
        if self.net is not None:
            collected["tcp_metrics_cached"] += [
                {"host": host, "entries": entries}
                for host, entries in cached_tcp_metrics(self.net).items()]

    def stop(self, collected: dict[str, Any] | None = None) -> None:
        if self.net is None:
            return
        net, self.net = self.net, None
        try:
            if collected is not None:
                self.report(collected)
        finally:
            net.stop()
            self.marks("topology_stop")


def run_batch(batch_file: str, topologies: Topologies | None = None,
              kernel_metadata: dict[str, Any] | None = None) -> None:
    """Every run of the batch this kernel claims. `topologies`: the one kept up across batches
    (by default a new one, stopped at the end); `kernel_metadata`: what metadata.collect() said
    (by default collected now)."""
    batch = json.loads(Path(batch_file).read_text())
    marks = Marks(batch.get("marks_file"))
    marks("started")
    own = topologies is None
    kept = topologies if topologies is not None else Topologies(marks)
    kept.marks = marks
    batch_name = Path(batch_file).stem
    collected = {**(kernel_metadata or metadata.collect()), **batch.get("provenance", {}),
                 "topology_build_s": [], "link_checks": [], "tcp_metrics_cached": []}
    marks("metadata")

    def save() -> None:
        target = Path(batch["metadata_file"])
        partial = target.with_name(target.name + ".tmp")
        try:
            partial.write_text(json.dumps(collected, indent=1))
        except OSError as error:
            partial.unlink(missing_ok=True)
            if error.errno in FULL:
                return  # the disk is full: the last whole copy stays
            raise
        os.replace(partial, target)

    claims = sharing.Claims(batch.get("claims_dir"))
    try:
        for runs in sharing.plan(batch):
            for run in sharing.claimed(runs, claims):
                checks = len(collected["link_checks"])
                net = kept.for_run(run, collected)
                if len(collected["link_checks"]) > checks:
                    save()
                record = execute(net, run, marks, batch_name)
                print(json.dumps({"id": run["id"], "status": record["status"]}), flush=True)
        marks("last_run")
        if own:
            kept.stop(collected)
        else:
            kept.report(collected)
    finally:
        if own:
            kept.stop()
        save()
        marks("ended")
        kept.marks = Marks(None)  # a topology kept up reports no more to this batch
        marks.close()


def main(batch_file: str) -> int:
    try:
        run_batch(batch_file)
    except ResultsDiskFull as full:
        print(f"results disk full: {full}; the batch stops here", file=sys.stderr, flush=True)
        return DISK_FULL_EXIT
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
