"""playbooks/fanout.yml: a tiny experiment fanned out over two workers on this machine (each
with a work directory of its own and one pinned kernel), merged into one result set that has
the points and runs of a single-host run, analysable without the workers' directories, and
resumed across hosts without running anything finished again.

Fixtures live here, not in a conftest, so that they stay with the only tests that use them."""
from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from experiments.cluster import fanout, merge
from experiments.onhost.coordinator import HarnessError
from experiments.onhost.ledger import Ledger
from topology.kernel import resolve

pytestmark = pytest.mark.kernel

REPO = Path(__file__).resolve().parents[2]
PYTHON = "/usr/bin/python3"
PLAYBOOK = REPO / "playbooks" / "fanout.yml"
EXAMPLE_INVENTORY = REPO / "playbooks" / "inventories" / "workers.example.yml"
WORKERS = ("worker1", "worker2")
NAME = "fanouttiny"
# Two sizes x two variants = four points, exactly three runs each: the run count is fixed.
TINY = f"""
name = "{NAME}"
description = "fan-out tests: LAN, loss 0, 3 files of 10K or 20K, tcp and sctp-ms"
[network]
queue = "500KB"
[[network.paths]]
name = "lan"
rate = "3Mbit"
delay = "1ms"
[matrix]
loss = [0.0]
file_sizes = ["10K", "20K"]
files = 3
variants = ["tcp", "sctp-ms"]
[repetitions]
min = 3
max = 3
[run]
timeout_s = 120
"""
RUNS_PER_POINT = 3


