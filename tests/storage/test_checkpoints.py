"""The checkpoint thread of a SQLite store: closing the store always ends it."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from graphmem.storage.sqlite.checkpoints import Checkpointer


class _CloseLandsBeforeClear(threading.Event):
    """The thread's "checkpoint due" event; its first clear waits until close() has signalled.

    This pins the one interleaving that lost close's wake-up: the thread's settle wait
    times out, close() sets "stopping" and "due", and only then does the thread clear "due".
    """

    def __init__(self, checkpointer: Checkpointer) -> None:
        super().__init__()
        self._checkpointer = checkpointer
        self.clearing = threading.Event()
        self._first = True

    def clear(self) -> None:
        if self._first:
            self._first = False
            self.clearing.set()
            # close() sets "stopping" and "due" under this lock, then joins the thread.
            self._checkpointer._stopping.wait(5)
            with self._checkpointer._lock:
                pass
        super().clear()


def test_closing_while_the_thread_clears_a_request_ends_the_thread(tmp_path: Path):
    path = tmp_path / "memory.db"
    sqlite3.connect(path).close()
    checkpointer = Checkpointer(str(path), busy_timeout=5)
    due = _CloseLandsBeforeClear(checkpointer)
    checkpointer._due = due
    checkpointer.request()
    assert due.clearing.wait(5), "the thread never took the request"
    closer = threading.Thread(target=checkpointer.close, daemon=True)
    closer.start()
    closer.join(10)
    assert not closer.is_alive(), "close() waited forever for the checkpoint thread"
