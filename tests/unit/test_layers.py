"""The tree reads one way: topology (kernels, networks, shaping, fidelity) imports nothing of
the testbed above it; experiments (harness, workloads, measurements) uses topology; analysis
reads result files with the help of the layers below; only the `testbed` command sees all.
Host-side analysis never loads Mininet, and no two modules share a name for different jobs."""
from __future__ import annotations

import ast
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LAYERS = ("topology", "experiments", "analysis", "testbed")
MAY_IMPORT = {"topology": {"topology"}, "experiments": {"topology", "experiments"},
              "analysis": {"topology", "experiments", "analysis"},
              "testbed": set(LAYERS)}
# The same job wherever they stand: a package's marker, a layer's commands of `testbed`, what
# every member of a package shares (every kernel backend, topology, workload).
SHARED_NAMES = {"__init__.py", "__main__.py", "cli.py", "base.py"}


def modules(layer: str) -> list[Path]:
    return sorted((REPO / layer).rglob("*.py"))


def imported_layers(path: Path) -> set[str]:
    """The project's layers a module imports, absolute or relative."""
    tree = ast.parse(path.read_text())
    package = path.relative_to(REPO).parts[:-1]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                found.add(package[0] if node.level <= len(package) else "")
            elif node.module:
                found.add(node.module.split(".")[0])
    return found & set(LAYERS)


@pytest.mark.parametrize("layer", LAYERS)
def test_imports_run_one_way(layer):
    wrong = {str(p.relative_to(REPO)): sorted(imported_layers(p) - MAY_IMPORT[layer])
             for p in modules(layer)}
    assert {k: v for k, v in wrong.items() if v} == {}


def test_the_checker_sees_a_wrong_import(tmp_path):
    probe = tmp_path / "topology" / "net" / "probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text("from experiments.harness import spec\nfrom ..params import LinkShape\n")
    tree_root = REPO
    try:
        globals()["REPO"] = tmp_path
        assert imported_layers(probe) == {"experiments", "topology"}
    finally:
        globals()["REPO"] = tree_root


def test_module_names_say_what_they_are():
    by_name = defaultdict(list)
    for layer in LAYERS:
        for path in modules(layer):
            by_name[path.name].append(str(path.relative_to(REPO)))
    repeated = {name: places for name, places in by_name.items()
                if len(places) > 1 and name not in SHARED_NAMES}
    assert repeated == {}


def test_host_side_analysis_does_not_load_mininet():
    probe = ("import sys; import testbed.cli, analysis.report, analysis.ftp_mget, "
             "analysis.bulk_flows, experiments.harness.tables, experiments.harness.coordinator; "
             "loaded = sorted(m for m in sys.modules if m.split('.')[0] == 'mininet'); "
             "print(loaded); sys.exit(1 if loaded else 0)")
    proc = subprocess.run(["/usr/bin/python3", "-c", probe], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
