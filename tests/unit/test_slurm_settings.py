"""The Slurm path's decisions that need no cluster: settings read from [run.slurm] and the
command line (refused with file, key and reason), how a round is cut into array tasks and how
long each may run, the script every task runs, a clear error without Slurm's commands, and the
refusal to mix kernels or clocks in one experiment's results."""
import json
import subprocess
from pathlib import Path

import pytest

from experiments import spec
from experiments.cluster import slurm
from experiments.onhost.coordinator import Harness, HarnessError, free_reps
from experiments.onhost.ledger import Ledger

GOOD = """
name = "{name}"
[network]
queue = "500KB"
[[network.paths]]
name = "lan"
rate = "3Mbit"
delay = "1ms"
[matrix]
loss = [0.0]
file_sizes = ["10K"]
files = 3
variants = ["tcp"]
[run.slurm]
"""


def load(tmp_path: Path, slurm_table: str):
    path = tmp_path / "trial.toml"
    path.write_text(GOOD.format(name="trial") + slurm_table)
    return spec.load(str(path))


def test_the_file_s_slurm_table_is_read_and_recorded(tmp_path):
    experiment = load(tmp_path, 'partition = "short"\ntask_runs = 4\nmemory = "3G"\n'
                                'sbatch_options = ["--account=netlab"]\n')
    assert experiment.slurm == slurm.SlurmSettings(partition="short", task_runs=4, memory="3G",
                                                   sbatch_options=("--account=netlab",))
    assert experiment.as_record()["slurm"]["sbatch_options"] == ["--account=netlab"]


@pytest.mark.parametrize("table,key,reason", [
    ('memory = "lots"', "run.slurm.memory", "a size such as 2G"),
    ("task_runs = 0", "run.slurm.task_runs", "between 1 and 10000"),
    ("cpus = 2.5", "run.slurm.cpus", "must be int"),
    ('partition = "a b"', "run.slurm.partition", "not a partition name"),
    ('nodes = 3', "run.slurm.nodes", "unknown key"),
    ('launcher = ["podman", ""]', "run.slurm.launcher", "non-empty strings"),
])
def test_bad_slurm_settings_are_refused_with_file_key_and_reason(tmp_path, table, key, reason):
    with pytest.raises(spec.SpecError) as error:
        load(tmp_path, table + "\n")
    assert str(tmp_path / "trial.toml") in str(error.value)
    assert f"{key}:" in str(error.value) and reason in str(error.value)


def test_the_command_line_overrides_the_file_and_is_checked_too():
    settings = slurm.SlurmSettings(partition="short", memory="3G")
    changed = slurm.overridden(settings, partition="long", memory=None, cpus=2)
    assert (changed.partition, changed.memory, changed.cpus) == ("long", "3G", 2)
    with pytest.raises(slurm.SlurmError, match="--slurm-cpus: between 1 and 1024"):
        slurm.overridden(settings, cpus=0)


def orders(estimates: list[float], timeout_s: float = 120) -> list[dict]:
    return [{"id": f"r{i}", "estimate_s": e, "timeout_s": timeout_s}
            for i, e in enumerate(estimates)]


def test_a_round_is_cut_into_tasks_by_runs_by_estimated_minutes_or_by_free_slots():
    round_ = orders([600.0] * 10)  # 100 minutes of estimated work
    assert slurm.task_count(round_, slurm.SlurmSettings(task_runs=3)) == 4
    assert slurm.task_count(round_, slurm.SlurmSettings()) == 4            # 30 min a task
    assert slurm.task_count(round_, slurm.SlurmSettings(task_minutes=10)) == 10
    assert slurm.task_count(orders([1.0] * 5), slurm.SlurmSettings()) == 1
    # a small round still spreads over what the partition runs at once, a run a task at most
    assert slurm.task_count(orders([1.0] * 5), slurm.SlurmSettings(), slots=3) == 3
    assert slurm.task_count(orders([1.0] * 5), slurm.SlurmSettings(), slots=64) == 5
    assert slurm.task_count(round_, slurm.SlurmSettings(), slots=2) == 4
    assert slurm.task_count([], slurm.SlurmSettings()) == 0


