"""Search by meaning: the model behind it, loaded on first need, and the texts it embeds.

What is embedded is what can answer a question: each observation as it is written, and
each entity's name with its aliases ("Bob Martinez (Robert Martinez, Bobby)"), so that a
question naming the entity another way finds it. The store queues every text written
(`storage.vectors`); `embed_pending` takes a batch from that queue, embeds it and hands
the vectors back, and is all a worker does, in a loop, off the request path.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Protocol

from graphmem.core.errors import GraphmemError, InvalidInputError
from graphmem.domain.search import STOPWORDS
from graphmem.storage.vectors import ENTITY_TEXT, EmbeddedText, PendingText, VectorStore

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["CLAIM_SECONDS", "EMBED_BATCH", "Meaning", "TextEmbedder", "embedding_text"]

_log = logging.getLogger("graphmem.embedding")

EMBED_BATCH = 32
"""Texts embedded at a time: large enough that the model runs at its batch speed, small
enough that a search waiting for the processor meanwhile waits a fraction of a second."""

QUERIES_KEPT = 256
"""How many recent queries' vectors are kept (1.5 KB each)."""

MEANINGFUL_LETTERS = 3
"""The shortest word that counts as a query's content for the model ("fe", "x" do not)."""

CLAIM_SECONDS = 120.0
"""How long a batch of texts stays claimed by the process embedding it: long past a
batch's time, short enough that a crashed process's claim is soon taken up by another."""


class TextEmbedder(Protocol):
    """A sentence-embedding model (graphmem.embedding.Embedder)."""

    @property
    def fingerprint(self) -> str:
        """The model and its weights, stored beside the vectors it made."""
        ...

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Unit vectors for the texts, one row each."""
        ...

    def whole_words(self, text: str) -> list[str]:
        """The words of `text` the model's vocabulary holds whole, lower-case."""
        ...


def embedding_text(pending: PendingText) -> str:
    """The text embedded for a queued row: an observation as written; an entity's name and aliases."""
    if pending.kind == ENTITY_TEXT and pending.aliases:
        return f"{pending.text} ({', '.join(pending.aliases)})"
    return pending.text


