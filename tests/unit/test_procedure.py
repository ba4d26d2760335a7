"""A run's capture: tcpdump's closing counts read, and a capture that missed packets named as
such (its run is redone rather than measured). That every smoke run's capture wrote all it was
handed is asserted on the runs themselves (tests/harness/test_smoke.py)."""
from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from experiments import procedure


def test_packets_handed_to_tcpdump_but_not_written_fail_the_capture():
    said = ("tcpdump: listening on client-eth0, link-type EN10MB (Ethernet)\n"
            "57 packets captured\n61 packets received by filter\n0 packets dropped by kernel\n")
    counts = procedure.capture_counts(said)
    assert counts == {"captured": 57, "received": 61, "dropped": 0}
    assert "57 of the 61" in procedure.capture_shortfall(counts)
    full = procedure.capture_counts("9 packets captured\n12 packets received by filter\n"
                                    "3 packets dropped by kernel\n")
    assert "dropped 3 packets" in procedure.capture_shortfall(full)


def test_packets_handed_after_the_drain_are_not_the_run_s_and_no_shortfall():
    # the drain found all 60 written; one more came after it and was left unread
    late = {"captured": 60, "received": 61, "dropped": 0, "after_drain": 1}
    assert procedure.capture_shortfall(late) is None
    # but one of the packets before the drain missing is
    assert "59 of the 61" in procedure.capture_shortfall({**late, "captured": 59})


def test_the_ring_fits_the_path_and_an_unlimited_one_keeps_8_mb():
    # a second of an 11 Mbit/s path's full-size packets and their acknowledgements, 2 KB each
    assert procedure.capture_buffer_kb([11_000_000, 11_000_000]) == 2750
    assert procedure.capture_buffer_kb([1_000_000]) == procedure.CAPTURE_BUFFER_MIN_KB == 2048
    # a veth that no router limits carries Gbit/s; an unknown rate is treated as one
    assert procedure.capture_buffer_kb([3_000_000, None]) == 8192
    assert procedure.capture_buffer_kb([]) == 8192
    assert procedure.capture_buffer_kb([1_000_000_000]) == 8192
    assert "-B" in (argv := procedure.capture_argv("eth0", Path("x.pcap"), buffer_kb=2750))
    assert argv[argv.index("-B") + 1] == "2750"


def test_a_program_is_waited_for_to_its_exit_status_or_its_limit():
    assert procedure.wait_exit(subprocess.Popen(["sh", "-c", "sleep 0.2; exit 3"]), 10) == 3
    done = subprocess.Popen(["true"])
    time.sleep(0.2)  # exited before the wait began: its status is still there
    assert procedure.wait_exit(done, 10) == 0
    slow = subprocess.Popen(["sleep", "5"])
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        procedure.wait_exit(slow, 0.3)
    assert 0.3 <= time.monotonic() - started < 2
    slow.kill()
    assert procedure.wait_exit(slow, 10) == -signal.SIGKILL


def test_a_block_mode_capture_is_asked_its_counts_and_the_last_ones_count():
    immediate = procedure.capture_argv("eth0", Path("x.pcap"))
    block = procedure.capture_argv("eth0", Path("x.pcap"), immediate=False)
    assert {"--immediate-mode", "-U"} <= set(immediate)
    assert not {"--immediate-mode", "-U"} & set(block)
    assert set(block) | {"--immediate-mode", "-U"} == set(immediate)
    # what SIGUSR1 makes tcpdump print while it runs, then its closing lines; one packet is
    # "packet"
    said = ("tcpdump: 0 packets captured, 12 packets received by filter, 0 packets dropped by "
            "kernel\ntcpdump: 1 packet captured, 12 packets received by filter, 0 packets "
            "dropped by kernel\n12 packets captured\n12 packets received by filter\n"
            "0 packets dropped by kernel\n")
    assert procedure.capture_counts(said) == {"captured": 12, "received": 12, "dropped": 0}
    assert procedure.capture_counts(said.split("\n12 packets")[0])["captured"] == 1
