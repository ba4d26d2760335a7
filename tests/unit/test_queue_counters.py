"""The router's drops, read from tc's statistics: the queue's drops apart from the losses netem
draws (netem counts its child tree's drops as its own), per run and direction, and the
experiment's premise that its queues never overflow, checked."""
import pytest

from experiments import spec
from experiments.onhost import tables
from topology.net import shaping

# `tc -s -j qdisc show dev router-eth0` after a run with 1% loss and a queue that overflowed
TREE = [
    {"kind": "netem", "handle": "1:", "root": True, "packets": 900, "drops": 17},
    {"kind": "htb", "handle": "10:", "parent": "1:1", "packets": 890, "drops": 12},
    {"kind": "pfifo", "handle": "20:", "parent": "10:1", "packets": 878, "drops": 12,
     "overlimits": 0},
]


def test_losses_are_netem_s_drops_less_the_queue_s():
    assert shaping.counters(TREE) == {"packets": 878, "queue_drops": 12,
                                      "queue_overlimits": 0, "loss_drops": 5}


def test_an_unshaped_rate_has_only_netem():
    assert shaping.counters([{"kind": "netem", "handle": "1:", "packets": 40, "drops": 3}]) == \
        {"packets": 40, "queue_drops": 0, "queue_overlimits": 0, "loss_drops": 3}


GOOD = """
name = "trial"
[network]
queue = "500KB"
{premise}
[[network.paths]]
name = "lan"
rate = "3Mbit"
delay = "1ms"
[matrix]
loss = [0.0]
file_sizes = ["10K"]
files = 3
variants = ["tcp"]
"""


def load(tmp_path, premise: str):
    path = tmp_path / "trial.toml"
    path.write_text(GOOD.format(premise=premise))
    return spec.load(str(path))


def test_the_premise_is_a_recorded_yes_or_no(tmp_path):
    assert load(tmp_path, "queue_never_drops = true").network.queue_never_drops
    assert not load(tmp_path, "").network.queue_never_drops
    assert load(tmp_path, "").as_record()["queue_never_drops"] is False
    with pytest.raises(spec.SpecError, match="network.queue_never_drops: must be bool"):
        load(tmp_path, 'queue_never_drops = "yes"')


def test_drops_by_direction_and_a_broken_premise_flags_the_run(tmp_path):
    experiment = load(tmp_path, "queue_never_drops = true")
    queues = {"down": {"queue_drops": 12, "loss_drops": 5},
              "up": {"queue_drops": 1, "loss_drops": 2}}
    row = {"flagged": False, "notes": "", **experiment.network.queue_row(queues, "down")}
    assert (row["queue_drops_data"], row["queue_drops_other"], row["loss_drops_data"],
            row["loss_drops_other"]) == (12, 1, 5, 2)
    tables.premise_broken(experiment, row)
    assert row["flagged"] and "dropped 13 packets (12 in the data direction)" in row["notes"]

    clean = {"flagged": False, "notes": "",
             **experiment.network.queue_row({"down": {"loss_drops": 9}}, "down")}
    tables.premise_broken(experiment, clean)
    assert not clean["flagged"]          # losses are the experiment's own, not overflow
    old = experiment.network.queue_row(None, "down")
    assert set(old.values()) == {None}   # runs from before drops were counted
