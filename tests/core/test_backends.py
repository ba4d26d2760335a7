"""The kernel backends: the pinned kernel boots, runs a job, brings back its status and output,
always halts, leaves nothing behind, and several run side by side; bad choices are refused."""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import default_sigint, kernels_and_children, stray_kernels
from topology.kernel import BackendError, open_backend, resolve
from topology.kernel.capabilities import missing_pieces
from topology.kernel.uml import pinned_release

REPO = Path(__file__).resolve().parents[2]
PYTHON = "/usr/bin/python3"


def test_job_status_and_output_come_back():
    result = open_backend("uml").run(["sh", "-c", "echo out; echo err >&2; exit 7"])
    assert (result.returncode, result.stdout, result.stderr) == (7, "out\n", "err\n")
    assert result.backend == resolve("uml")
    if result.backend == "uml":
        assert result.kernel_release == pinned_release()
    else:   # Debian's build cannot run on this CPU: the project's runs in real time
        assert result.kernel_release.startswith("6.1.") and result.clock == "real"


def test_pinned_kernel_has_sctp_and_netem():
    probe = ("import socket; socket.socket(socket.AF_INET, socket.SOCK_STREAM, 132).close();"
             "import subprocess; subprocess.run(['tc', 'qdisc', 'add', 'dev', 'lo', 'root', "
             "'netem', 'delay', '1ms'], check=True); print('capable')")
    result = open_backend("uml").run([PYTHON, "-c", probe])
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "capable"


def test_instances_run_side_by_side_without_clashing(tmp_path):
    results, spans = {}, {}

    def job(name: str) -> None:
        started = time.monotonic()
        results[name] = open_backend("uml").run(
            ["sh", "-c",
             f"hostname; ip netns add shared; sleep 3; echo {name} > {tmp_path}/{name}"])
        spans[name] = (started, time.monotonic())

    threads = [threading.Thread(target=job, args=(n,)) for n in ("one", "two")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r.returncode == 0 for r in results.values()), [r.stderr for r in results.values()]
    hostnames = {r.stdout.strip() for r in results.values()}
    assert len(hostnames) == 2  # each instance has its own id
    (a_start, a_end), (b_start, b_end) = spans.values()
    assert a_start < b_end and b_start < a_end  # they overlapped in time
    assert (tmp_path / "one").read_text() == "one\n" and (tmp_path / "two").read_text() == "two\n"


def test_a_job_past_its_limit_is_stopped_and_nothing_remains():
    started = time.monotonic()
    with pytest.raises(BackendError, match="wall-time limit"):
        open_backend("uml").run(["sleep", "600"], timeout_s=8)
    assert time.monotonic() - started < 40
    assert stray_kernels() == []


def test_a_cancelled_kernel_is_stopped_and_nothing_remains():
    """What a host that keeps a kernel does with one whose batch overran (kernel_session.py)."""
    backend = open_backend("uml")
    threading.Timer(3.0, backend.cancel.set).start()
    started = time.monotonic()
    with pytest.raises(BackendError, match="stopped on request"):
        backend.run(["sleep", "600"], timeout_s=300)
    assert time.monotonic() - started < 30
    assert stray_kernels() == []


def test_a_kernel_crash_is_reported_not_hung():
    with pytest.raises(BackendError, match="stopped before the job finished"):
        open_backend("uml").run(["sh", "-c", "echo c > /proc/sysrq-trigger; sleep 600"],
                                timeout_s=120)
    assert stray_kernels() == []


def test_ctrl_c_halts_the_kernel_and_leaves_no_process():
    # PYTHONFAULTHANDLER: a child that hangs prints where, at the SIGABRT below
    proc = subprocess.Popen(default_sigint([PYTHON, "-m", "testbed", "kernel", "--", "sleep",
                                            "600"]), cwd=REPO,
                            env={**os.environ, "PYTHONFAULTHANDLER": "1"},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    marker = f"umid=tb{proc.pid}-"
    deadline = time.monotonic() + 60
    while not stray_kernels(marker) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    if not stray_kernels(marker):
        seen = kernels_and_children(proc.pid)
        proc.send_signal(signal.SIGABRT)
        try:
            out, err = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate(timeout=60)
        pytest.fail(f"the kernel never started (testbed exited {proc.returncode}):\n"
                    f"{out[-1500:]}\n{err[-3000:]}\n{seen}")
    time.sleep(1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert "interrupted" in err
    assert stray_kernels(marker) == []


def test_unknown_backend_is_refused_with_the_choices():
    with pytest.raises(BackendError, match="unknown kernel backend 'xen'.*uml, host, auto"):
        open_backend("xen")
    cli = subprocess.run([PYTHON, "-m", "testbed", "kernel", "--", "true"], cwd=REPO,
                         env={**os.environ, "KERNEL": "xen"}, capture_output=True, text=True)
    assert cli.returncode == 2
    assert "unknown kernel backend 'xen'" in cli.stderr


def test_host_backend_refuses_a_kernel_without_sctp_or_netem():
    missing = missing_pieces()
    if not missing:
        result = open_backend("host").run(["uname", "-r"])
        assert result.returncode == 0 and result.backend == "host"
        return
    with pytest.raises(BackendError) as refused:
        open_backend("host")
    message = str(refused.value)
    for piece in missing:
        assert piece.split(" ")[0] in message  # names SCTP and/or netem
    assert "KERNEL=uml" in message
    assert open_backend("auto").name == resolve("uml")


def test_bad_link_parameter_is_refused_before_any_kernel_starts():
    before = time.monotonic()
    cli = subprocess.run([PYTHON, "-m", "testbed", "net", "path", "--delay=-5ms"], cwd=REPO,
                         capture_output=True, text=True)
    assert cli.returncode == 2
    assert "delay must be between 0 and 10 s" in cli.stderr
    assert time.monotonic() - before < 5  # no boot happened
    cli = subprocess.run([PYTHON, "-m", "testbed", "net", "path", "--loss", "1.5"], cwd=REPO,
                         capture_output=True, text=True)
    assert cli.returncode == 2 and "loss must be a ratio between 0 and 1" in cli.stderr


def test_every_kernel_carries_the_owner_of_the_run_that_started_it(monkeypatch, tmp_path):
    from topology.kernel.uml import UmlBackend

    monkeypatch.setenv("TESTBED_OWNER", "ci-42-1700000000")
    assert "TESTBED_OWNER=ci-42-1700000000" in UmlBackend().boot_args("tbx", tmp_path)
    monkeypatch.setenv("TESTBED_OWNER", "two words")  # never breaks the boot line
    assert not any(a.startswith("TESTBED_OWNER") for a in UmlBackend().boot_args("tbx", tmp_path))
