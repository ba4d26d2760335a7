"""Link schedules in experiment files: read in time order, on links the topology has, inside
the run's limit, and each change a possible link; refused otherwise with file, key and reason."""
from pathlib import Path

import pytest

from experiments import spec
from topology.net.schedule import Change, shapes_over_time
from topology.params import LinkShape, ParameterError

FILE = """
name = "{name}"
[network]
queue = "50p"
{schedule}
[[network.paths]]
name = "lan"
rate = "3Mbit"
delay = "10ms"
[matrix]
loss = [0.0, 0.05]
file_sizes = ["10K"]
files = 2
variants = ["tcp"]
[run]
timeout_s = 60
"""

GOOD = """
[[network.schedule]]
at = "2s"
link = "up"
delay = "40ms"
[[network.schedule]]
at = "3s"
link = "down"
down = true
[[network.schedule]]
at = "4.5s"
link = "down"
down = false
"""


def load(tmp_path: Path, schedule: str) -> spec.Experiment:
    path = tmp_path / "trial.toml"
    path.write_text(FILE.format(name="trial", schedule=schedule))
    return spec.load(str(path))


def test_a_schedule_is_read_and_recorded_with_every_run(tmp_path):
    experiment = load(tmp_path, GOOD)
    changes = experiment.network.schedule
    assert [(c.at_s, c.link) for c in changes] == [(2.0, "up"), (3.0, "down"), (4.5, "down")]
    assert changes[0].settings == {"delay_s": pytest.approx(0.04)}
    assert experiment.as_record()["schedule"][1] == {"at_s": 3.0, "link": "down", "down": True}
    assert Change.from_dict(changes[2].to_dict()) == changes[2]


def test_down_drops_everything_and_up_gives_back_the_loss_it_had():
    base = {"up": LinkShape(3e6, 0.01, 0.05, loss_burst=2.0), "down": LinkShape(3e6, 0.01, 0.05)}
    steps = shapes_over_time(base, [Change(1.0, "up", {"down": True}),
                                    Change(2.0, "up", {"down": False, "delay_s": 0.1})])
    (_, _, dead), (_, _, alive) = steps
    assert dead.loss == 1.0 and dead.loss_burst is None
    assert alive.loss == 0.05 and alive.delay_s == 0.1


@pytest.mark.parametrize("schedule, key, reason", [
    (GOOD.replace('at = "3s"', 'at = "1s"'), "network.schedule", "list the changes in time order"),
    (GOOD.replace('link = "up"', 'link = "sideways"'), "network.schedule[0].link",
     "has no shaped link 'sideways'"),
    (GOOD.replace('at = "4.5s"', 'at = "90s"'), "network.schedule[2].at",
     "past the run's limit"),
    (GOOD.replace('delay = "40ms"', 'colour = "red"'), "network.schedule[0].colour",
     "unknown key"),
    (GOOD.replace('delay = "40ms"', 'delay = "-4ms"'), "network.schedule[0].delay",
     "delay must be"),
    (GOOD.replace('delay = "40ms"', 'rate = "fast"'), "network.schedule[0].rate",
     "cannot read"),
    (GOOD.replace('down = true', 'down = "yes"'), "network.schedule[1].down", "down"),
    (GOOD.replace('down = true', 'delay = "1ms"'), "network.schedule",
     "brought up at 4.5 s but was not down"),
    (GOOD.replace('delay = "40ms"', 'loss = 0.9\nloss_burst = 1.0'), "network.schedule",
     "raise the burst"),
    (GOOD.replace('link = "up"\ndelay = "40ms"', 'link = "up"'), "network.schedule[0]",
     "at least one setting"),
])
def test_bad_schedules_are_refused_with_file_key_and_reason(tmp_path, schedule, key, reason):
    with pytest.raises(spec.SpecError) as refused:
        load(tmp_path, schedule)
    message = str(refused.value)
    assert "trial.toml" in message and key in message and reason in message, message


def test_changes_are_refused_in_the_shapes_module_too():
    with pytest.raises(ParameterError, match="no shaped link 'up'"):
        shapes_over_time({"down": LinkShape()}, [Change(0.0, "up", {"loss": 0.1})])