class Meaning:
    """Whether this memory is searched by meaning, and the model, loaded once on first need.

    Args:
        load: loads the model (it reads about 90 MB and takes a fraction of a second), or
            None when search by meaning is off.
        store: the memory's store, if it keeps vectors (SQLite; PostgreSQL with pgvector); a JSONL
            file does not.
    """

    def __init__(self, load: Callable[[], TextEmbedder] | None, store: object) -> None:
        self._load = load
        self._model: TextEmbedder | None = None
        self._lock = threading.Lock()
        self._model_recorded = False
        self._query_cache: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()
        self._query_cache_lock = threading.Lock()
        self._query_thread: ThreadPoolExecutor | None = None
        self.vectors: VectorStore | None = store if isinstance(store, VectorStore) else None
        self.why_off = "it is turned off"
        """What a caller that asks for meaning while it is off is told."""
        if load is not None and self.vectors is None:
            self.why_off = "this memory is a JSONL file, which keeps no vectors: search by meaning needs a .db memory"
        elif load is not None and self.vectors is not None and self.vectors.why_no_vectors is not None:
            # PostgreSQL without pgvector: every tool works, and searches go by words only.
            self.why_off = self.vectors.why_no_vectors
            self.vectors = None

    @property
    def enabled(self) -> bool:
        """Search by meaning is on for this memory (the model may not be loaded yet)."""
        return self._load is not None and self.vectors is not None

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def model(self) -> TextEmbedder:
        """The model, loaded now if it was not yet (it touches no store: load it on any thread).

        Raises:
            InvalidInputError: search by meaning is off for this memory.
        """
        if self._model is not None:
            return self._model
        with self._lock:
            if self._model is None:
                if not self.enabled or self._load is None:
                    raise self.unavailable()
                try:
                    self._model = self._load()
                except GraphmemError as error:  # the model's package is missing or damaged
                    self._load = None
                    self.why_off = f"the model could not be loaded ({error})"
                    _log.warning("search by meaning is off: %s", error)
                    raise self.unavailable() from error
        return self._model

    def unavailable(self) -> InvalidInputError:
        """The error a search by meaning only gets while meaning is off."""
        return InvalidInputError("mode", f'cannot be "semantic": {self.why_off}. Use "lexical" or "hybrid".')

    def query_vectors(self, queries: Sequence[str], *, required: bool) -> list[npt.NDArray[np.float32]] | None:
        """The queries' vectors, or None when meaning is off and not `required`.

        Raises:
            InvalidInputError: meaning is off and `required`.
        """
        if not self.enabled and not required:
            return None
        try:
            model = self.model()
        except InvalidInputError:
            if required:
                raise
            return None
        # Agents repeat their searches; a query's vector costs milliseconds, a look-up nothing.
        with self._query_cache_lock:
            known = {text: self._query_cache[text] for text in queries if text in self._query_cache}
        missing = [text for text in dict.fromkeys(queries) if text not in known]
        if missing:
            for text, vector in zip(missing, model.embed(missing), strict=True):
                vector.setflags(write=False)
                known[text] = vector
        with self._query_cache_lock:
            for text in queries:
                self._query_cache[text] = known[text]
                self._query_cache.move_to_end(text)
            while len(self._query_cache) > QUERIES_KEPT:
                self._query_cache.popitem(last=False)
        return [known[text] for text in queries]

    def query_vectors_soon(self, queries: Sequence[str]) -> Future[list[npt.NDArray[np.float32]] | None]:
        """`query_vectors(queries, required=False)`, computed on a thread of its own, starting now.

        A hybrid search embeds its query while the word search runs: numpy and SQLite both
        let go of the interpreter, so on two cores the search costs the longer of the two
        rather than their sum. An answer the words alone settle leaves the vector to finish
        unread; it is kept like any other, for the next search.
        """
        if not self.enabled:
            done: Future[list[npt.NDArray[np.float32]] | None] = Future()
            done.set_result(None)
            return done
        with self._lock:
            if self._query_thread is None:
                self._query_thread = ThreadPoolExecutor(1, "graphmem-query")
        return self._query_thread.submit(self.query_vectors, queries, required=False)

    def knows_a_word(self, queries: Sequence[str]) -> bool:
        """Whether any query has a content word the model knows whole (see `fusion.meaning_counts`)."""
        model = self.model()
        return any(
            len(word) >= MEANINGFUL_LETTERS and word.isalpha() and word not in STOPWORDS
            for text in queries
            for word in model.whole_words(text)
        )

    @property
    def fingerprint(self) -> str:
        return self.model().fingerprint

    def embed_pending(
        self,
        batch: int = EMBED_BATCH,
        *,
        vectors: VectorStore | None = None,
        abandon: Callable[[], bool] | None = None,
        pause: Callable[[], bool] | None = None,
    ) -> int:
        """Embed one batch of waiting texts here and now; how many it took (0: none is waiting
        that another process is not already embedding).

        Args:
            vectors: the connection to claim and save through (a worker's own); by default
                the memory's store.
            abandon: asked once the batch is embedded: True gives the claim back unsaved (a
                worker that is stopping).
            pause: called before each `EMBED_BATCH` texts of the batch are embedded (a worker
                lets the clients' calls pass there); True cuts the batch short: what is
                embedded is saved, the rest given back (a client wrote: its texts go first).
                The batch is claimed and saved once, in two commits, whatever its size.
        """
        store = vectors if vectors is not None else self.vectors
        if store is None or not self.enabled:
            return 0
        if not self._model_recorded:
            # Vectors another model made cannot be compared with this one's: if there are
            # any, they are dropped and every text waits again, before the first claim.
            store.use_model(self.model().fingerprint)
            self._model_recorded = True
        pending = store.claim_texts(batch, CLAIM_SECONDS)
        if not pending:
            return 0
        embedded: list[npt.NDArray[np.float32]] = []
        try:
            texts = [embedding_text(text) for text in pending]
            for start in range(0, len(texts), EMBED_BATCH):
                if pause is not None and pause() and embedded:
                    break
                embedded.extend(self.model().embed(texts[start : start + EMBED_BATCH]))
                if abandon is not None and abandon():
                    raise InterruptedError
        except BaseException:
            store.release_texts(pending)
            if abandon is not None and abandon():
                return 0
            raise
        done = pending[: len(embedded)]
        store.save_vectors([EmbeddedText(text, vector) for text, vector in zip(done, embedded, strict=True)])
        if len(done) < len(pending):
            store.release_texts(pending[len(done) :])
        return len(done)
