"""Experiments: the experiment files, the harness that runs them (harness/), the workloads they
can name (workloads/), the one module that reads pcaps (tshark/) and the one that does
statistics (stats.py), the benchmarks (benchmarks/) and the deployment to real nodes (deploy/).

Imports run one way: this package uses topology/, never the reverse; analysis/ reads what it
writes."""
