"""The deployment commands of `testbed`:

  testbed deploy-emulated [--variant V] [--out DIR] ...   the playbooks against the emulated
                                                          nodes, over SSH (emulated.py)
  testbed controller STEP ...                             a step the playbooks run on the
                                                          controller (controller.py)"""
from __future__ import annotations

import argparse
from collections.abc import Callable

from topology.kernel import BackendError

ERRORS: tuple[type[Exception], ...] = (BackendError,)


def add_commands(command: Callable[[str, str, str], argparse.ArgumentParser]) -> None:
    emulated = command("deploy-emulated", "deploy with Ansible to the emulated nodes over SSH "
                       "and run one point", "testbed deploy-emulated --variant sctp-ms")
    controller = command("controller", "a step the playbooks run on the controller",
                         "testbed controller tc --up-dev eth1 --down-dev eth0 --rate 1Mbit "
                         "--delay 35ms --out shape.batch")
    emulated.set_defaults(handler=_emulated)
    controller.set_defaults(handler=_controller)


def _emulated(args: argparse.Namespace) -> int:
    from . import emulated
    return emulated.main(args.options)


def _controller(args: argparse.Namespace) -> int:
    from . import controller
    return controller.main(args.options)
