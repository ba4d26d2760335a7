"""The process that writes one router's scheduled link changes at their instants (schedule.py
starts it in the router's namespaces). A process of its own, so that nothing the harness does
meanwhile (starting the run's programs, waiting for them) holds the changes back.

Its standard input gives, a line each: the plan (JSON: a list of [index, at_s, tc text]), then
the start instant on CLOCK_MONOTONIC. It starts `tc -force -batch -`, says `ready` once, and
at each instant writes that change's lines to tc, which applies them as it reads them. Its
standard input closing stops it: it closes tc's input, waits for tc and prints what it wrote
and when, as JSON.

    python3 -m topology.net.schedule_apply"""
from __future__ import annotations

import json
import select
import subprocess
import sys
import time
from typing import Any, TextIO


def main(stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout) -> int:
    plan = json.loads(stdin.readline())
    tc = subprocess.Popen(["tc", "-force", "-batch", "-"], stdin=subprocess.PIPE,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    print("ready", file=stdout, flush=True)
    start = float(stdin.readline())
    applied: list[list[Any]] = []
    error = ""
    assert tc.stdin is not None
    for index, at_s, text in plan:
        wait = start + at_s - time.monotonic()
        if wait > 0 and select.select([stdin], [], [], wait)[0]:
            break                       # the run ended: the rest are not due
        try:
            tc.stdin.write(text)
            tc.stdin.flush()
        except OSError as failed:
            error = f"tc stopped reading: {failed}"
            break
        applied.append([index, time.monotonic() - start])
    if not error:
        select.select([stdin], [], [])  # until the run ends
    tc.stdin.close()
    tc_error = tc.stderr.read() if tc.stderr else ""
    tc.wait()
    print(json.dumps({"applied": applied, "tc_returncode": tc.returncode,
                      "error": error or tc_error.strip()}), file=stdout, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
