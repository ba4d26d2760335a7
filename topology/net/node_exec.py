"""Running commands on Mininet nodes with their exit status checked, not just printed."""
from __future__ import annotations

import shlex
import subprocess
from typing import Sequence

from mininet.node import Node


class NodeCommandError(RuntimeError):
    pass


def run(node: Node, argv: Sequence[str], stdin: str | None = None) -> str:
    """Run argv in node's namespaces; return stdout; raise with stderr when it fails."""
    proc = node.popen(list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE)
    out, err = proc.communicate(stdin.encode() if stdin is not None else None)
    if proc.returncode != 0:
        raise NodeCommandError(
            f"{node.name}: `{shlex.join(argv)}` failed ({proc.returncode}): "
            f"{err.decode(errors='replace').strip()}")
    return out.decode(errors="replace")


def run_script(node: Node, commands: Sequence[Sequence[str]]) -> None:
    """Run several commands in one shell process (cheap inside the pinned kernel, where every
    process start costs milliseconds); stops at the first failure and reports it."""
    if not commands:
        return
    script = "set -e\n" + "\n".join(shlex.join(c) for c in commands) + "\n"
    run(node, ["sh", "-c", script])


def tc_batch(node: Node, lines: Sequence[str]) -> None:
    """Apply tc commands (without the leading 'tc') in one tc process."""
    if lines:
        run(node, ["tc", "-batch", "-"], stdin="\n".join(lines) + "\n")
