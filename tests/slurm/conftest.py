from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.slurm.cluster import OneNodeCluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[OneNodeCluster]:
    """A one-node Slurm of Debian's daemons in a folder of its own, stopped after the module.
    Nothing may be left queued or running when a test ends."""
    one = OneNodeCluster(tmp_path_factory.mktemp("slurm")).start()
    try:
        yield one
        assert one.squeue() == [], f"jobs left in the queue: {one.squeue()}"
    finally:
        one.stop()
