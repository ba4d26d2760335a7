"""What `testbed reproduce --quick` runs (experiments/onhost/claims_plan.py): for every
measurable claim that compares points, both sides' points, paired as the scorecard pairs
them: a TCP point, whose SCTP-only cells are empty, with the SCTP points it is judged beside."""
from __future__ import annotations

from pathlib import Path

import pytest

from experiments import claims as claims_data
from experiments.onhost.claims_plan import plan


@pytest.fixture(scope="module")
def jobs(tmp_path_factory) -> dict:
    every = claims_data.load_all()
    return {job.claims_of: job for job in plan(every, tmp_path_factory.mktemp("quick"), True)}


@pytest.mark.parametrize("experiment", ["multistream", "fcs"])
def test_every_compared_claim_gets_points_on_both_its_sides(jobs, experiment):
    job = jobs[experiment]
    chosen = [dict(p.columns) for p in job.experiment.points() if p.key in job.points]
    for claim in claims_data.load_all():
        if claim.experiment != experiment or not claim.measurable or not claim.compare \
                or claim.kind == "premise":
            continue
        sides = {claim.side(c) for c in chosen if claim.selects(c)}
        assert sides == {"a", "b"}, claim.id


def test_a_quick_copy_is_written_beside_its_results(jobs):
    job = jobs["multistream"]
    assert Path(job.experiment.file).name == "multistream-quick.toml"
    assert job.folder.name == "multistream-quick" and job.points


def test_a_claim_of_one_side_gets_a_point_on_every_sctp_stack(jobs):
    job = jobs["fairness-stacks"]
    chosen = [dict(p.columns) for p in job.experiment.points() if p.key in job.points]
    for claim in claims_data.load_all():
        if claim.experiment != "fairness-stacks" or not claim.measurable or claim.compare:
            continue
        stacks = {c.get("sctp_stack") for c in chosen if claim.selects(c)}
        assert stacks == {"kernel", "usrsctp"}, claim.id
