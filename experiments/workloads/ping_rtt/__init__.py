"""ping-rtt, the round-trip time of both paths of `dualpath` by ping, from the client's pcap and
from ping's own output: everything this workload is, in one package.

    workload.py   its keys, points, estimates, the run inside the kernel, its row per run
    measure.py    each echo request paired with its reply in the pcap; ping's output read

It has no report/: its results get the common report."""
from .workload import WORKLOAD

__all__ = ["WORKLOAD"]
