"""Running commands on Mininet nodes with their exit status checked, not just printed.

Inside the pinned kernel a fork of this (large) Python process costs tens of milliseconds, so
commands that set up and change links go through the node's own long-lived shell instead."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import tempfile
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mininet.node import Node

_STATUS = re.compile(r"__testbed_status=(\d+)\s*$")


class NodeCommandError(RuntimeError):
    pass


def run(node: Node, argv: Sequence[str], stdin: str | None = None) -> str:
    """Run argv in node's namespaces as a new process; return stdout; raise when it fails."""
    proc = node.popen(list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE)
    out, err = proc.communicate(stdin.encode() if stdin is not None else None)
    if proc.returncode != 0:
        raise NodeCommandError(
            f"{node.name}: `{shlex.join(argv)}` failed ({proc.returncode}): "
            f"{err.decode(errors='replace').strip()}")
    return out.decode(errors="replace")


def _in_shell(node: Node, command: str, content: str, what: str) -> str:
    """Write content to a file, run `command FILE` in the node's shell, check its status."""
    handle, name = tempfile.mkstemp(prefix="testbed-", suffix=".txt")
    try:
        with os.fdopen(handle, "w") as out:
            out.write(content)
        output = node.cmd(f"{command} {shlex.quote(name)} 2>&1; echo __testbed_status=$?")
    finally:
        os.unlink(name)
    match = _STATUS.search(output)
    if not match:
        raise NodeCommandError(f"{node.name}: no status from {what}: {output.strip()}")
    text = output[:match.start()].replace("\r\n", "\n").strip()
    if match.group(1) != "0":
        raise NodeCommandError(f"{node.name}: {what} failed ({match.group(1)}): {text}\n"
                               f"--- input ---\n{content}")
    return text


def run_script(node: Node, commands: Sequence[Sequence[str]]) -> None:
    """Run several commands in order in the node's shell; stop at the first failure."""
    if commands:
        _in_shell(node, "sh -e", "\n".join(shlex.join(c) for c in commands) + "\n",
                  "setup commands")


def tc_batch(node: Node, lines: Sequence[str]) -> None:
    """Apply tc commands (without the leading 'tc') in one tc process."""
    if lines:
        _in_shell(node, "tc -batch", "\n".join(lines) + "\n", "tc")
