"""The local base image takes its Debian archive from the machine's own apt sources, in either
format apt reads, and keeps only Debian's bookworm entries (no third-party repositories)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.container.conftest import REPO

BASE_IMAGE_SH = REPO / "docker" / "base-image.sh"


def sources_from(apt_etc: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(BASE_IMAGE_SH), "--print-sources"], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "APT_ETC": str(apt_etc)})


def stanzas(text: str) -> list[dict[str, str]]:
    return [dict(line.split(": ", 1) for line in block.splitlines())
            for block in text.strip().split("\n\n")]


def test_one_line_sources_list(tmp_path):
    (tmp_path / "sources.list.d").mkdir(parents=True)
    (tmp_path / "sources.list").write_text(
        "# a comment\n"
        "deb-src http://mirror.example/debian bookworm main\n"
        "deb [arch=amd64 signed-by=/usr/share/keyrings/k.gpg] http://mirror.example/debian "
        "bookworm main contrib\n"
        "deb http://security.example/debian-security bookworm-security main\n")
    (tmp_path / "sources.list.d" / "vendor.list").write_text(
        "deb http://vendor.example/apt stable main\n")
    printed = sources_from(tmp_path)
    assert printed.returncode == 0, printed.stderr
    assert stanzas(printed.stdout) == [
        {"Types": "deb", "URIs": "http://mirror.example/debian", "Suites": "bookworm",
         "Components": "main contrib", "Signed-By": "/usr/share/keyrings/k.gpg"},
        {"Types": "deb", "URIs": "http://security.example/debian-security",
         "Suites": "bookworm-security", "Components": "main"}]


def test_deb822_sources_with_the_archive_first(tmp_path):
    (tmp_path / "sources.list.d").mkdir(parents=True)
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://security.example/debian-security\n"
        "Suites: bookworm-security\nComponents: main\n\n"
        "# http://snapshot.example/archive\n"
        "Types: deb deb-src\nURIs: http://mirror.example/debian\n"
        "Suites: bookworm bookworm-updates\nComponents: main\n"
        "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\n"
        "Enabled: no\nTypes: deb\nURIs: http://old.example/debian\nSuites: bookworm\n"
        "Components: main\n")
    (tmp_path / "sources.list.d" / "vendor.sources").write_text(
        "Types: deb\nURIs: http://vendor.example/apt\nSuites: stable\nComponents: main\n")
    printed = sources_from(tmp_path)
    assert printed.returncode == 0, printed.stderr
    found = stanzas(printed.stdout)
    assert [s["URIs"] for s in found] == ["http://mirror.example/debian",
                                          "http://security.example/debian-security"]
    assert found[0]["Suites"] == "bookworm bookworm-updates"
    assert found[0]["Types"] == "deb"


def test_no_bookworm_archive_is_an_error_that_says_so(tmp_path):
    (tmp_path / "sources.list.d").mkdir(parents=True)
    (tmp_path / "sources.list").write_text("deb http://mirror.example/debian trixie main\n")
    printed = sources_from(tmp_path)
    assert printed.returncode != 0
    assert "no enabled 'deb' entry for bookworm" in printed.stderr
