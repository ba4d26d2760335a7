"""The ablation's stacks (experiments/stacks.py): every way a stack can differ from another
is in one mechanism, so an ablation leaves nothing of the era stack out; each step is today's
stack with its one mechanism changed and nothing else, in what the run applies (sysctls, the
routes' metrics, the programs' buffers and options); an experiment file's "TODAY..ERA" is
those steps."""
from __future__ import annotations

import dataclasses

import pytest

from experiments import spec
from experiments.stacks import (
    KERNEL_SWITCHES,
    MECHANISMS,
    NOT_MECHANISMS,
    STACKS,
    Stack,
    ablation_steps,
    expand_stacks,
    mechanisms_between,
)
from tests.unit.test_spec import GOOD, write


def applied(stack: Stack) -> dict[str, object]:
    """What a run of the stack sets, key by key (a route without metrics has Linux's)."""
    route = {"initcwnd": 10, "rto_min_ms": 200, **stack.route_metrics()}
    return {**stack.sysctls(), **{f"route.{k}": v for k, v in route.items()},
            "tcp.buffers": stack.tcp, "sctp.buffers": stack.sctp,
            "tcp.initial_rto_ms": stack.tcp_initial_rto_ms,
            "ftpd.reply_on_close": stack.ftpd_reply_on_close, "ftpc.active": stack.ftp_active}


def test_every_field_and_switch_is_in_exactly_one_mechanism():
    fields = [f.name for f in dataclasses.fields(Stack) if f.name not in NOT_MECHANISMS]
    owned = [f for m in MECHANISMS for f in m.fields]
    assert sorted(owned) == sorted(fields)
    assert sorted(k for m in MECHANISMS for k in m.switches) == sorted(KERNEL_SWITCHES)


def test_each_step_is_today_with_one_mechanism_changed():
    today, era = STACKS["linux"], STACKS["freebsd-4.6"]
    steps = ablation_steps("linux", "freebsd-4.6")
    between = mechanisms_between(today, era)
    assert steps[0] == "linux" and steps[-1] == "freebsd-4.6"
    assert len(steps) == len(between) + 2 >= 10
    base, whole = applied(today), applied(era)
    changed_anywhere: set[str] = set()
    for name, mechanism in zip(steps[1:-1], between, strict=True):
        step = STACKS[name]
        assert step.ablation == ("linux", "freebsd-4.6", mechanism.name)
        assert step.record()["ablation"]["mechanism"] == mechanism.name
        mine = applied(step)
        changed = {k for k in set(mine) | set(base) if mine.get(k) != base.get(k)}
        assert changed, name                           # the mechanism changes something
        assert all(mine[k] == whole.get(k) for k in changed), name   # to the era's value
        assert not changed & changed_anywhere, name   # and nothing another step changes
        changed_anywhere |= changed
    # together the steps change everything in which the era stack differs from today's
    assert changed_anywhere == {k for k in set(base) | set(whole) if base.get(k) != whole.get(k)}


def test_the_steps_of_an_ablation_in_an_experiment_file(tmp_path):
    assert expand_stacks(["published", "linux..freebsd-4.6", "linux"]) == \
        ["published", *ablation_steps("linux", "freebsd-4.6")]
    path = write(tmp_path, GOOD.replace('tcp_profiles = ["tcp-newreno", "tcp-linux"]',
                                        'stacks = ["linux..freebsd-4.6"]'))
    experiment = spec.load(str(path))
    assert sorted({p.stack for p in experiment.points()}) == \
        sorted(ablation_steps("linux", "freebsd-4.6"))


@pytest.mark.parametrize("stacks, reason", [
    ('["linux..freebsd-9"]', "unknown stack profile 'linux..freebsd-9'"),
    ('"linux"', "must be list"),
    ('["linux", 4]', "must be a list of stack names"),
])
def test_a_wrong_ablation_is_refused_with_the_reason(tmp_path, stacks, reason):
    path = write(tmp_path, GOOD.replace('tcp_profiles = ["tcp-newreno", "tcp-linux"]',
                                        f"stacks = {stacks}"))
    with pytest.raises(spec.SpecError, match="matrix.stacks") as error:
        spec.load(str(path))
    assert reason in str(error.value)
