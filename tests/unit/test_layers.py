"""The tree reads one way: topology (kernels, networks, shaping, fidelity) imports nothing of
the testbed above it; experiments (harness, workloads, measurements) uses topology; analysis
reads result files and imports no workload; only the `testbed` command sees all and hands each
workload's report to analysis. A workload's report (experiments/workloads/<name>/report/) is
analysis-layer code kept in the workload's package: it may use analysis, and nothing in the
experiments layer imports it. No two modules import each other in a circle, and no two share a
name for different jobs. Host-side analysis never loads Mininet."""
from __future__ import annotations

import ast
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

from tests.unit.circles import circles

REPO = Path(__file__).resolve().parents[2]
LAYERS = ("topology", "experiments", "analysis", "testbed")
MAY_IMPORT = {"topology": {"topology"}, "experiments": {"topology", "experiments"},
              "analysis": {"topology", "experiments", "analysis"},
              "testbed": set(LAYERS)}
# The same job wherever they stand: a package's marker, a layer's commands of `testbed`, what
# every member of a package shares (every kernel backend, topology, workload), and the parts
# of every workload's package (its definition, its pcap reading, its report).
SHARED_NAMES = {"__init__.py", "__main__.py", "cli.py", "base.py", "workload.py", "measure.py"}
WORKLOADS = ("experiments", "workloads")


def modules(layer: str, root: Path | None = None) -> list[Path]:
    return sorted(((root or REPO) / layer).rglob("*.py"))


def module_name(path: Path, root: Path | None = None) -> str:
    parts = list(path.relative_to(root or REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(name: str) -> str:
    """A module's layer by its dotted name: a workload's report belongs to analysis."""
    parts = name.split(".")
    if tuple(parts[:2]) == WORKLOADS and len(parts) > 3 and parts[3] == "report":
        return "analysis"
    return parts[0]


def runtime_imports(path: Path, root: Path | None = None) -> set[str]:
    """The project modules `path` imports when it runs (anywhere in it, functions included;
    not the names imported only for type checking), as absolute dotted names."""
    root = root or REPO
    tree = ast.parse(path.read_text())
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                   and ast.unparse(block.test).endswith("TYPE_CHECKING")
                   for n in ast.walk(block)}
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                above = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(above + ([node.module] if node.module else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {each for each in found if each.split(".")[0] in LAYERS}


def known_modules(root: Path | None = None) -> dict[str, Path]:
    return {module_name(p, root): p for layer in LAYERS for p in modules(layer, root)}


def import_graph(root: Path | None = None) -> dict[str, set[str]]:
    """Module -> the project modules it imports (a name that is an attribute, not a module,
    counts as its module; importing one's own package's marker is no edge)."""
    known = known_modules(root)
    graph = {}
    for name, path in known.items():
        edges = set()
        for target in runtime_imports(path, root):
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name and not name.startswith(target + "."):
                edges.add(target)
        graph[name] = edges
    return graph


@pytest.mark.parametrize("layer", LAYERS)
def test_imports_run_one_way(layer):
    graph = import_graph()
    wrong = {name: sorted(target for target in targets
                          if layer_of(target) not in MAY_IMPORT[layer_of(name)])
             for name, targets in graph.items() if layer_of(name) == layer}
    assert {k: v for k, v in wrong.items() if v} == {}


def test_analysis_imports_no_workload():
    graph = import_graph()
    wrong = {name: sorted(t for t in targets if t.startswith("experiments.workloads"))
             for name, targets in graph.items() if name.split(".")[0] == "analysis"}
    assert {k: v for k, v in wrong.items() if v} == {}


def test_no_two_modules_import_each_other_in_a_circle():
    assert circles(import_graph()) == []


def test_the_checkers_see_a_wrong_import_and_a_circle(tmp_path):
    (tmp_path / "topology" / "net").mkdir(parents=True)
    (tmp_path / "topology" / "__init__.py").write_text("")
    (tmp_path / "topology" / "net" / "__init__.py").write_text("")
    (tmp_path / "topology" / "params.py").write_text("def f():\n    from .net import probe\n")
    probe = tmp_path / "topology" / "net" / "probe.py"
    probe.write_text("from experiments.spec import load\nfrom ..params import LinkShape\n"
                     "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                     "    from analysis import results\n")
    assert runtime_imports(probe, tmp_path) == {"experiments.spec", "experiments.spec.load",
                                                "topology.params", "topology.params.LinkShape"}
    assert circles(import_graph(tmp_path)) == [["topology.net.probe", "topology.params"]]
    assert layer_of("experiments.workloads.ftp_mget.report.figures") == "analysis"
    assert layer_of("experiments.workloads.ftp_mget.measure") == "experiments"


def test_module_names_say_what_they_are():
    by_name = defaultdict(list)
    for layer in LAYERS:
        for path in modules(layer):
            by_name[path.name].append(str(path.relative_to(REPO)))
    repeated = {name: places for name, places in by_name.items()
                if len(places) > 1 and name not in SHARED_NAMES}
    assert repeated == {}


def test_host_side_analysis_does_not_load_mininet():
    probe = ("import sys; import testbed.cli, analysis.report, "
             "experiments.workloads.ftp_mget.report, experiments.workloads.bulk_flows.report, "
             "experiments.onhost.tables, experiments.onhost.coordinator; "
             "loaded = sorted(m for m in sys.modules if m.split('.')[0] == 'mininet'); "
             "print(loaded); sys.exit(1 if loaded else 0)")
    proc = subprocess.run(["/usr/bin/python3", "-c", probe], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
