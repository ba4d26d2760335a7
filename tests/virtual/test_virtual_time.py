"""The `uml-virtual` backend: a shaped path in virtual time gives the configured RTT and rate; a
job that busy-waits is stopped by the wall-time watchdog with a message naming the cause and
leaves no process behind; results and metadata carry the clock mode; the build is cached."""
from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import stray_kernels
from topology.fidelity.targets import payload_per_frame
from topology.kernel import BACKEND_NAMES, BackendError, open_backend
from topology.kernel.uml_virtual import VirtualUmlBackend
from topology.params import ETHERNET_FRAME_MAX

HERE = Path(__file__).parent
REPO = HERE.parents[1]
PYTHON = "/usr/bin/python3"
VIRTUAL = "virtual (time-travel=inf-cpu)"
CPU_SPIN = [PYTHON, "-c", "while True: pass"]
SYSCALL_SPIN = [PYTHON, "-c", "import select\nwhile True: select.select([], [], [], 0)"]


@pytest.fixture(scope="module", params=[(256e3, 0.125), (1e6, 0.035)], ids=["satellite", "coast"])
def shaped(request, tmp_path_factory) -> dict:
    rate, delay = request.param
    out = tmp_path_factory.mktemp("virtual") / "seen.json"
    started = time.monotonic()
    result = open_backend("uml-virtual").run(
        [PYTHON, str(HERE / "inside_virtual.py"), str(out), str(rate), str(delay)], timeout_s=900)
    assert result.returncode == 0, result.stderr
    seen = json.loads(out.read_text())
    seen.update(rate=rate, delay=delay, wall_s=time.monotonic() - started, result=result)
    return seen


def test_virtual_path_gives_the_configured_rtt_exactly(shaped):
    expected_ms = 2e3 * shaped["delay"]
    rtt = shaped["rtt"]
    assert rtt["received"] == rtt["sent"] == 20
    assert rtt["avg_ms"] == pytest.approx(expected_ms, abs=0.1)
    assert rtt["min_ms"] == pytest.approx(expected_ms, abs=0.1)
    assert rtt["max_ms"] == pytest.approx(expected_ms, abs=0.1)


@pytest.mark.parametrize("proto", ["tcp", "sctp"])
def test_virtual_path_gives_the_configured_rate(shaped, proto):
    expected = shaped["rate"] * payload_per_frame(proto, True) / ETHERNET_FRAME_MAX
    assert shaped[proto]["bps"] == pytest.approx(expected, rel=0.02)
    assert shaped[proto]["tool"] == "bulk_probe"


def test_virtual_time_runs_faster_than_real_time(shaped):
    # ping 4 s, two bulk transfers of 13 s each, Mininet: over 30 s on the kernel's clock
    kernel_s = shaped["result"].timings_s["job_kernel"]
    assert kernel_s > 30
    if shaped["rate"] < 300e3:
        assert shaped["wall_s"] < kernel_s, (shaped["wall_s"], kernel_s)


def test_results_and_metadata_carry_the_clock_mode(shaped):
    assert shaped["result"].clock == VIRTUAL
    assert shaped["result"].backend == "uml-virtual"
    assert shaped["metadata"]["clock"] == VIRTUAL
    assert shaped["metadata"]["backend"] == "uml-virtual"
    assert shaped["metadata"]["kernel_release"].endswith("-timetravel")
    assert shaped["result"].kernel_release == shaped["metadata"]["kernel_release"]


def test_real_time_backend_records_a_real_clock():
    result = open_backend("uml").run([PYTHON, "-m", "topology.kernel.metadata"]).check()
    assert result.clock == "real"
    assert json.loads(result.stdout)["clock"] == "real"


def test_a_sleep_takes_no_wall_time():
    started = time.monotonic()
    result = open_backend("uml-virtual").run(["sleep", "120"]).check()
    assert result.timings_s["job_kernel"] == pytest.approx(120, abs=0.5)
    assert time.monotonic() - started < 30


@pytest.mark.parametrize("spin", [CPU_SPIN, SYSCALL_SPIN], ids=["cpu-loop", "syscall-loop"])
def test_a_spinning_job_is_stopped_and_the_cause_named(spin):
    started = time.monotonic()
    with pytest.raises(BackendError) as stopped:
        VirtualUmlBackend(stall_s=10).run(spin, timeout_s=300)
    message = str(stopped.value)
    assert "clock stopped" in message and "busy-waits" in message
    assert "block" in message  # says what to do
    assert time.monotonic() - started < 60
    assert stray_kernels() == []


def test_the_wall_time_limit_stops_a_polling_job_and_names_the_cause():
    started = time.monotonic()
    with pytest.raises(BackendError) as stopped:
        VirtualUmlBackend(stall_s=1000).run(SYSCALL_SPIN, timeout_s=10)
    message = str(stopped.value)
    assert "10 s wall-time limit" in message and "busy-waits" in message
    assert time.monotonic() - started < 60
    assert stray_kernels() == []


def test_the_backend_is_offered_by_name_and_on_the_command_line():
    assert "uml-virtual" in BACKEND_NAMES
    cli = subprocess.run([PYTHON, "-m", "topology", "run", "--kernel", "uml-virtual", "--",
                          "sh", "-c", "sleep 30; uname -r"], cwd=REPO, capture_output=True,
                         text=True, timeout=120)
    assert cli.returncode == 0, cli.stderr
    assert cli.stdout.strip().endswith("-timetravel")


def test_the_kernel_build_is_cached(virtual_kernel):
    started = time.monotonic()
    again = subprocess.run(["bash", str(REPO / "topology/kernel/timetravel/build.sh")],
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0
    assert "up to date" in again.stderr
    assert Path(again.stdout.strip()) == virtual_kernel
    assert time.monotonic() - started < 10
    assert (virtual_kernel.parent / "config").read_text() == \
        (REPO / "topology/kernel/timetravel/uml-timetravel.config").read_text()
