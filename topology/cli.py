"""The topology layer's commands, part of `testbed` (testbed/cli.py):

  testbed run [--kernel K] -- CMD ...      run CMD inside the kernel
  testbed info [--kernel K]                kernel, backend and sysctls as JSON
  testbed net path|dumbbell|dualpath [link options] [--on NODE] [-- CMD ...]
  testbed fidelity [--kernel K] [--quick] [--out FILE]
  testbed wake-latency [--recalibrate]     the wall-cpu clock's wake-up costs"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from .kernel import BACKEND_NAMES, BackendError, open_backend
from .params import LinkShape, ParameterError

PYTHON = "/usr/bin/python3"
ERRORS = (BackendError, ParameterError)


def _kernel_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kernel", choices=BACKEND_NAMES, default=None,
                        help="kernel backend (default: $KERNEL or uml)")


def add_commands(command: Callable[[str, str, str], argparse.ArgumentParser]) -> None:
    """`command(name, help, example)` makes a subcommand's parser. `kernel` and `net` take the
    command to run after `--`."""
    run = command("kernel", "run a command inside the pinned kernel",
                  "testbed kernel -- sh -c 'uname -r; lsmod | grep sctp'")
    _kernel_option(run)
    run.add_argument("--timeout", type=float, default=None, help="wall-time limit in seconds")

    info = command("info", "print the kernel's metadata", "testbed info --kernel uml-virtual")
    _kernel_option(info)

    net = command("net", "bring a topology up and run a command on a node",
                  "testbed net path --rate 1Mbit --delay 35ms -- ping -c 3 10.0.2.1")
    _kernel_option(net)
    net.add_argument("topology", choices=("path", "dumbbell", "dualpath"))
    net.add_argument("--rate", help="e.g. 3Mbit (default: not rate-limited)")
    net.add_argument("--delay", help="one-way delay, e.g. 35ms")
    net.add_argument("--loss", help="Bernoulli loss, e.g. 0.01 or 1%%")
    net.add_argument("--loss-burst", type=float, default=None,
                     help="the loss in Gilbert bursts of this mean length in packets")
    net.add_argument("--queue", help="drop-tail queue, e.g. 50p or 500KB")
    net.add_argument("--pairs", type=int, default=2, help="dumbbell: sender/receiver pairs")
    net.add_argument("--on", default="client", help="node that runs the command")

    fidelity = command("fidelity", "measure the link fidelity of the E1 paths",
                       "testbed fidelity --quick --out /tmp/fidelity.json")
    _kernel_option(fidelity)
    fidelity.add_argument("--quick", action="store_true", help="shorter probes (for tests)")
    fidelity.add_argument("--out", type=Path, default=None, help="JSON output file")

    wake = command("wake-latency", "show (calibrating once) the wake-up latency table the "
                   "wall-cpu virtual clock charges", "testbed wake-latency --recalibrate")
    wake.add_argument("--recalibrate", action="store_true",
                      help="measure again (on an otherwise idle machine)")
    for parser in (run, info, net, fidelity, wake):
        parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    if args.command == "kernel":
        command = args.argv
        if not command:
            raise ParameterError("kernel needs a command after --")
        result = open_backend(args.kernel).run(command, timeout_s=args.timeout, stream=True)
        return result.returncode
    if args.command == "info":
        result = open_backend(args.kernel).run([PYTHON, "-m", "topology.kernel.metadata"]).check()
        print(json.dumps(json.loads(result.stdout), indent=2))
        return 0
    if args.command == "net":
        shape = LinkShape.parse(args.rate, args.delay, args.loss, args.queue).with_changes(
            loss_burst=args.loss_burst)
        spec = {"topology": args.topology, "shape": shape.to_dict(), "pairs": args.pairs}
        backend = open_backend(args.kernel)
        result = backend.run([PYTHON, "-m", "topology.net.session", json.dumps(spec), args.on,
                              *args.argv], stream=True)
        return result.returncode
    if args.command == "fidelity":
        from .fidelity import benchmark
        kwargs = {"output": args.out} if args.out else {}
        benchmark.run(args.kernel, quick=args.quick, **kwargs)
        return 0
    if args.command == "wake-latency":
        from .kernel import wake_latency
        from .kernel.uml_virtual import calibrated_wake_table, virtual_kernel
        binary = virtual_kernel()
        path = wake_latency.cache_file(binary)
        if args.recalibrate:
            path.unlink(missing_ok=True)
        table = calibrated_wake_table(binary)
        record = wake_latency.cached_record(binary)
        print(json.dumps(record, indent=2) if record else table.describe())
        if record and (warning := wake_latency.busy_warning(record, path)):
            print(warning, file=sys.stderr)
        return 0
    raise AssertionError(args.command)
