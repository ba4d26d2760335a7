from __future__ import annotations

import json
from pathlib import Path

import pytest

from topology.kernel import open_backend

HERE = Path(__file__).parent


@pytest.fixture(scope="session")
def inside(tmp_path_factory) -> dict:
    """One boot of the pinned kernel that exercises path, dualpath and dumbbell; the tests
    below judge what it observed."""
    out = tmp_path_factory.mktemp("inside") / "observed.json"
    result = open_backend("uml").run(
        ["/usr/bin/python3", str(HERE / "inside_topologies.py"), str(out)], timeout_s=900)
    assert result.returncode == 0, result.stderr
    observed = json.loads(out.read_text())
    observed["_stderr"] = result.stderr
    return observed
