"""The container image, built as CI builds it (podman, a bookworm base bootstrapped from this
machine's apt mirror, no registry) and run as a user would: an experiment (a small cut of the
smoke experiment, mounted read-only) with no network, no privileges and the results folder
mounted as a volume. The first container is stopped part-way and a second one resumes on the
same volume; what comes out must be complete, belong to the folder's owner and name the pinned
kernel that made it. Last, the image as the environment of a Slurm array task."""
from __future__ import annotations

import csv
import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from experiments import spec
from tests.container.conftest import REPO, ULIMITS, run
from tests.slurm.cluster import OneNodeCluster
from topology.kernel import resolve

pytestmark = [pytest.mark.kernel, pytest.mark.slow]

BASE_IMAGE = "localhost/bookworm-base"
IMAGE = "localhost/testbed-test"
# Someone other than root owns the mounted folder: the results must end up theirs.
VOLUME_OWNER = (4321, 4321)
RUNS_BEFORE_STOP = 3
# The smoke experiment's path and queue, two variants at one point: eight runs of a few seconds
# each, so that the stop comes part-way and the resumed container has runs left to do.
EXPERIMENT = "in-container"
EXPERIMENT_TOML = f"""\
name = "{EXPERIMENT}"
metric = "nlst150-to-last226"
seed = 1
[network]
queue = "500KB"
queue_never_drops = true
[[network.paths]]
name = "lan"
rate = "3Mbit"
delay = "1ms"
[matrix]
loss = [0.0]
file_sizes = ["200K"]
files = 5
variants = ["tcp", "sctp-ms"]
[repetitions]
min = 4
max = 4
[run]
timeout_s = 300
"""


@pytest.fixture(scope="module")
def image(podman: list[str]) -> str:
    began = time.monotonic()
    base = run(["bash", str(REPO / "docker" / "base-image.sh"), BASE_IMAGE], timeout=900)
    assert base.returncode == 0, base.stderr[-3000:]
    print(f"base image: {time.monotonic() - began:.0f} s")
    previous = image_id(podman, IMAGE)
    began = time.monotonic()
    # the time-travel kernel is not what this test is about: --no-virtual-kernel saves 5 minutes
    build = run(["bash", str(REPO / "docker" / "build-image.sh"), IMAGE, BASE_IMAGE,
                 "--build-arg", "SETUP_FLAGS=--no-virtual-kernel"],
                timeout=2400, env={**os.environ, "CONTAINER_ENGINE": "podman"})
    assert build.returncode == 0, (build.stdout[-3000:], build.stderr[-3000:])
    print(f"image: {time.monotonic() - began:.0f} s")
    if previous and previous != image_id(podman, IMAGE):
        run([*podman, "rmi", previous], timeout=120)  # the replaced build only takes room
    return IMAGE


def image_id(podman: list[str], name: str) -> str:
    found = run([*podman, "image", "inspect", "--format", "{{.Id}}", name], timeout=60)
    return found.stdout.strip() if found.returncode == 0 else ""


def container_argv(podman: list[str], name: str, results: Path, experiment: Path,
                   *extra: str) -> list[str]:
    """How a user runs the image: no privileges, no network, the results folder as a volume
    and the experiment file from the host."""
    return [*podman, "run", "--name", name, "--network=none", *ULIMITS,
            "-e", f"EXP=/experiment/{experiment.name}", "-v", f"{experiment.parent}:/experiment:ro",
            "-v", f"{results}:/results", *extra]


@dataclass
class RunInContainer:
    results: Path
    experiment: Path
    stopped_exit: int
    stopped_logs: str
    kept_at_stop: dict[str, str]
    foreign_owners_at_stop: list[str]
    resumed: subprocess.CompletedProcess[str]
    resumed_wall_s: float

    @property
    def ledger(self) -> Path:
        return self.results / EXPERIMENT


def foreign_owned(root: Path) -> list[str]:
    return [str(p) for p in [root, *root.rglob("*")]
            if (p.lstat().st_uid, p.lstat().st_gid) != VOLUME_OWNER]