def test_a_task_s_time_limit_follows_its_estimate_but_never_passes_its_time_outs():
    settings = slurm.SlurmSettings()
    # twice 2 x 300 s, plus 10 minutes: 30 minutes
    assert slurm.time_limit_min([orders([300.0, 300.0], timeout_s=3600)], settings) == 30
    # time-outs of 2 x (120 + 60) s plus the 600 s overhead: 16 minutes, below the estimate's 40
    assert slurm.time_limit_min([orders([900.0, 900.0])], settings) == 16
    # the largest task decides for the whole array
    assert slurm.time_limit_min([orders([10.0]), orders([300.0, 300.0], 3600)], settings) == 30
    assert slurm.time_limit_min([orders([10.0])], slurm.SlurmSettings(time_limit_min=7)) == 7


def test_every_task_runs_the_batch_file_of_its_own_index(tmp_path):
    script = tmp_path / "job.sh"
    launcher = ("apptainer", "exec", "--bind", "/shared dir", "testbed.sif")
    script.write_text(slurm.job_script(tmp_path / "round-1-", "uml-virtual",
                                       slurm.SlurmSettings(launcher=launcher)))
    fake = tmp_path / "bin"
    fake.mkdir()
    # the launcher's first word, replaced by one that prints its arguments
    (fake / "apptainer").write_text('#!/bin/sh\nprintf "%s\\n" "$@"\n')
    (fake / "apptainer").chmod(0o755)
    out = subprocess.run(["bash", str(script)], capture_output=True, text=True, check=True,
                         env={"PATH": f"{fake}:/usr/bin:/bin", "SLURM_ARRAY_TASK_ID": "7",
                              "SLURMD_NODENAME": "node12"}).stdout.splitlines()
    assert out[:4] == ["exec", "--bind", "/shared dir", "testbed.sif"]
    assert out[5] == "-c" and "from testbed.cli import main" in out[6]
    assert out[7:] == ["batch", f"{tmp_path}/round-1-task7.json", "--kernel", "uml-virtual",
                       "--host", "node12"]


def test_without_slurm_s_commands_the_error_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(slurm.SlurmError, match="apt-get install slurm-client"):
        slurm.require_commands()


def batch_metadata(ledger: Ledger, name: str, backend: str, release: str, clock: str,
                   host: str) -> None:
    ledger.work.mkdir(parents=True, exist_ok=True)
    (ledger.work / f"{name}.metadata.json").write_text(json.dumps(
        {"backend": backend, "kernel_release": release, "clock": clock, "host": host}))


def test_one_experiment_s_runs_come_from_one_kernel_and_one_clock(tmp_path):
    ledger = Ledger(tmp_path / "smoke")
    harness = Harness(spec.load("smoke"), ledger=ledger)
    batch_metadata(ledger, "a", "uml", "6.1.176", "real", "node1")
    harness.refuse_mixed_kernels(("uml", "real"))              # the same: fine
    with pytest.raises(HarnessError, match=r"this run would use uml-virtual, clock virtual"):
        harness.refuse_mixed_kernels(("uml-virtual", "virtual (time-travel=wall-cpu)"))
    batch_metadata(ledger, "b", "uml-virtual", "6.1.192-timetravel",
                   "virtual (time-travel=wall-cpu)", "node2")
    with pytest.raises(HarnessError, match=r"more than one kernel or clock: .*node1.*node2"):
        harness.refuse_mixed_kernels()


def test_a_half_finished_run_is_redone_under_its_own_id():
    assert free_reps([], 3) == [1, 2, 3]
    assert free_reps([2], 2) == [1, 3]          # r001 was cut short, r002 finished
    assert free_reps([1, 2, 3], 1) == [4]
    assert free_reps([1, 3, 5], 3) == [2, 4, 6]
