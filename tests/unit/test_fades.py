"""Loss in fades: drawn as a link schedule from a seed, the link faded a share of the time equal
to the loss, fades of the given mean length; read from experiment files with clear errors."""

import pytest

from experiments import spec
from tests.unit.test_schedule_in_files import load
from topology.net import fades
from topology.params import ParameterError


def faded_time(changes: list, link: str, horizon_s: float) -> tuple[float, list[float]]:
    """The share of time `link` spent in a fade, and each whole fade's length."""
    state, since, spells = 0.0, 0.0, []
    total = 0.0
    for change in (c for c in changes if c.link == link):
        if state == 1.0:
            total += change.at_s - since
            if since > 0:
                spells.append(change.at_s - since)
        state, since = change.settings["loss"], change.at_s
    if state == 1.0:
        total += horizon_s - since
    return total / horizon_s, spells


def test_the_link_is_faded_the_loss_share_of_the_time_in_fades_of_the_mean_length():
    horizon = 20_000.0
    changes = fades.changes(["up", "down"], 0.10, 0.1, horizon, "run-1")
    assert [c.at_s for c in changes] == sorted(c.at_s for c in changes)
    for link in ("up", "down"):
        share, spells = faded_time(changes, link, horizon)
        # about 20,000 fades: the share's and the mean's standard errors are under 1%
        assert share == pytest.approx(0.10, rel=0.05), link
        assert sum(spells) / len(spells) == pytest.approx(0.1, rel=0.05), link


def test_fades_are_drawn_again_from_the_seed_and_differ_per_direction():
    one = fades.changes(["up", "down"], 0.05, 0.2, 600.0, "run-7")
    assert one == fades.changes(["up", "down"], 0.05, 0.2, 600.0, "run-7")
    assert one != fades.changes(["up", "down"], 0.05, 0.2, 600.0, "run-8")
    up = [c.at_s for c in one if c.link == "up"]
    down = [c.at_s for c in one if c.link == "down"]
    assert up != down
    assert fades.changes(["up"], 0.0, 0.2, 600.0, "run-7") == []


@pytest.mark.parametrize("fade_s, loss", [(0.0, 0.1), (100.0, 0.1), ("1s", 0.1), (0.1, 1.0)])
def test_impossible_fades_are_refused(fade_s, loss):
    with pytest.raises(ParameterError):
        fades.check(fade_s, loss)


def test_an_experiment_with_fades_runs_its_lossy_links_clear_between_them(tmp_path):
    experiment = load(tmp_path, 'fade = "100ms"')
    network = experiment.network
    entry = network.entries[0]
    assert network.fade_s == pytest.approx(0.1)
    assert all(shape.loss == 0 for shape in network.links(entry, 0.05).values())
    assert network.fades(entry, 0.05, "r1") == {"links": ["up", "down"], "loss": 0.05,
                                                "fade_s": pytest.approx(0.1), "seed": "r1"}
    assert network.fades(entry, 0.0, "r1") is None
    assert experiment.as_record()["fade_s"] == pytest.approx(0.1)


@pytest.mark.parametrize("network, key, reason", [
    ('fade = "100ms"\nloss_burst = 4', "network.fade", "fades or in bursts, not both"),
    ('fade = "0s"', "network.fade", "1 ms to 60 s"),
    ('fade = "soon"', "network.fade", "cannot read"),
    ('fade = "100ms"\n[[network.schedule]]\nat = "1s"\nlink = "up"\ndown = true',
     "network.schedule[0]", "rate and delay only"),
])
def test_bad_fades_are_refused_with_file_key_and_reason(tmp_path, network, key, reason):
    with pytest.raises(spec.SpecError) as refused:
        load(tmp_path, network)
    message = str(refused.value)
    assert "trial.toml" in message and key in message and reason in message, message
