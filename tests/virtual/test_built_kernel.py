"""`uml-built`: the kernel `uml-virtual` boots, booted in real time. A sleep takes its wall time;
the result and the metadata name the real clock, the build's release and the hash of the
configuration the kernel itself reports; a shaped path gives the configured round trip and
rates, as the same kernel does in virtual time (test_virtual_time.py): one kernel, both
clocks."""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pytest

from topology.fidelity.targets import payload_per_frame
from topology.kernel import BACKEND_NAMES, open_backend
from topology.params import ETHERNET_FRAME_MAX

HERE = Path(__file__).parent
PYTHON = "/usr/bin/python3"
RATE_BPS, DELAY_S = 1e6, 0.035          # the coast path
# real time pays the kernel's processing on every round trip; a loaded host more
PROCESSING_ALLOWANCE_MS = 5.0


@pytest.fixture(scope="module")
def shaped_real(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("built") / "seen.json"
    result = open_backend("uml-built").run(
        [PYTHON, str(HERE / "inside_virtual.py"), str(out), str(RATE_BPS), str(DELAY_S)],
        timeout_s=900)
    assert result.returncode == 0, result.stderr
    seen = json.loads(out.read_text())
    seen["result"] = result
    return seen


def test_a_sleep_takes_its_wall_time_and_the_build_is_recorded(virtual_kernel):
    assert "uml-built" in BACKEND_NAMES
    started = time.monotonic()
    result = open_backend("uml-built").run(
        ["sh", "-c", f"sleep 3; {PYTHON} -m topology.kernel.metadata"]).check()
    assert time.monotonic() - started >= 3
    assert result.timings_s["job_kernel"] >= 3
    meta = json.loads(result.stdout)
    assert result.clock == meta["clock"] == "real"
    assert result.backend == meta["backend"] == "uml-built"
    release = (virtual_kernel.parent / "release").read_text().strip()
    assert result.kernel_release == meta["kernel_release"] == release
    built = hashlib.sha256((virtual_kernel.parent / "config").read_bytes()).hexdigest()
    assert meta["kernel_config_sha256"] == built


def test_the_shaped_path_gives_the_configured_rtt_in_real_time(shaped_real):
    expected_ms = 2e3 * DELAY_S
    rtt = shaped_real["rtt"]
    assert rtt["received"] == rtt["sent"] == 20
    assert expected_ms <= rtt["min_ms"] <= rtt["avg_ms"] < expected_ms + PROCESSING_ALLOWANCE_MS
    assert shaped_real["metadata"]["clock"] == "real"


@pytest.mark.parametrize("proto", ["tcp", "sctp"])
def test_the_shaped_path_gives_the_configured_rate_in_real_time(shaped_real, proto):
    expected = RATE_BPS * payload_per_frame(proto, True) / ETHERNET_FRAME_MAX
    assert shaped_real[proto]["bps"] == pytest.approx(expected, rel=0.03)
