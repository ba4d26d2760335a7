"""The tests' kernel finder sees a kernel's whole command line whatever the environment says of
the terminal: `ps` cut lines at $COLUMNS, which a full test session once carried (80), and the
kernel's `umid=` fell past the cut, so running kernels looked absent."""
from __future__ import annotations

import subprocess
import sys
import time

from tests.conftest import kernels_and_children, stray_kernels

PADDING = [f"padding{i}=" + "x" * 40 for i in range(6)]   # the marker lands past column 250


def test_a_kernel_whose_marker_lies_past_column_80_is_found(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    marker = f"umid=tbtest{time.monotonic_ns()}-"
    # a stand-in named as the kernel is: argv[0] ends in linux.uml, its arguments follow
    stand_in = subprocess.Popen(
        ["bash", "-c", f'exec -a /opt/kernels/linux.uml {sys.executable} -c '
         f'"import time; time.sleep(60)" "$@"', "bash", *PADDING, f"{marker}abc"])
    try:
        deadline = time.monotonic() + 10
        while not stray_kernels(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        found = stray_kernels(marker)
        assert [line.split()[0] for line in found] == [str(stand_in.pid)]
        assert found[0].endswith(f"{marker}abc")
        assert str(stand_in.pid) in kernels_and_children(stand_in.pid).split("processes under")[0]
    finally:
        stand_in.kill()
        stand_in.wait()
    assert stray_kernels(marker) == []


def test_a_marker_matches_whole_arguments_only():
    marker = f"TESTBED_OWNER=owner{time.monotonic_ns()}"
    stand_in = subprocess.Popen(
        ["bash", "-c", f'exec -a linux.uml {sys.executable} -c "import time; time.sleep(60)" '
         f'"$@"', "bash", f"{marker}-longer"])
    try:
        time.sleep(0.5)
        assert stray_kernels(marker) == []                  # a longer owner is another owner
        assert len(stray_kernels(f"{marker}-longer")) == 1
    finally:
        stand_in.kill()
        stand_in.wait()