def finished_runs(results: Path) -> dict[str, str]:
    return {p.parent.name: p.read_text() for p in results.glob(f"{EXPERIMENT}/runs/*/result.json")}


@pytest.fixture(scope="module")
def in_container(image: str, podman: list[str], tmp_path_factory) -> RunInContainer:
    folder = tmp_path_factory.mktemp("container")
    results = folder / "results"
    results.mkdir(mode=0o755)
    experiment = folder / "experiment" / f"{EXPERIMENT}.toml"
    experiment.parent.mkdir(mode=0o755)
    experiment.write_text(EXPERIMENT_TOML)
    experiment.chmod(0o644)
    os.chown(results, *VOLUME_OWNER)
    name = f"tb-image-test-{os.getpid()}"
    try:
        started = run(container_argv(podman, name, results, experiment, "-d", image), timeout=120)
        assert started.returncode == 0, started.stderr
        deadline = time.monotonic() + 900
        while len(finished_runs(results)) < RUNS_BEFORE_STOP:
            state = run([*podman, "inspect", "--format", "{{.State.Running}}", name], timeout=60)
            if state.stdout.strip() != "true" or time.monotonic() > deadline:
                logs = run([*podman, "logs", name], timeout=60)
                pytest.fail(f"no {RUNS_BEFORE_STOP} finished runs before the container ended "
                            f"or the deadline:\n{logs.stdout[-3000:]}{logs.stderr[-3000:]}")
            time.sleep(2)
        stop = run([*podman, "stop", "--time", "120", name], timeout=300)
        assert stop.returncode == 0, stop.stderr
        exit_code = run([*podman, "inspect", "--format", "{{.State.ExitCode}}", name], timeout=60)
        logs = run([*podman, "logs", name], timeout=60)
        kept = finished_runs(results)
        owners_at_stop = foreign_owned(results)
        run([*podman, "rm", name], timeout=120)

        began = time.monotonic()
        resumed = run(container_argv(podman, name, results, experiment, "--rm", image),
                      timeout=1800)
        return RunInContainer(results, experiment, int(exit_code.stdout.strip()),
                              logs.stdout + logs.stderr, kept, owners_at_stop, resumed,
                              time.monotonic() - began)
    finally:
        run([*podman, "rm", "--force", "--time", "10", name], timeout=120)


