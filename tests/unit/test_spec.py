"""Experiment files are checked before anything runs: a wrong key, a value out of range or an
unknown variant is refused with the file, the key and the reason."""
import subprocess
from pathlib import Path

import pytest

from experiments.harness import spec
from experiments.harness.plan import points

REPO = Path(__file__).resolve().parents[2]
GOOD = """
name = "{name}"
metric = "nlst150-to-last226"
[network]
queue = "500KB"
[[network.paths]]
name = "lan"
rate = "3Mbit"
delay = "1ms"
[matrix]
loss = [0.0, 0.06]
file_sizes = ["10K"]
files = 3
variants = ["tcp", "sctp-ms"]
tcp_profiles = ["tcp-newreno", "tcp-linux"]
[repetitions]
min = 2
max = 3
"""


def write(tmp_path: Path, text: str, name: str = "trial") -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(text.format(name=name))
    return path


@pytest.mark.parametrize("name", ["smoke", "multistream", "fcs", "demo"])
def test_shipped_experiments_are_valid(name):
    experiment = spec.load(name)
    assert experiment.name == name and points(experiment)


def test_the_published_e1_matrix_is_complete():
    e1 = spec.load("multistream")
    assert [(p.rate_bps, p.delay_s) for p in e1.paths] == [(3e6, 0.001), (1e6, 0.035),
                                                            (256e3, 0.125)]
    assert e1.losses == (0.0, 0.01, 0.03, 0.06, 0.10)
    assert e1.file_sizes == tuple(k * 1024 for k in (10, 50, 200, 500, 1024))
    assert e1.files == 100 and len(points(e1)) == 3 * 5 * 5 * 4


def test_tcp_profiles_multiply_only_the_tcp_variant(tmp_path):
    experiment = spec.load(str(write(tmp_path, GOOD)))
    keys = {p.key for p in points(experiment)}
    assert len(keys) == 2 * (2 + 1)  # per loss: tcp x 2 profiles, sctp-ms once
    assert "lan_loss0.06_10Kx3_sctp-ms_sctp" in keys


@pytest.mark.parametrize("change, key, reason", [
    (("delay = \"1ms\"", "delay = \"1ms\"\ncolour = \"red\""), "network.paths[0].colour",
     "unknown key"),
    (("[matrix]", "[matrix]\nlosses = [0.1]"), "matrix.losses", "unknown key"),
    (("loss = [0.0, 0.06]", "loss = [0.0, 1.5]"), "matrix.loss", "not a loss ratio"),
    (("variants = [\"tcp\", \"sctp-ms\"]", "variants = [\"tcp\", \"quic\"]"), "matrix.variants",
     "unknown variant 'quic'"),
    (("delay = \"1ms\"", "delay = \"-1ms\""), "network.paths[0].delay", "delay must be"),
    (("files = 3", "files = 0"), "matrix.files", "out of range"),
    (("min = 2", "min = 1"), "repetitions", "min"),
    (("tcp_profiles = [\"tcp-newreno\", \"tcp-linux\"]", "tcp_profiles = [\"vegas\"]"),
     "matrix.tcp_profiles", "unknown profile"),
    (("queue = \"500KB\"", "queue = \"lots\""), "network.queue", "cannot read"),
])
def test_bad_values_are_refused_with_file_key_and_reason(tmp_path, change, key, reason):
    path = write(tmp_path, GOOD.replace(*change))
    with pytest.raises(spec.SpecError) as refused:
        spec.load(str(path))
    message = str(refused.value)
    assert str(path) in message and key in message and reason in message


def test_name_must_match_the_file(tmp_path):
    path = tmp_path / "trial.toml"
    path.write_text(GOOD.format(name="other"))
    with pytest.raises(spec.SpecError, match="must match the file name"):
        spec.load(str(path))


def test_cli_refuses_before_anything_runs(tmp_path):
    path = write(tmp_path, GOOD.replace("files = 3", "files = 3\nfile = 4"))
    results = tmp_path / "results"
    cli = subprocess.run(["/usr/bin/python3", "-m", "experiments.harness", "run", str(path),
                          "--results", str(results)], cwd=REPO, capture_output=True, text=True)
    assert cli.returncode == 2
    assert "matrix.file: unknown key" in cli.stderr
    assert not results.exists()