def environment() -> dict[str, str]:
    """No PYTHONPATH: the playbooks run `python3 -m testbed` from the checkout's root."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ANSIBLE_") and k != "PYTHONPATH"}
    env.update(ANSIBLE_NOCOLOR="1", ANSIBLE_PIPELINING="1", ANSIBLE_RETRY_FILES_ENABLED="0")
    return env


def harness(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([PYTHON, "-m", "testbed", *args], cwd=REPO,
                          env=environment(), capture_output=True, text=True, timeout=timeout)


def ansible(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), cwd=REPO, env=environment(), capture_output=True,
                          text=True, timeout=timeout)


def write_inventory(path: Path, workdirs: dict[str, Path]) -> Path:
    """Two workers on this machine (ansible_connection=local), one work directory each."""
    hosts = "".join(f"        {host}:\n          testbed_workdir: {workdir}\n"
                    for host, workdir in workdirs.items())
    path.write_text(f"""all:
  vars:
    ansible_python_interpreter: {PYTHON}
  hosts:
    localhost:
      ansible_connection: local
  children:
    workers:
      vars:
        ansible_connection: local
        testbed_repo: {REPO}
        testbed_workers_per_host: 1
      hosts:
{hosts}""")
    return path


def fan_out(inventory: Path, experiment: Path, results: Path) -> subprocess.CompletedProcess:
    run = ansible("ansible-playbook", "-i", str(inventory), str(PLAYBOOK),
                  "-e", f"experiment={experiment}", "-e", f"fanout_results={results}")
    assert run.returncode == 0, (run.stdout[-4000:], run.stderr[-2000:])
    return run


def rows(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def point_of(run_id: str) -> str:
    return run_id.rsplit("_r", 1)[0]


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fanout")


@pytest.fixture(scope="module")
def experiment(base) -> Path:
    path = base / f"{NAME}.toml"
    path.write_text(TINY)
    return path


@pytest.fixture(scope="module")
def point_keys(experiment) -> list[str]:
    plan = harness("plan", str(experiment), "--json")
    assert plan.returncode == 0, plan.stderr
    keys = [p["key"] for p in json.loads(plan.stdout)["points"]]
    assert len(keys) == 4
    return keys


@pytest.fixture(scope="module")
def single(base, experiment) -> Path:
    """The same experiment run by the harness on one host, one pinned kernel."""
    run = harness("run", str(experiment), "--results", str(base / "single"), "--workers", "1")
    assert run.returncode == 0, run.stderr[-3000:]
    return base / "single" / NAME


@pytest.fixture(scope="module")
def fanned(base, experiment) -> dict[str, Path]:
    """The experiment fanned out over two fresh workers into a fresh controller."""
    workdirs = {host: base / "fanned" / host for host in WORKERS}
    inventory = write_inventory(base / "fanned-inventory.yml", workdirs)
    fan_out(inventory, experiment, base / "fanned" / "controller")
    return {"controller": base / "fanned" / "controller" / NAME, **workdirs}


def test_playbook_passes_syntax_check_and_lint(base):
    local = write_inventory(base / "lint-inventory.yml", {h: base / h for h in WORKERS})
    for inventory in (EXAMPLE_INVENTORY, local):
        check = ansible("ansible-playbook", "--syntax-check", "-i", str(inventory), str(PLAYBOOK))
        assert check.returncode == 0, check.stdout + check.stderr
    graph = ansible("ansible-inventory", "-i", str(EXAMPLE_INVENTORY), "--graph", "workers")
    assert graph.returncode == 0 and graph.stdout.count("|--") >= 2, graph.stdout + graph.stderr
    lint = ansible("ansible-lint", str(PLAYBOOK), str(EXAMPLE_INVENTORY),
                   *map(str, sorted((REPO / "playbooks" / "roles").glob("fanout_*"))))
    assert lint.returncode == 0, lint.stdout[-3000:] + lint.stderr[-3000:]


def test_two_workers_merge_into_the_result_set_of_one_host(fanned, single, point_keys):
    controller = fanned["controller"]
    summary, single_summary = rows(controller / "summary.csv"), rows(single / "summary.csv")
    assert len(summary) == len(single_summary) == len(point_keys)
    for row in summary:
        assert int(row["n"]) == RUNS_PER_POINT and row["status"] in ("tight", "capped"), row
        assert float(row["mean_s"]) > 0, row

    runs, single_runs = rows(controller / "runs.csv"), rows(single / "runs.csv")
    assert len(runs) == len(single_runs) == len(point_keys) * RUNS_PER_POINT
    assert sorted(r["run_id"] for r in runs) == sorted(r["run_id"] for r in single_runs)
    for run in runs:
        assert run["status"] == "ok", run
        assert float(run["transfer_time_s"]) > 0, run  # read from the merged pcap
        assert run["pcap"] == f"pcaps/{run['run_id']}.pcap"
        assert (controller / run["pcap"]).stat().st_size == int(run["pcap_bytes"]) > 0

    # split by point: each point's runs all come from one worker, and both workers ran some
    hosts_of = {}
    for run in runs:
        hosts_of.setdefault(point_of(run["run_id"]), set()).add(run["host"])
    assert all(len(hosts) == 1 for hosts in hosts_of.values()), hosts_of
    assert set().union(*hosts_of.values()) == set(WORKERS)
    for host in WORKERS:
        own = {point for point, hosts in hosts_of.items() if hosts == {host}}
        held = {point_of(p.parent.name) for p in
                (fanned[host] / NAME / "runs").glob("*/result.json")}
        assert held == own, (host, held, own)  # a worker holds only its share

    meta = json.loads((controller / "meta.json").read_text())
    by_host = {h["host"]: h for h in meta["hosts"]}
    assert set(by_host) == set(WORKERS)
    assert sum(h["runs"] for h in by_host.values()) == len(runs)
    for host in by_host.values():
        assert [(k["backend"], k["kernel_release"][:3], k["clock"]) for k in host["kernels"]] \
            == [(resolve("uml"), "6.1", "real")], host
        assert host["testbed_commits"], host
    assert meta["backend"] == resolve("uml") and meta["kernel_release"].startswith("6.1")
    assert len(meta["link_checks"]) == 2  # one batch per worker


def test_merged_runs_are_analysed_from_their_own_ledger(fanned, experiment, tmp_path):
    """The records name the workers' directories; with those gone and the cached analyses
    dropped, the merged copy still finds every pcap."""
    copy = tmp_path / "results" / NAME
    shutil.copytree(fanned["controller"], copy)
    for point in {point_of(p.parent.name) for p in copy.glob("runs/*/analysis.json")}:
        (copy / "runs" / f"{point}_r001" / "analysis.json").unlink()  # analysed afresh
    moved = {host: fanned[host].with_name(host + ".moved") for host in WORKERS}
    for host, away in moved.items():
        fanned[host].rename(away)
    try:
        tables = harness("tables", str(experiment), "--results", str(copy.parent))
    finally:
        for host, away in moved.items():
            away.rename(fanned[host])
    assert tables.returncode == 0, tables.stderr[-2000:]
    runs = rows(copy / "runs.csv")
    assert len(runs) == 4 * RUNS_PER_POINT
    for run in runs:
        assert run["status"] == "ok" and float(run["transfer_time_s"]) > 0, run
        assert "no pcap" not in run["notes"], run


def test_resume_across_hosts_runs_nothing_finished_again(base, experiment, single, point_keys):
    """As after an interrupted fan-out: the controller holds some merged runs (all of one
    point, the first run of another); worker2 holds runs it finished that nobody merged, and a
    half-finished attempt; worker1 is still running its share (one point) of that fan-out.
    The playbook runs only what is missing and gives worker1's point to nobody, then says so;
    once worker1's share has ended, the same command completes the experiment. No finished
    run is run again or changed."""
    whole, started, leftover, running = point_keys
    root = base / "resume"
    workdirs = {host: root / host for host in WORKERS}
    controller_root = root / "controller"
    root.mkdir()
    inventory = write_inventory(root / "inventory.yml", workdirs)

    seed = root / "seed" / NAME
    seeded = [f"{whole}_r{rep:03d}" for rep in (1, 2, 3)] + [f"{started}_r001"]
    copy_runs(single, seed, seeded)
    merged = harness("merge", str(experiment), str(seed), "--results", str(controller_root))
    assert merged.returncode == 0, merged.stderr
    assert json.loads(merged.stdout)["copied"] == len(seeded)

    worker2 = workdirs["worker2"] / NAME
    unmerged = [f"{leftover}_r001", f"{leftover}_r002"]
    copy_runs(single, worker2, unmerged)
    half_finished = worker2 / "runs" / f"{leftover}_r003"
    half_finished.mkdir()
    (half_finished / "client.jsonl").write_text("")

    worker1 = Ledger(workdirs["worker1"] / NAME)
    (workdirs["worker1"] / ".fanout").mkdir(parents=True)
    (workdirs["worker1"] / ".fanout" / f"{NAME}.points").write_text(running + "\n")

    controller = controller_root / NAME
    before = {run_id: stamp(controller / "runs" / run_id) for run_id in seeded}
    before_worker = {run_id: stamp(worker2 / "runs" / run_id) for run_id in unmerged}

    with worker1.lock():  # worker1's earlier share is still running
        first = ansible("ansible-playbook", "-i", str(inventory), str(PLAYBOOK),
                        "-e", f"experiment={experiment}", "-e", f"fanout_results={controller_root}")
        # meanwhile that share finishes its first run
        copy_runs(single, worker1.root, [f"{running}_r001"])
    assert first.returncode != 0, first.stdout[-3000:]
    assert "1 points of fanouttiny are still pending" in first.stdout, first.stdout[-3000:]
    assert "still running an earlier share on: worker1" in first.stdout, first.stdout[-3000:]
    records = finished(controller)
    assert not any(point_of(run_id) == running for run_id in records)  # given to nobody
    assert len(records) == 3 * RUNS_PER_POINT
    assert {r.get("host") for r in records.values() if r.get("host") in WORKERS} == {"worker2"}

    fan_out(inventory, experiment, controller_root)
    records = finished(controller)
    assert len(records) == 4 * RUNS_PER_POINT
    for run_id, old in before.items():
        assert stamp(controller / "runs" / run_id) == old, run_id  # untouched
    for run_id, old in before_worker.items():
        assert stamp(worker2 / "runs" / run_id) == old, run_id     # not run again on worker2
        assert (controller / "runs" / run_id / "result.json").read_bytes() == old[0]
    executed = {run_id for run_id, record in records.items() if record.get("host") in WORKERS}
    assert executed == {f"{started}_r002", f"{started}_r003", f"{leftover}_r003",
                        f"{running}_r002", f"{running}_r003"}
    for run_id in records:
        assert (controller / "pcaps" / f"{run_id}.pcap").is_file(), run_id
    summary = rows(controller / "summary.csv")
    assert len(summary) == 4 and all(int(r["n"]) == RUNS_PER_POINT for r in summary), summary


def finished(ledger_root: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text())
            for p in (ledger_root / "runs").glob("*/result.json")}


def test_merge_moves_only_finished_runs_and_overwrites_nothing(tmp_path):
    source, into = Ledger(tmp_path / "a" / NAME), Ledger(tmp_path / "b" / NAME)
    fake_run(source, "p_r001", {"status": "ok"}, analysis=True)
    fake_run(source, "p_r002", None)                      # half-finished: no record
    fake_run(source, "p_r003", {"status": "ok"})
    fake_run(into, "p_r001", {"status": "ok", "here": True})
    fake_run(into, "p_r003", None)                        # half-finished here: replaced
    source.work.mkdir(parents=True)
    into.work.mkdir(parents=True)
    (source.work / "b1.metadata.json").write_text('{"host": "a"}')
    (into.work / "b1.metadata.json").write_text('{"host": "b"}')

    bundle_file = tmp_path / "a.tar.gz"
    assert merge.bundle(source, bundle_file) == ["p_r001", "p_r003"]
    report = merge.merge(bundle_file, into)
    assert (report.copied, report.already, report.metadata) == (["p_r003"], ["p_r001"], 1)
    assert json.loads((into.run_dir("p_r001") / "result.json").read_text())["here"]
    assert not into.run_dir("p_r002").exists() and not into.pcap("p_r002").exists()
    assert into.pcap("p_r003").read_bytes() == source.pcap("p_r003").read_bytes()
    assert sorted(p.name for p in into.run_dir("p_r003").iterdir()) == ["result.json"]
    assert sorted(p.read_text() for p in into.work.glob("*.metadata.json")) == \
        ['{"host": "a"}', '{"host": "b"}']
    # the analysis cache stays newer than its record, so it is reused after the move
    assert merge.merge(source.root, Ledger(tmp_path / "c" / NAME)).copied == ["p_r001",
                                                                               "p_r003"]
    moved = Ledger(tmp_path / "c" / NAME).run_dir("p_r001")
    assert (moved / "analysis.json").stat().st_mtime >= (moved / "result.json").stat().st_mtime
    again = merge.merge(bundle_file, into)                # idempotent
    assert (again.copied, again.metadata) == ([], 0)


def test_assign_balances_points_by_estimate_and_kernels():
    rows = [{"key": f"p{i}", "needed": 3, "estimate_s": cost}
            for i, cost in enumerate((90.0, 60.0, 30.0, 30.0, 10.0))]
    rows.append({"key": "done", "needed": 0, "estimate_s": 0.0})
    shares = {s.host: s for s in fanout.assign(rows, {"big": 2, "small": 1})}
    assert sorted(shares["big"].points + shares["small"].points) == \
        ["p0", "p1", "p2", "p3", "p4"]                    # every pending point exactly once
    # longest first onto the host that would finish earliest: 150 s over two kernels, 70 s
    assert shares["big"].points == ["p0", "p2", "p3"] and shares["small"].points == ["p1", "p4"]
    assert shares["big"].runs == 9 and shares["small"].load_s == 70.0
    kept = fanout.assign(rows, {"big": 2, "small": 1}, exclude={"p0"})  # running elsewhere
    assert "p0" not in kept[0].points + kept[1].points
    with pytest.raises(HarnessError, match="whole number"):
        fanout.read_hosts('{"w1": 0}')


def fake_run(ledger: Ledger, run_id: str, record: dict | None, analysis: bool = False) -> None:
    run_dir = ledger.run_dir(run_id)
    run_dir.mkdir(parents=True)
    ledger.pcaps.mkdir(parents=True, exist_ok=True)
    ledger.pcap(run_id).write_bytes(run_id.encode())
    if record is not None:
        (run_dir / "result.json").write_text(json.dumps({"id": run_id, "point": "p", **record,
                                                         "pcap": "/elsewhere/x.pcap"}))
        os.utime(run_dir / "result.json", (1_000_000, 1_000_000))
    if analysis:
        (run_dir / "analysis.json").write_text("{}")
        os.utime(run_dir / "analysis.json", (1_000_001, 1_000_001))


def copy_runs(source: Path, ledger: Path, run_ids: list[str]) -> None:
    """Finished runs of one ledger copied into another, as a host would have left them."""
    (ledger / "pcaps").mkdir(parents=True, exist_ok=True)
    for run_id in run_ids:
        shutil.copytree(source / "runs" / run_id, ledger / "runs" / run_id)
        shutil.copy2(source / "pcaps" / f"{run_id}.pcap", ledger / "pcaps" / f"{run_id}.pcap")


def stamp(run_dir: Path) -> tuple[bytes, int]:
    record = run_dir / "result.json"
    return record.read_bytes(), record.stat().st_mtime_ns
