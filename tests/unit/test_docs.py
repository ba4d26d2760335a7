"""The docs are a map of the tree, and this checks the map against the tree as it is now.

(a) Every relative Markdown link `[text](path)` and every backticked repository path that reads
    as a link to a file (`experiments/stacks.py`, `../analysis/README.md`) in a *.md
    file resolves to a file or folder inside the repository. Links to http(s) and mail are not
    checked, nor anchors (`#section`), nor what fenced code blocks hold. A path is tried from the
    Markdown file's folder, then from the repository's root; one that leaves the repository
    (`../shared/...`) fails.
(b) Every source file (*.py, *.c, *.h, *.sh, *.lua; not __init__.py) directly in a folder that
    has a README.md is named in that README. Folders are read from the tree at test time, so a
    module moved or added is reported against the README to update.

Each check is shown to catch a planted fault on a small tree in a temporary folder."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

SOURCE_SUFFIXES = {".py", ".c", ".h", ".sh", ".lua"}
EXEMPT_SOURCES = {"__init__.py"}
# Folders that are not part of the tree the docs describe: build products, environments,
# result folders, caches.
SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", ".pytest_cache",
             ".ruff_cache", "results", "build", ".work"}
# The endings of a backticked path that names a file of the repository.
FILE_SUFFIXES = SOURCE_SUFFIXES | {".md", ".toml", ".yml", ".yaml", ".cfg", ".png", ".txt",
                                   ".mk", ".service", ".conf", ".ini"}
# The first folders of paths that a run writes, or of paths in another source tree (the Linux
# kernel's `arch/um/...`), not files of the repository.
GENERATED_ROOTS = {"results", ".work", "runs", "pcaps", ".venv", "build", "figures"}
OTHER_TREES = {"arch"}

LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
CODE_SPAN = re.compile(r"`([^`\n]+)`")
FENCE = re.compile(r"^\s*(```|~~~)")


def tracked_files(root: Path) -> list[Path]:
    """The files of the tree under `root`, untracked ones included, ignored ones not."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"],
                             cwd=root, capture_output=True, check=True).stdout
        paths = [root / p for p in out.decode().split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        paths = [p for p in root.rglob("*") if p.is_file()]
    return [p for p in paths
            if p.is_file() and not SKIP_DIRS.intersection(p.relative_to(root).parts[:-1])]


def prose(text: str) -> list[tuple[int, str]]:
    """The lines of a Markdown text outside fenced code blocks, with their numbers."""
    lines, fenced = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append((number, line))
    return lines


def looks_like_file_path(span: str) -> bool:
    if any(c in span for c in " <>*{}$=,;|()[]'\"") or "/" not in span:
        return False
    if span.startswith(("/", "~", "http:", "https:")) or "://" in span:
        return False
    parts = span.split("/")
    if parts[0] in GENERATED_ROOTS | OTHER_TREES:
        return False
    return Path(parts[-1]).suffix in FILE_SUFFIXES      # a folder (`build-fuzz/`) is not checked


def resolves(root: Path, md: Path, target: str) -> bool:
    target = target.split("#", 1)[0].split("?", 1)[0]
    if not target:
        return True                      # an anchor in the same page
    for base in (md.parent, root):
        candidate = (base / target).resolve()
        if candidate.is_relative_to(root.resolve()) and candidate.exists():
            return True
    return False


def markdown_files(root: Path) -> list[Path]:
    return sorted(p for p in tracked_files(root) if p.suffix == ".md")


def broken_links(root: Path, only: Path | None = None) -> list[str]:
    """`file:line: target` for every link or backticked path that does not resolve."""
    found = []
    for md in [only] if only else markdown_files(root):
        rel = md.relative_to(root)
        for number, line in prose(md.read_text(errors="replace")):
            for target in LINK.findall(line):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
                    continue                 # http:, https:, mailto:
                if not resolves(root, md, target):
                    found.append(f"{rel}:{number}: link ({target})")
            for span in CODE_SPAN.findall(LINK.sub("", line)):
                span = span.strip()
                if looks_like_file_path(span) and not resolves(root, md, span):
                    found.append(f"{rel}:{number}: path `{span}`")
    return found


def unlisted_sources(root: Path) -> dict[str, list[str]]:
    """For each folder with a README.md, the source files directly in it that it never names."""
    files = tracked_files(root)
    folders = sorted({p.parent for p in files if p.name == "README.md"})
    missing = {}
    for folder in folders:
        text = (folder / "README.md").read_text(errors="replace")
        absent = sorted(p.name for p in files
                        if p.parent == folder and p.suffix in SOURCE_SUFFIXES
                        and p.name not in EXEMPT_SOURCES
                        and not re.search(r"(?<![\w.-])" + re.escape(p.name) + r"(?![\w-])",
                                          text))
        key = folder.relative_to(root).as_posix() if folder != root else "."
        missing[key] = absent
    return missing


# --- the repository as it is ------------------------------------------------------------------

@pytest.mark.parametrize("md", [p.relative_to(REPO).as_posix() for p in markdown_files(REPO)])
def test_links_resolve_inside_the_repository(md):
    broken = broken_links(REPO, REPO / md)
    assert not broken, "links or paths that lead nowhere in the repository:\n" + \
        "\n".join(broken)


README_FOLDERS = sorted(unlisted_sources(REPO))


@pytest.mark.parametrize("folder", README_FOLDERS)
def test_readme_names_every_source_file(folder):
    absent = unlisted_sources(REPO)[folder]
    assert not absent, f"{folder}/README.md does not name {absent}: add them to it"


# --- each check catches a planted fault -------------------------------------------------------

def plant(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


GOOD_TREE = {
    "README.md": "See [tools](tools/README.md), `tools/run.py` and [the web](https://example.org).\n",
    "tools/README.md": "| `run.py` | runs |\n| `lib.c` | the library |\n"
                       "Back to [the top](../README.md#anchor), `../README.md`.\n"
                       "```\n[not checked](nowhere.md) `also/not.py`\n```\n"
                       "Written by a run: `results/x/runs.csv`.\n",
    "tools/run.py": "",
    "tools/lib.c": "",
    "tools/__init__.py": "",
}


def test_a_good_tree_passes(tmp_path):
    root = plant(tmp_path, GOOD_TREE)
    assert broken_links(root) == []
    assert unlisted_sources(root) == {".": [], "tools": []}


@pytest.mark.parametrize("line, fault", [
    ("[gone](tools/gone.md)", "link (tools/gone.md)"),
    ("[outside](../shared/EXPERIMENTS.md)", "link (../shared/EXPERIMENTS.md)"),
    ("the setups are in `../shared/EXPERIMENTS.md`", "path `../shared/EXPERIMENTS.md`"),
    ("moved: `tools/old.py`", "path `tools/old.py`"),
])
def test_a_broken_link_is_caught(tmp_path, line, fault):
    root = plant(tmp_path, {**GOOD_TREE, "README.md": GOOD_TREE["README.md"] + line + "\n"})
    assert broken_links(root) == [f"README.md:2: {fault}"]


def test_an_unnamed_source_file_is_caught(tmp_path):
    root = plant(tmp_path, {**GOOD_TREE, "tools/new.lua": "", "tools/lib.h": ""})
    assert unlisted_sources(root)["tools"] == ["lib.h", "new.lua"]


def test_a_name_inside_a_longer_name_does_not_count(tmp_path):
    root = plant(tmp_path, {**GOOD_TREE, "tools/un.py": "",
                            "tools/README.md": GOOD_TREE["tools/README.md"] + "`run.pyc`\n"})
    assert unlisted_sources(root)["tools"] == ["un.py"]
