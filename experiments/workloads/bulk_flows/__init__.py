"""bulk-flows, long-lived TCP and SCTP bulk flows sharing the `dumbbell`'s bottleneck (E3):
everything this workload is, in one package.

    workload.py   its keys, points, estimates, the run inside the kernel, its row per run
    report/       its figures, tables and report sections (the analysis layer: matplotlib)

Importing the package loads the workload, never its report."""
from .workload import WORKLOAD

__all__ = ["WORKLOAD"]