def rows(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def test_the_resumed_container_finishes_the_experiment(in_container):
    resumed = in_container.resumed
    assert resumed.returncode == 0, (resumed.stdout[-3000:], resumed.stderr[-3000:])
    assert f"{EXPERIMENT}: done in" in resumed.stdout
    assert "--results /results" in resumed.stdout  # make experiment wrote to the volume
    print(f"resumed {EXPERIMENT} in the container: {in_container.resumed_wall_s:.0f} s")


def test_a_stopped_container_keeps_its_finished_runs_and_the_next_one_resumes(in_container):
    assert in_container.stopped_exit != 0
    assert "run the same command to resume" in in_container.stopped_logs
    kept = in_container.kept_at_stop
    assert len(kept) >= RUNS_BEFORE_STOP
    after = finished_runs(in_container.results)
    # finished runs are neither redone nor lost by the second container
    assert {run_id: after.get(run_id) for run_id in kept} == kept


def test_every_point_is_present_with_its_repetitions(in_container):
    summary = rows(in_container.ledger / "summary.csv")
    experiment = spec.load(in_container.experiment)
    assert {(r["variant"], r["loss"], r["file_size"]) for r in summary} == \
        {(p.get("variant"), f"{p.loss:g}", str(p.get("file_size"))) for p in experiment.points()}
    for row in summary:
        assert int(row["n"]) >= experiment.repetitions.min, row
        assert row["status"] in ("tight", "capped"), row


def test_every_run_is_ok_with_its_pcap_on_the_volume(in_container):
    ledger = in_container.ledger
    runs = rows(ledger / "runs.csv")
    experiment = spec.load(in_container.experiment)
    assert len(runs) >= len(experiment.points()) * experiment.repetitions.min
    for row in runs:
        assert row["status"] == "ok", row
        pcap = ledger / row["pcap"]
        assert pcap.is_file() and pcap.stat().st_size > 0, row


def test_meta_names_the_pinned_kernel_and_the_commit(in_container, image, podman):
    meta = json.loads((in_container.ledger / "meta.json").read_text())
    # the container runs on this host's CPU: `uml` is the project's build where Debian's
    # cannot run here (topology/kernel/host_cpu.py)
    assert meta["backend"] == resolve("uml") and meta["kernel_release"].startswith("6.1"), meta
    assert meta["clock"] == "real"
    # the image carries .git and git, so the commit is the one the image was built from (which
    # build-image.sh also wrote into its label; the repository's HEAD may have moved on since)
    label = run([*podman, "image", "inspect", "--format",
                 '{{index .Labels "org.opencontainers.image.revision"}}', image], timeout=60)
    built_from = label.stdout.strip()
    assert len(built_from) == 40, label
    assert meta["testbed"]["commit"] == built_from


def test_results_belong_to_the_owner_of_the_mounted_folder(in_container):
    assert in_container.foreign_owners_at_stop == [], \
        "after a stop: " + ", ".join(in_container.foreign_owners_at_stop[:5])
    after = foreign_owned(in_container.results)
    assert after == [], "after the end: " + ", ".join(after[:5])
    for path in in_container.ledger.rglob("*"):
        if path.is_file():
            assert path.stat().st_mode & 0o400, path


def test_the_image_tmpdir_is_what_lets_the_kernel_start(image, podman):
    """Engines mount /dev/shm noexec, and the kernel, left to itself, keeps its memory there."""
    boot = ["python3", "-m", "testbed", "kernel", "--", "uname", "-r"]
    default = run([*podman, "run", "--rm", "--network=none", *ULIMITS, image, *boot],
                  timeout=300)
    assert default.returncode == 0, default.stderr[-2000:]
    assert default.stdout.strip().splitlines()[-1].startswith("6.1"), default.stdout
    unset = run([*podman, "run", "--rm", "--network=none", *ULIMITS, "-e", "TMPDIR=", image,
                 *boot], timeout=300)
    assert unset.returncode != 0
    assert "/dev/shm must be not mounted noexec" in unset.stdout + unset.stderr


def test_a_slurm_task_runs_its_batch_in_the_image(image, podman, tmp_path):
    """The `launcher` of [run.slurm] as experiments/README.md gives it for podman: each array
    task of a one-node Slurm runs the checkout's batch in the image, whose packages and kernel
    make the runs, and each batch records the container it ran in."""
    launcher = [*podman, "run", "--rm", "--network=none", *ULIMITS, "-v", f"{REPO}:{REPO}",
                "-v", f"{tmp_path}:{tmp_path}", image]
    toml = tmp_path / "in-image.toml"
    toml.write_text(f"""\
name = "in-image"
[network]
queue = "500KB"
[[network.paths]]
name = "lan"
rate = "3Mbit"
delay = "1ms"
[matrix]
loss = [0.0]
file_sizes = ["200K"]
files = 5
variants = ["sctp-ms"]
[repetitions]
min = 2
max = 2
[run]
timeout_s = 120
[run.slurm]
task_runs = 1
memory = "1500M"
launcher = {json.dumps(launcher)}
""")
    cluster = OneNodeCluster(tmp_path / "slurm").start()
    try:
        done = run(["/usr/bin/python3", "-m", "testbed", "run", str(toml), "--results",
                    str(tmp_path / "results"), "--slurm"], timeout=900, cwd=REPO,
                   env=cluster.env)
        assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-3000:])
        assert cluster.squeue() == []
    finally:
        cluster.stop()
    runs = rows(tmp_path / "results" / "in-image" / "runs.csv")
    # a failed run keeps its row beside its redo's (the session's summary names its reasons)
    failed = [(r["run_id"], r["reasons"]) for r in runs if r["status"] != "ok"]
    assert len(runs) - len(failed) == 2 and all(reasons for _, reasons in failed), failed
    meta = json.loads((tmp_path / "results" / "in-image" / "meta.json").read_text())
    assert [h["containers"] for h in meta["hosts"]] == [["podman"]]
