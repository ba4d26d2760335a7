"""The `uml-virtual` backend: a shaped path in virtual time gives the configured RTT and rate
(exactly with free computing, plus the kernel's own processing time when computing is charged);
computing advances the clock in wall-cpu mode and not in inf-cpu mode; in either, a job that
busy-waits is stopped by the wall-time watchdog with a message naming the cause and leaves no
process behind; results and metadata carry the clock mode; the build is cached."""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import stray_kernels
from topology.fidelity.targets import payload_per_frame
from topology.kernel import BACKEND_NAMES, BackendError, open_backend
from topology.kernel.uml_virtual import VirtualUmlBackend, calibrated_wake_table
from topology.params import ETHERNET_FRAME_MAX

HERE = Path(__file__).parent
REPO = HERE.parents[1]
PYTHON = "/usr/bin/python3"
VIRTUAL = "virtual (time-travel=wall-cpu)"  # the default clock
# the real-time kernel adds 0.2-0.5 ms per round trip; a loaded host more, and now and then a
# single round trip a few milliseconds (charged computing takes the wall time it takes)
PROCESSING_ALLOWANCE_MS = 2.0
OUTLIER_ALLOWANCE_MS = 50.0
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


def test_virtual_path_gives_the_configured_rtt_plus_processing(shaped):
    expected_ms = 2e3 * shaped["delay"]
    rtt = shaped["rtt"]
    assert rtt["received"] == rtt["sent"] == 20
    assert expected_ms <= rtt["min_ms"] <= rtt["avg_ms"]
    assert rtt["avg_ms"] < expected_ms + PROCESSING_ALLOWANCE_MS
    assert rtt["max_ms"] < expected_ms + OUTLIER_ALLOWANCE_MS


def test_a_scheduled_change_lands_at_its_instant_in_virtual_time(shaped):
    """The delay of `up` grows by 30 ms one second into the schedule, with pings every 5 ms.
    The schedule's applier wakes at the instant; the wall-cpu clock then charges its computing
    up to the write (1.6 ms measured here; 4.1 to 9.6 ms when it was a thread of the harness's
    process), and the pings find the change where the schedule says it wrote it. Their
    spacing, 5 ms idle, stretched to 14 ms with a harness running beside them."""
    landed = shaped["schedule_landing"]
    assert landed["echoes"] > 300 and landed["out_of_order"] == 0, landed
    assert 0 <= landed["lag_s"] <= 0.020, landed
    assert landed["error_s"] <= 0.002, landed
    assert landed["landed_before_s"] - landed["landed_after_s"] < 0.030, landed


