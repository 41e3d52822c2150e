"""The embedding worker gives way to the clients' reads (issue 27, item 13): its thread runs at
a low scheduling priority, its connection's commits of derived data cost no fsync and
wake no checkpoint thread, and it commits seldom, since each commit drops the server's kept
answers. Speed itself is measured by benchmarks/embedding_load.py."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from graphmem.config import Settings
from graphmem.core.models import Entity
from graphmem.domain.meaning import EMBED_BATCH, Meaning
from graphmem.server import embedding_worker
from graphmem.server.embedding_worker import EmbeddingWorker
from graphmem.storage import open_store
from graphmem.storage.sqlite.store import SQLiteStore
from graphmem.storage.vectors import PendingText

# The worker's batch (server/embedding_worker.py), named here so that this file also runs
# against the code from before it.
WORKER_BATCH = 256


def _niceness_of(thread: threading.Thread) -> int | None:
    assert thread.native_id is not None
    return os.getpriority(os.PRIO_PROCESS, thread.native_id)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread priority is a Linux feature")
def test_the_embedding_worker_thread_runs_at_a_low_priority_and_the_server_s_threads_do_not(tmp_path: Path):
    store = open_store(Settings(memory_path=tmp_path / "memory.db"))
    own = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    worker = EmbeddingWorker(Meaning(lambda: None, store), lambda: store, start_delay=60)  # type: ignore[arg-type, return-value]
    worker.start()
    try:
        thread = worker._thread
        deadline = time.monotonic() + 5
        while _niceness_of(thread) != 10 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _niceness_of(thread) == 10
        assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == own
    finally:
        worker.stop()
        store.close()


def _synchronous(store: SQLiteStore) -> int:
    return int(store._conn.execute("PRAGMA synchronous").fetchone()[0])


def _checkpoint_threads() -> int:
    return sum(1 for thread in threading.enumerate() if thread.name == "graphmem-checkpoints")


def test_the_worker_s_connection_commits_vectors_unsynced_and_wakes_no_checkpoint_thread(tmp_path: Path):
    settings = Settings(memory_path=tmp_path / "memory.db")
    served = open_store(settings)
    assert isinstance(served, SQLiteStore)
    background = open_store(settings, background=True)
    assert isinstance(background, SQLiteStore)
    before = _checkpoint_threads()
    try:
        assert _synchronous(served) == 2  # FULL: a client's write is on disk when it answers
        assert _synchronous(background) == 1  # NORMAL: a lost vector is only embedded again
        background.use_model("a model")
        background.release_texts([PendingText(0, 1, "Ada", "Ada")])
        with background.read():
            background.counts()
        assert _synchronous(background) == 1
        assert _checkpoint_threads() == before
    finally:
        background.close()
        served.close()


class _CountingModel:
    """A stand-in for the model: the same unit vector for every text, and how many calls it got."""

    fingerprint = "counting/1"

    def __init__(self, on_call=None) -> None:
        self.calls: list[int] = []
        self.texts: list[list[str]] = []
        self.times: list[float] = []
        self._on_call = on_call

    def embed(self, texts):
        import numpy as np

        self.calls.append(len(texts))
        self.texts.append(list(texts))
        self.times.append(time.monotonic())
        if self._on_call is not None:
            self._on_call(len(self.calls))
        return np.full((len(texts), 384), 1 / np.sqrt(384), dtype=np.float32)


def _embed_until(settings: Settings, served: Any, model: _CountingModel, *, calls: int, busy: bool = False) -> None:
    """Run a worker (on a connection of its own, as a server's) until the model was called
    `calls` times (30 s at most), then stop it and close `served`. `busy`: the clients' calls
    never pause (an agent polling a search), so every yield to them lasts its longest."""
    background = open_store(settings, background=True)
    last_call = time.monotonic if busy else (lambda: 0.0)
    worker = EmbeddingWorker(Meaning(lambda: model, served), lambda: background, start_delay=0, last_call=last_call)
    worker.start()
    try:
        deadline = time.monotonic() + 30
        while len(model.calls) < calls and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        worker.stop()
    served.close()


def test_the_worker_claims_and_saves_a_large_backlog_in_few_commits_letting_calls_pass_between_slices(tmp_path: Path):
    settings = Settings(memory_path=tmp_path / "memory.db")
    served = open_store(settings)
    with served.write():
        served.insert_entities([Entity(name=f"E{i}", entity_type="t", observations=[]) for i in range(WORKER_BATCH)])
    model = _CountingModel()
    meaning = Meaning(lambda: model, served)
    background = open_store(settings, background=True)
    worker = EmbeddingWorker(meaning, lambda: background, start_delay=0, last_call=lambda: 0.0)
    worker.start()
    try:
        deadline = time.monotonic() + 30
        while sum(model.calls) < WORKER_BATCH and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        worker.stop()
    assert served.vector_progress().waiting == 0  # type: ignore[attr-defined]
    # Every worker commit makes the server drop its kept answers: the model's record, one
    # claim and one save for the whole backlog (it was a claim and a save every 32 texts).
    assert background.committed_writes() == 3
    assert model.calls == [EMBED_BATCH] * (WORKER_BATCH // EMBED_BATCH)
    served.close()


def test_a_batch_cut_short_saves_what_it_embedded_and_gives_the_rest_back_at_once(tmp_path: Path):
    store = open_store(Settings(memory_path=tmp_path / "memory.db"))
    with store.write():
        store.insert_entities([Entity(name=f"E{i}", entity_type="t", observations=[]) for i in range(100)])
    model = _CountingModel()
    meaning = Meaning(lambda: model, store)
    pauses: list[int] = []

    def pause() -> bool:
        # As the worker's pause does once a client has written: before the third slice.
        pauses.append(len(pauses))
        return len(pauses) == 3

    assert meaning.embed_pending(100, pause=pause) == 2 * EMBED_BATCH
    progress = store.vector_progress()  # type: ignore[attr-defined]
    assert (progress.embedded, progress.waiting) == (2 * EMBED_BATCH, 100 - 2 * EMBED_BATCH)
    # Given back, not left claimed for two minutes: the next batch takes them at once.
    assert meaning.embed_pending(100) == 100 - 2 * EMBED_BATCH
    store.close()


def test_a_fact_written_while_the_worker_embeds_a_backlog_is_saved_after_one_more_slice(tmp_path: Path):
    settings = Settings(memory_path=tmp_path / "memory.db")
    served = open_store(settings)
    with served.write():
        served.insert_entities([Entity(name=f"E{i}", entity_type="t", observations=[]) for i in range(600)])
    seen_at_third_call: list[int] = []

    def client(call: int) -> None:
        if call == 1:  # a client writes while the first slice of a large batch is embedded
            with served.write():
                served.insert_entities([Entity(name="Fresh", entity_type="t", observations=[])])
        if call == 3:
            seen_at_third_call.append(served.vector_progress().embedded)  # type: ignore[attr-defined]

    model = _CountingModel(client)
    _embed_until(settings, served, model, calls=3)
    # The batch in hand was cut after its first slice; the next, small, took the newest text.
    assert "Fresh" in model.texts[1]
    assert seen_at_third_call == [2 * EMBED_BATCH]


def test_a_batch_that_takes_long_is_saved_as_far_as_it_got(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # A machine so busy that every slice takes longer than the worker waits between saves.
    monkeypatch.setattr(embedding_worker, "SAVE_SECONDS", 0.0)
    settings = Settings(memory_path=tmp_path / "memory.db")
    served = open_store(settings)
    with served.write():
        served.insert_entities([Entity(name=f"E{i}", entity_type="t", observations=[]) for i in range(600)])
    seen_at_second_call: list[int] = []

    def check(call: int) -> None:
        if call == 2:
            seen_at_second_call.append(served.vector_progress().embedded)  # type: ignore[attr-defined]

    model = _CountingModel(check)
    _embed_until(settings, served, model, calls=2)
    assert seen_at_second_call == [EMBED_BATCH]


def test_the_texts_a_client_just_wrote_are_embedded_without_waiting_for_the_clients_to_pause(tmp_path: Path):
    # An agent that writes and then polls a search keeps the clients busy: the batch in hand is
    # cut at once (not after a wait for a quiet moment), and the small batch of the write's own
    # texts does not wait either (it took two such waits, about 2 s, before).
    settings = Settings(memory_path=tmp_path / "memory.db")
    served = open_store(settings)
    with served.write():
        served.insert_entities([Entity(name=f"E{i}", entity_type="t", observations=[]) for i in range(600)])

    def client(call: int) -> None:
        if call == 2:
            with served.write():
                served.insert_entities([Entity(name="Fresh", entity_type="t", observations=[])])

    model = _CountingModel(client)
    _embed_until(settings, served, model, calls=3, busy=True)
    assert "Fresh" in model.texts[2]
    assert model.times[2] - model.times[1] < embedding_worker.LONGEST_YIELD_SECONDS / 2
