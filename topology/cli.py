"""The testbed core's command line.

  python3 -m topology run [--kernel K] -- CMD ...      run CMD inside the kernel
  python3 -m topology info [--kernel K]                kernel, backend and sysctls as JSON
  python3 -m topology net path|dumbbell|dualpath [link options] [--on NODE] [-- CMD ...]
  python3 -m topology fidelity [--kernel K] [--quick] [--out FILE]
  python3 -m topology wake-latency [--recalibrate]     the wall-cpu clock's wake-up costs"""
from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path

from .kernel import BACKEND_NAMES, BackendError, open_backend
from .params import LinkShape, ParameterError

PYTHON = "/usr/bin/python3"


def _kernel_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kernel", choices=BACKEND_NAMES, default=None,
                        help="kernel backend (default: $KERNEL or uml)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python3 -m topology", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a command inside the kernel")
    _kernel_option(run)
    run.add_argument("--timeout", type=float, default=None, help="wall-time limit in seconds")

    info = sub.add_parser("info", help="print the kernel's metadata")
    _kernel_option(info)

    net = sub.add_parser("net", help="bring a topology up and run a command on a node")
    _kernel_option(net)
    net.add_argument("topology", choices=("path", "dumbbell", "dualpath"))
    net.add_argument("--rate", help="e.g. 3Mbit (default: not rate-limited)")
    net.add_argument("--delay", help="one-way delay, e.g. 35ms")
    net.add_argument("--loss", help="Bernoulli loss, e.g. 0.01 or 1%%")
    net.add_argument("--queue", help="drop-tail queue, e.g. 50p or 500KB")
    net.add_argument("--pairs", type=int, default=2, help="dumbbell: sender/receiver pairs")
    net.add_argument("--on", default="client", help="node that runs the command")

    fidelity = sub.add_parser("fidelity", help="measure link fidelity (make fidelity)")
    _kernel_option(fidelity)
    fidelity.add_argument("--quick", action="store_true", help="shorter probes (for tests)")
    fidelity.add_argument("--out", type=Path, default=None, help="JSON output file")

    wake = sub.add_parser("wake-latency", help="show (calibrating once) the wake-up latency "
                          "table the wall-cpu virtual clock charges")
    wake.add_argument("--recalibrate", action="store_true",
                      help="measure again (on an otherwise idle machine)")
    return parser


def split_command(argv: list[str]) -> tuple[list[str], list[str]]:
    """Options before `--`, the command to run after it."""
    if "--" in argv:
        cut = argv.index("--")
        return argv[:cut], argv[cut + 1:]
    return argv, []


def main(argv: list[str] | None = None) -> int:
    # A termination request ends the kernel the same way Ctrl-C does: through cleanup.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    options, command = split_command(list(sys.argv[1:] if argv is None else argv))
    args = build_parser().parse_args(options)
    args.argv = command
    try:
        return _dispatch(args)
    except (BackendError, ParameterError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; the kernel was stopped", file=sys.stderr)
        return 130


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "run":
        command = args.argv
        if not command:
            raise ParameterError("run needs a command after --")
        result = open_backend(args.kernel).run(command, timeout_s=args.timeout, stream=True)
        return result.returncode
    if args.command == "info":
        result = open_backend(args.kernel).run([PYTHON, "-m", "topology.kernel.metadata"]).check()
        print(json.dumps(json.loads(result.stdout), indent=2))
        return 0
    if args.command == "net":
        shape = LinkShape.parse(args.rate, args.delay, args.loss, args.queue)
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
        from .kernel.uml_virtual import virtual_kernel
        binary = virtual_kernel()
        if args.recalibrate:
            wake_latency.cache_file(binary).unlink(missing_ok=True)
        table = wake_latency.wake_table(binary)
        record = wake_latency.cached_record(binary)
        print(json.dumps(record, indent=2) if record else table.describe())
        return 0
    raise AssertionError(args.command)
