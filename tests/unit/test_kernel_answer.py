"""The host reading a kept kernel's answer (experiments/onhost/kernel_session.py): an answer
whose bytes have not reached the host yet is waited for while the kernel lives, and is a
failed batch, not a traceback, once the kernel is dead."""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from experiments.inkernel.kernel_inbox import DONE, write_atomically
from experiments.onhost.kernel_session import KernelSession


def session_on(folder: Path, thread: threading.Thread) -> KernelSession:
    session = KernelSession.__new__(KernelSession)   # no kernel booted: the reading alone
    session.folder, session.thread, session.error = folder, thread, None
    session.result = None
    return session


def test_an_empty_answer_of_a_dead_kernel_is_a_failed_batch(tmp_path):
    dead = threading.Thread(target=lambda: None)
    dead.start()
    dead.join()
    (tmp_path / DONE).write_text("")
    answer = session_on(tmp_path, dead)._read_answer(tmp_path / DONE)
    assert answer["status"] == 1
    assert "before its answer for the batch reached the host" in answer["error"]


def test_an_answer_still_on_its_way_is_waited_for(tmp_path):
    release = threading.Event()
    alive = threading.Thread(target=release.wait)
    alive.start()
    done = tmp_path / DONE
    done.write_text("")

    def arrive() -> None:
        time.sleep(0.3)
        done.write_text(json.dumps({"status": 0}))
    writer = threading.Thread(target=arrive)
    writer.start()
    try:
        assert session_on(tmp_path, alive)._read_answer(done) == {"status": 0}
    finally:
        release.set()
        writer.join()
        alive.join()


def test_an_answer_is_written_whole_under_its_name(tmp_path):
    write_atomically(tmp_path / DONE, json.dumps({"status": 0, "error": None}))
    assert json.loads((tmp_path / DONE).read_text()) == {"status": 0, "error": None}
    assert sorted(p.name for p in tmp_path.iterdir()) == [DONE]
