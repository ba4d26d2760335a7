"""How the workers of one round share its runs: each kernel runs its own batch, then takes the
runs the others have not reached yet, so no core idles while runs are left.

A run is claimed before it starts, by creating a directory named after it in the round's claims
folder on the host's filesystem: mkdir is atomic there, also through User-Mode Linux's hostfs,
which passes it to the host, so of two kernels claiming one run, one gets it. A batch runs its
own runs in `execution_order`; a worker done with its own takes the others' from their end
(`steal_order`), so owner and taker meet in the middle and each run runs once. It takes those of
the structure it has built first (`plan`).

The coordinator writes in each batch the round's `claims_dir` and as `stealable` the other
batches (a list of lists of runs); a batch without them (Slurm tasks, older batch files) runs
its own runs and nothing else."""
from __future__ import annotations

import json
import os
from collections.abc import Iterator
from itertools import groupby
from pathlib import Path
from typing import Any

Run = dict[str, Any]


def structure(run: Run) -> str:
    """Runs of one structure (topology, pairs, MTU) share one build of it."""
    return json.dumps(run["topology"], sort_keys=True)


def execution_order(runs: list[Run]) -> list[list[Run]]:
    """A batch's runs as it runs them: grouped by structure, each group in the batch's order
    (longest first)."""
    return [list(group) for _, group in groupby(sorted(runs, key=structure), key=structure)]


def steal_order(batches: list[list[Run]]) -> list[list[Run]]:
    """The runs of other batches as a worker takes them: each batch's from its end, grouped by
    structure, so the taker builds each structure once."""
    groups = []
    for batch in batches:
        backwards = [run for group in execution_order(batch) for run in group][::-1]
        groups += [list(group) for _, group in groupby(backwards, key=structure)]
    return groups


class Claims:
    """The round's claims folder; without one every run is this batch's to run."""

    def __init__(self, folder: str | None) -> None:
        self.folder = Path(folder) if folder else None

    def claim(self, run_id: str) -> bool:
        if self.folder is None:
            return True
        try:
            os.mkdir(self.folder / run_id)
        except FileExistsError:
            return False
        return True


def claimed(runs: list[Run], claims: Claims) -> Iterator[Run]:
    """The runs of `runs` this worker claimed, each claimed just before it is handed out."""
    return (run for run in runs if claims.claim(run["id"]))


def plan(batch: dict[str, Any]) -> list[list[Run]]:
    """A batch's groups of runs, one topology build each: its own runs of a structure, then
    the others' of that structure (taken on the topology already built: a build costs seconds);
    last the others' runs of structures it has none of."""
    own = execution_order(batch["runs"])
    if not batch.get("claims_dir"):
        return own
    taken: dict[str, list[Run]] = {}
    for group in steal_order(batch.get("stealable", [])):
        taken.setdefault(structure(group[0]), []).extend(group)
    groups = [group + taken.pop(structure(group[0]), []) for group in own]
    return groups + list(taken.values())
