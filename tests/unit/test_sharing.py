"""The workers of a round share its runs through claims on the filesystem: each run runs once,
and a worker done with its own batch takes the others' runs from their end."""
from __future__ import annotations

import multiprocessing
import time

from experiments.inkernel import sharing


def order(run_id: str, kind: str = "path", seconds: float = 0.0) -> dict:
    return {"id": run_id, "topology": {"kind": kind}, "seconds": seconds}


def test_a_batch_runs_its_structures_one_after_another_in_its_own_order():
    runs = [order("a1"), order("b1", "dumbbell"), order("a2"), order("b2", "dumbbell")]
    groups = sharing.execution_order(runs)
    assert [[r["id"] for r in g] for g in groups] == [["b1", "b2"], ["a1", "a2"]]


def test_a_taker_starts_at_the_end_of_each_other_batch():
    other = [order("a1"), order("b1", "dumbbell"), order("a2"), order("b2", "dumbbell")]
    third = [order("c1"), order("c2")]
    groups = sharing.steal_order([other, third])
    assert [[r["id"] for r in g] for g in groups] == [["a2", "a1"], ["b2", "b1"], ["c2", "c1"]]


def test_without_a_claims_folder_a_batch_runs_its_own_runs_only(tmp_path):
    batch = {"runs": [order("a1")], "stealable": [[order("x1")]]}
    assert [[r["id"] for r in g] for g in sharing.plan(batch)] == [["a1"]]
    assert sharing.Claims(None).claim("a1") and sharing.Claims(None).claim("a1")


def test_a_taker_runs_the_others_runs_on_the_topology_it_has_built_first():
    """Each structure is built once: the others' runs of a structure follow the batch's own,
    and the structures it has none of come last, each from both others at once."""
    own = [order("a1"), order("b1", "dumbbell")]
    others = [[order("x1"), order("y1", "dual"), order("x2")],
              [order("z1", "dual"), order("w1", "dumbbell")]]
    groups = sharing.plan({"runs": own, "stealable": others, "claims_dir": "claims"})
    assert [[r["id"] for r in g] for g in groups] == [
        ["b1", "w1"], ["a1", "x2", "x1"], ["y1", "z1"]]


def test_a_run_is_claimed_once(tmp_path):
    first, second = sharing.Claims(str(tmp_path)), sharing.Claims(str(tmp_path))
    assert first.claim("r1")
    assert not second.claim("r1") and not first.claim("r1")
    assert second.claim("r2")


def worker(batch: dict, log: str) -> None:
    """A stand-in for a kernel's batch: claims as kernel_batch does, `runs` by sleeping."""
    claims = sharing.Claims(batch["claims_dir"])
    with open(log, "w") as out:
        for runs in sharing.plan(batch):
            for run in sharing.claimed(runs, claims):
                time.sleep(run["seconds"])
                out.write(run["id"] + "\n")
                out.flush()


def test_two_workers_run_every_run_once_and_the_early_one_takes_the_rest(tmp_path):
    """Worker 1's batch is one short run, worker 2's eight long ones: worker 1 takes some of
    them from the end, and between them every run ran exactly once."""
    short = [order("s1", seconds=0.01)]
    long = [order(f"l{i}", seconds=0.25) for i in range(8)]
    claims = tmp_path / "claims"
    claims.mkdir()
    batches = [{"runs": short, "stealable": [long], "claims_dir": str(claims)},
               {"runs": long, "stealable": [short], "claims_dir": str(claims)}]
    logs = [tmp_path / f"worker{i}.log" for i in (1, 2)]
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=worker, args=(b, str(log)))
               for b, log in zip(batches, logs, strict=True)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=30)
        assert w.exitcode == 0
    ran = [log.read_text().split() for log in logs]
    assert sorted(ran[0] + ran[1]) == sorted(r["id"] for r in short + long)
    assert ran[0][0] == "s1"
    taken = ran[0][1:]
    assert taken, f"worker 1 took none of worker 2's runs: {ran}"
    # taken from the end: the last runs of worker 2's batch, last first
    assert taken == [f"l{i}" for i in range(7, 7 - len(taken), -1)], ran
    assert sorted(p.name for p in claims.iterdir()) == sorted(r["id"] for r in short + long)
