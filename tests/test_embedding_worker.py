"""The embedding worker on its own: what it takes up without a client's write to wake it.

Run on SQLite and on PostgreSQL (skipped, with the reason, where no server can be had),
with a stand-in model: what is tested is when the worker looks, not what the model says.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from graphmem.config import Settings
from graphmem.core.errors import StorageError
from graphmem.core.models import Entity
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.meaning import Meaning
from graphmem.server.embedding_worker import EmbeddingWorker
from graphmem.storage import Store, open_store
from graphmem.storage.vectors import VectorStore

# Generous on two busy cores; the claims below lapse after 2 s.
_EMBEDDED_WITHIN_SECONDS = 20.0


class _HashEmbedder:
    """Unit vectors of the model's length, one per text, made from the text's hash."""

    fingerprint = "test-hash-embedder"

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        rows = [np.frombuffer(hashlib.shake_256(text.encode()).digest(384 * 4), dtype=np.uint32) for text in texts]
        vectors = np.array(rows, dtype=np.float32) - 2**31
        return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(params=["sqlite", "postgres"])
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    """A new memory that keeps vectors: a SQLite file, and a PostgreSQL memory on the test server."""
    if request.param == "postgres":
        return Settings(database_url=request.getfixturevalue("postgres_url"))
    return Settings(memory_path=tmp_path / "memory.db")


def test_texts_a_killed_process_had_claimed_are_embedded_once_its_claim_lapses_with_no_write_after(settings: Settings):
    store = open_store(settings)
    assert isinstance(store, VectorStore)
    worker: EmbeddingWorker | None = None
    try:
        KnowledgeGraph(store).create_entities([Entity("Ada", "person", ("writes programs", "reads proofs"))])
        store.use_model(_HashEmbedder.fingerprint)
        # Another process claims every waiting text for 2 s, and dies holding the claim.
        other = open_store(settings, background=True)
        assert isinstance(other, VectorStore)
        assert len(other.claim_texts(10, lease_seconds=2.0)) == 3
        other.close()
        # The worker finds every text claimed; nothing is written afterwards.
        worker = EmbeddingWorker(
            Meaning(_HashEmbedder, store), partial(open_store, settings, background=True), start_delay=0
        )
        worker.start()
        deadline = time.monotonic() + _EMBEDDED_WITHIN_SECONDS
        while store.vector_progress().waiting:
            assert time.monotonic() < deadline, "the texts of the lapsed claim were never embedded"
            time.sleep(0.1)
        assert store.vector_progress().embedded == 3
    finally:
        if worker is not None:
            worker.stop()
        store.close()


def test_a_store_says_how_long_until_the_soonest_claim_lapses_and_none_when_nothing_is_claimed(settings: Settings):
    store = open_store(settings)
    assert isinstance(store, VectorStore)
    try:
        KnowledgeGraph(store).create_entities([Entity("Ada", "person", ("writes programs",))])
        assert store.seconds_until_a_claim_lapses() is None
        claimed = store.claim_texts(1, lease_seconds=60.0)
        store.claim_texts(1, lease_seconds=600.0)
        lapses_in = store.seconds_until_a_claim_lapses()
        assert lapses_in is not None and 50.0 < lapses_in <= 60.0
        store.release_texts(claimed)
        lapses_in = store.seconds_until_a_claim_lapses()
        assert lapses_in is not None and 550.0 < lapses_in <= 600.0
        store.claim_texts(1, lease_seconds=0.0)
        assert store.seconds_until_a_claim_lapses() == 0.0
    finally:
        store.close()


def test_a_worker_whose_memory_cannot_be_opened_at_first_says_so_once_and_embeds_once_it_can(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    settings = Settings(memory_path=tmp_path / "memory.db")
    store = open_store(settings)
    assert isinstance(store, VectorStore)
    attempts = 0

    def connect() -> Store:
        nonlocal attempts
        attempts += 1
        if attempts <= 3:
            raise StorageError("The memory database failed (disk I/O error); nothing was changed.")
        return open_store(settings, background=True)

    worker = EmbeddingWorker(Meaning(_HashEmbedder, store), connect, start_delay=0)
    try:
        KnowledgeGraph(store).create_entities([Entity("Ada", "person", ("writes programs",))])
        worker.start()
        deadline = time.monotonic() + _EMBEDDED_WITHIN_SECONDS
        while store.vector_progress().waiting:
            assert time.monotonic() < deadline, "the worker never embedded after its memory could be opened"
            time.sleep(0.1)
    finally:
        worker.stop()
        store.close()
    lines = [record for record in caplog.records if record.name == "graphmem.embedding"]
    assert [record.getMessage() for record in lines] == [
        "search by meaning waits for the memory: The memory database failed (disk I/O error); nothing was changed.",
        "search by meaning goes on: the memory answers again",
    ]
    assert [record.exc_info for record in lines] == [None, None]
