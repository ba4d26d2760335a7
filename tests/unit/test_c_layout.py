"""The C programs of ftp-impl/ by folder: common/ and one folder per program. A program's file
includes headers of its own folder and of common/ only, common/ only its own; no two modules
(foo.c with foo.h) include each other in a circle; no file calls back into a program's main
file. Read from the sources as text: no build, no kernel."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.unit.circles import circles

FTP_IMPL = Path(__file__).resolve().parents[2] / "ftp-impl"
PROGRAMS = ("ftpd", "ftpc", "httpd", "httpc", "bulkflow", "runcapture")
FOLDERS = ("common", *PROGRAMS)
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)
MAIN = re.compile(r"^int\s+main\s*\(", re.MULTILINE)
# a function or variable defined at file scope, not static: `type name(...) {` or `type name;`
DEFINED = re.compile(r"^(?!static\b)[A-Za-z_][\w \t*]*?\b([A-Za-z_]\w*)\s*"
                     r"(?:\([^;{]*\)\s*\{|(?:=[^;]*)?;)", re.MULTILINE)
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.DOTALL)
STRING = re.compile(r'"(?:\\.|[^"\\\n])*"')


def sources(root: Path) -> list[Path]:
    return sorted(p for folder in FOLDERS for p in (root / folder).glob("*.[ch]"))


def code(path: Path) -> str:
    return STRING.sub('""', COMMENT.sub(" ", path.read_text()))


def includes(path: Path) -> list[str]:
    return INCLUDE.findall(path.read_text())


def folder_of(root: Path, header: str, beside: Path) -> str | None:
    """The folder a quoted include resolves to: beside the file first, then common/ (-Icommon)."""
    for where in (beside.parent, root / "common"):
        if (where / header).is_file():
            return (where / header).resolve().parent.name
    return None


def layer_violations(root: Path) -> list[str]:
    bad = []
    for path in sources(root):
        mine = path.parent.name
        allowed = {"common"} if mine == "common" else {mine, "common"}
        for header in includes(path):
            found = folder_of(root, header, path)
            if "/" in header or found not in allowed:
                bad.append(f"{path.relative_to(root)} includes {header!r} ({found or 'not found'})")
    return bad


def module_graph(root: Path) -> dict[str, set[str]]:
    """folder/foo -> the modules whose headers foo.c or foo.h includes."""
    graph: dict[str, set[str]] = {}
    for path in sources(root):
        name = f"{path.parent.name}/{path.stem}"
        edges = graph.setdefault(name, set())
        for header in includes(path):
            found = folder_of(root, header, path)
            target = f"{found}/{Path(header).stem}"
            if found is not None and target != name:
                edges.add(target)
    return graph


def defined_names(path: Path) -> set[str]:
    return {m.group(1) for m in DEFINED.finditer(code(path)) if m.group(1) != "main"}


def main_file_callbacks(root: Path) -> list[str]:
    """Names defined in a program's main file (the one with main()) that another file uses."""
    bad = []
    for folder in PROGRAMS:
        files = sorted((root / folder).glob("*.c"))
        mains = [p for p in files if MAIN.search(p.read_text())]
        for main in mains:
            names = defined_names(main)
            for other in (p for p in sources(root) if p != main):
                used = {n for n in names if re.search(rf"\b{re.escape(n)}\b", code(other))}
                bad += [f"{other.relative_to(root)} uses {n} of {main.relative_to(root)}"
                        for n in sorted(used)]
    return bad


def test_every_program_has_its_folder_and_one_main():
    assert not (FTP_IMPL / "src").exists()
    for folder in PROGRAMS:
        mains = [p.name for p in (FTP_IMPL / folder).glob("*.c") if MAIN.search(p.read_text())]
        assert mains == [f"{folder}.c"], (folder, mains)
    assert not [p for p in sources(FTP_IMPL) if p.parent.name == "common" and
                MAIN.search(p.read_text())]


def test_programs_include_only_their_folder_and_common():
    assert len(sources(FTP_IMPL)) > 90
    assert layer_violations(FTP_IMPL) == []


def test_no_include_cycle_between_modules():
    graph = module_graph(FTP_IMPL)
    assert "ftpc/xfer" in graph and "common/sysutil" in graph["ftpc/xfer"]
    assert circles(graph) == []


def test_no_file_calls_back_into_a_main_file():
    assert main_file_callbacks(FTP_IMPL) == []
    fail_helpers = {"client_fail": "ftpc", "client_skip": "ftpc", "bulk_fail": "bulkflow"}
    for name, folder in fail_helpers.items():
        homes = [p.name for p in (FTP_IMPL / folder).glob("*.c") if name in defined_names(p)]
        assert homes and f"{folder}.c" not in homes, (name, homes)


def test_one_parser_for_the_shared_transport_options():
    """The names of the transport options appear in common/ only; every program parses its
    command line with common/'s parser."""
    shared = ("nodelay", "sack-delay", "sack-freq", "sctp-rto-min", "sctp-rto-initial",
              "sctp-rto-max", "sndbuf", "rcvbuf", "maxseg", "streams", "io-timeout")
    for path in sources(FTP_IMPL):
        if path.parent.name == "common" or path.suffix != ".c":
            continue
        table = re.findall(r'\{"([\w-]+)",\s*(?:no|required|optional)_argument', path.read_text())
        assert not set(table) & set(shared), (path.name, set(table) & set(shared))
    for folder in PROGRAMS:
        users = [p for p in (FTP_IMPL / folder).glob("*.c") if "cli_parse(" in code(p)]
        assert users, f"{folder} does not parse with common/cliparse.c"


# The checker itself, on planted trees.

def plant(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    for folder in FOLDERS:
        (root / folder).mkdir(exist_ok=True)
    return root


def test_checker_finds_a_planted_cycle(tmp_path):
    root = plant(tmp_path, {
        "ftpd/a.h": "int a(void);\n", "ftpd/a.c": '#include "a.h"\n#include "b.h"\n',
        "ftpd/b.h": '#include "c.h"\n', "ftpd/b.c": '#include "b.h"\n',
        "ftpd/c.h": "", "ftpd/c.c": '#include "a.h"\n',
        "common/str.h": "", "common/str.c": '#include "str.h"\n'})
    assert circles(module_graph(root)) == [["ftpd/a", "ftpd/b", "ftpd/c"]]


def test_checker_finds_a_planted_cross_include(tmp_path):
    root = plant(tmp_path, {
        "ftpd/session.h": "", "ftpc/xfer.c": '#include "../ftpd/session.h"\n',
        "common/str.h": "", "common/str.c": '#include "str.h"\n#include "../ftpc/xfer.h"\n',
        "ftpc/xfer.h": ""})
    bad = layer_violations(root)
    assert any(line.startswith("ftpc/xfer.c includes") for line in bad)
    assert any(line.startswith("common/str.c includes") for line in bad)


def test_checker_finds_a_planted_callback_into_main(tmp_path):
    root = plant(tmp_path, {
        "ftpc/ftpc.c": "int helper(int x) {\n  return x;\n}\n\nint main(void) { return 0; }\n",
        "ftpc/xfer.c": "int helper(int x);\nint xfer(void) { return helper(1); }\n"})
    assert main_file_callbacks(root) == ["ftpc/xfer.c uses helper of ftpc/ftpc.c"]


@pytest.mark.parametrize("line", ['#include "str.h"', '  #  include "str.h"'])
def test_includes_are_read_in_either_spelling(tmp_path, line):
    (tmp_path / "x.c").write_text(line + "\n")
    assert includes(tmp_path / "x.c") == ["str.h"]
