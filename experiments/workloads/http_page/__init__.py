"""http-page, a browser's page fetch across `path`, the document then its embedded objects,
over pipelined HTTP/1.1 on TCP or HTTP over SCTP streams (E4): everything this workload is, in
one package.

    workload.py   its keys, points, estimates, the run inside the kernel, its row per run
    measure.py    every object's request and last byte read from the client's pcap
    report/       its figures, tables and report sections (the analysis layer: matplotlib)

Importing the package loads the workload, never its report."""
from .workload import WORKLOAD

__all__ = ["WORKLOAD"]
