"""`testbed bench NAME [OPTIONS]`: run one benchmark (its options: `testbed bench NAME --help`)."""
from __future__ import annotations

import argparse
from collections.abc import Callable
from importlib import import_module

BENCHMARKS = {
    "harness": "experiments.benchmarks.harness_overhead",
    "virtual-clock": "experiments.benchmarks.virtual_clock",
    "virtual-links": "experiments.benchmarks.virtual_links",
    "ftp": "experiments.benchmarks.ftp_programs",
    "http": "experiments.benchmarks.http_servers",
    "sctp-stacks": "experiments.benchmarks.sctp_stacks",
    "capture-of-headers": "experiments.benchmarks.capture_of_headers",
    "kill-campaign": "experiments.benchmarks.kill_campaign",
}
ERRORS: tuple[type[Exception], ...] = ()


def add_commands(command: Callable[[str, str, str], argparse.ArgumentParser]) -> None:
    bench = command("bench", "run a benchmark: prints measured numbers, writes "
                             "results/bench-<name>.json", "testbed bench virtual-clock --e1")
    bench.add_argument("name", choices=BENCHMARKS,
                       help="then the benchmark's own options (testbed bench NAME --help)")
    bench.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    return import_module(BENCHMARKS[args.name]).main(args.options)
