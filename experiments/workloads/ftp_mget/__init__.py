"""ftp-mget, one FTP session fetching N files with `mget *` across `path` (E1, E2) or across
`dualpath` (failover, E2 as it ran): everything this workload is, in one package.

    workload.py   its keys, points, estimates, the run inside the kernel, its row per run
    measure.py    the FTP session read from the client's pcap (control channel, transfers)
    flows.py      the session's TCP connections and SCTP associations in the pcap
    phases.py     where each file's time went, from the pcap
    paths.py      on dualpath: what each path carried, and the failover, from the pcap
    report/       its figures, tables and report sections (the analysis layer: matplotlib)

Importing the package loads the workload, never its report."""
from .workload import WORKLOAD

__all__ = ["WORKLOAD"]