def test_with_free_computing_the_rtt_is_exact():
    ping = subprocess.run(
        [PYTHON, "-m", "testbed", "net", "--kernel", "uml-virtual", "path", "--rate", "256kbit",
         "--delay", "125ms", "--", "sh", "-c",  # the first ping waits for ARP: not timed
         "ping -c 1 -W 5 10.0.2.1 >/dev/null; ping -n -c 5 -i 0.5 10.0.2.1"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
        env={**os.environ, "TESTBED_TIME_TRAVEL": "inf-cpu"})
    assert ping.returncode == 0, ping.stderr
    summary = ping.stdout.strip().splitlines()[-1]  # rtt min/avg/max/mdev = a/b/c/d ms
    rtt_min, rtt_avg, rtt_max = (float(x) for x in summary.split("=")[1].split("/")[:3])
    assert (rtt_min, rtt_avg, rtt_max) == (pytest.approx(250.0, abs=0.005),) * 3


SPIN_TIMED = [PYTHON, "-c", "import time\nt = time.monotonic()\nx = 0\n"
              "for i in range(2_000_000): x += i\nprint(time.monotonic() - t)"]


def test_computing_advances_the_clock_only_when_charged():
    free = VirtualUmlBackend(time_travel="inf-cpu").run(SPIN_TIMED).check()
    charged = VirtualUmlBackend(time_travel="wall-cpu").run(SPIN_TIMED).check()
    assert float(free.stdout) < 0.001
    assert float(charged.stdout) > 0.02  # the loop takes about 0.1 s of wall time
    assert charged.clock == "virtual (time-travel=wall-cpu)"
    assert free.clock == "virtual (time-travel=inf-cpu)"


def test_an_unknown_clock_mode_is_refused_with_the_choices():
    with pytest.raises(BackendError) as refused:
        VirtualUmlBackend(time_travel="fast")
    assert "wall-cpu" in str(refused.value) and "inf-cpu" in str(refused.value)


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


def test_results_and_metadata_carry_the_clock_mode(shaped, virtual_kernel):
    assert shaped["result"].clock == VIRTUAL
    assert shaped["result"].backend == "uml-virtual"
    assert shaped["metadata"]["clock"] == VIRTUAL
    assert shaped["metadata"]["backend"] == "uml-virtual"
    assert shaped["metadata"]["kernel_release"].endswith("-timetravel")
    assert shaped["result"].kernel_release == shaped["metadata"]["kernel_release"]
    # the default clock charges this machine's calibrated wake-up latencies
    calibrated = calibrated_wake_table(virtual_kernel)
    assert shaped["metadata"]["wake_latency_ns"] == calibrated.kernel_arg()
    # with no other kernel running, it had a host CPU of its own
    assert shaped["metadata"]["host_cpu"] in os.sched_getaffinity(0)


def test_real_time_backend_records_a_real_clock():
    result = open_backend("uml").run([PYTHON, "-m", "topology.kernel.metadata"]).check()
    assert result.clock == "real"
    assert json.loads(result.stdout)["clock"] == "real"
    assert json.loads(result.stdout)["host_cpu"] is None


def test_a_sleep_takes_no_wall_time():
    started = time.monotonic()
    result = open_backend("uml-virtual").run(["sleep", "120"]).check()
    assert result.timings_s["job_kernel"] == pytest.approx(120, abs=0.5)
    assert time.monotonic() - started < 30


@pytest.mark.parametrize("spin, mode", [(CPU_SPIN, "inf-cpu"), (SYSCALL_SPIN, "inf-cpu"),
                                        (CPU_SPIN, "wall-cpu")],
                         ids=["cpu-loop", "syscall-loop", "cpu-loop-wall-cpu"])
def test_a_spinning_job_is_stopped_and_the_cause_named(spin, mode):
    started = time.monotonic()
    with pytest.raises(BackendError) as stopped:
        VirtualUmlBackend(stall_s=10, time_travel=mode).run(spin, timeout_s=300)
    message = str(stopped.value)
    assert "clock stopped" in message and "busy-waits" in message
    assert "block" in message  # says what to do
    assert f"time-travel={mode}" in message
    assert time.monotonic() - started < 60
    assert stray_kernels() == []


def test_the_wall_time_limit_stops_a_polling_job_and_names_the_cause():
    started = time.monotonic()
    with pytest.raises(BackendError) as stopped:
        VirtualUmlBackend(stall_s=1000, time_travel="inf-cpu").run(SYSCALL_SPIN, timeout_s=10)
    message = str(stopped.value)
    assert "10 s wall-time limit" in message and "busy-waits" in message
    assert time.monotonic() - started < 60
    assert stray_kernels() == []


def test_the_backend_is_offered_by_name_and_on_the_command_line():
    assert "uml-virtual" in BACKEND_NAMES
    cli = subprocess.run([PYTHON, "-m", "testbed", "kernel", "--kernel", "uml-virtual", "--",
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


def test_beats_come_thirty_times_within_the_stall_limit_and_at_most_every_10_s():
    # a beat costs wall time per second of the kernel's clock: hours-long satellite sessions
    # beat every 10 s; a short stall limit keeps beats frequent enough to tell a frozen clock
    assert VirtualUmlBackend(stall_s=300).heartbeat_s() == 10
    assert VirtualUmlBackend(stall_s=60).heartbeat_s() == 2
    assert VirtualUmlBackend(stall_s=10).heartbeat_s() == 1
    assert "TESTBED_HEARTBEAT_S=10" in VirtualUmlBackend(stall_s=300).boot_args("x", Path("/s"))
