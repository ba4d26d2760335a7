"""A run's capture: tcpdump's closing counts read, and a capture that missed packets named as
such (its run is redone rather than measured). That every smoke run's capture wrote all it was
handed is asserted on the runs themselves (tests/harness/test_smoke.py)."""
from __future__ import annotations

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
