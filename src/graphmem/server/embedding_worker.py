"""The embedding worker: a thread that embeds what the memory has queued, off the request path.

It starts with the server's first tool call, waits a moment more (the model loads once the
client's handshake and first call are answered, not before them), then loops: claim a
batch of waiting texts from the store, embed them, store the vectors. The queue lives in
the store, so a crash loses nothing (the claim expires and the texts are taken up again,
here or by another process on the same memory), and a write never waits for the model.
When nothing waits, the worker looks again each `POLL_SECONDS`, but only if the memory
changed (a cheap version check): a fact written now is found by meaning about
`POLL_SECONDS` plus one batch later (and the batch in hand, if the worker was busy). Texts
another process claimed are looked for again when its claim lapses, which changes nothing in
the memory: that process may have been killed, and its texts would otherwise wait for the
next write. Before each `EMBED_BATCH` texts it lets a burst of the clients' calls pass (up to
a second), so that on a machine of two cores a client's call does not share its core with
the model.

The worker has a connection of its own to the memory: its short transactions (claim,
save) are another writer's, as a second process's would be, so the clients' calls never
queue behind them on one connection, and a client's call that finds the memory locked
is retried exactly as it would be for another process. The embedding itself holds no lock.

The worker outlives any failure of the memory (a database that is down, a disk that is full):
it says so once, in one line, tries again after a pause that grows to `OUTAGE_RETRY_SECONDS`,
and says so again once it can go on. Nothing is lost meanwhile: the texts wait in the store.
"""

from __future__ import annotations

import logging
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from graphmem.core.errors import InvalidInputError, StorageBusyError, StorageError
from graphmem.domain.meaning import EMBED_BATCH, Meaning
from graphmem.storage import Store
from graphmem.storage.vectors import VectorStore

__all__ = [
    "LONGEST_YIELD_SECONDS",
    "OUTAGE_RETRY_SECONDS",
    "POLL_SECONDS",
    "QUIET_SECONDS",
    "START_DELAY_SECONDS",
    "EmbeddingWorker",
]

_log = logging.getLogger("graphmem.embedding")

START_DELAY_SECONDS = 1.0
"""How long after the first call the worker loads the model: the client's first answers come first."""

POLL_SECONDS = 0.25
"""How often an idle worker checks whether the memory changed."""

QUIET_SECONDS = 0.05
"""How long without a client's call counts as a quiet moment for a batch."""

LONGEST_YIELD_SECONDS = 1.0
"""How long a batch waits at most for a quiet moment: a busy server still embeds."""

_LOCK_WAIT_SECONDS = 2.0
"""How long one of the worker's transactions waits for another writer before it tries later."""

_BACKOFF_SECONDS = 30.0
"""How long the worker rests after an unexpected error before trying again."""

_FIRST_RETRY_SECONDS = 0.5
OUTAGE_RETRY_SECONDS = 10.0
"""The longest pause between the worker's attempts while the memory fails (a database that is
down): it starts at half a second and doubles, so the worker goes on within this long of the
memory's return, and asks an unreachable database at most this often."""


class _Outage:
    """Whether the worker is waiting for the memory: one line when it starts waiting, one when it goes on."""

    def __init__(self) -> None:
        self.pause = _FIRST_RETRY_SECONDS
        self._waiting = False

    def failed(self, error: StorageError) -> float:
        """Note a failure (said once per outage); how long to wait before trying again."""
        if not self._waiting:
            self._waiting = True
            _log.warning("search by meaning waits for the memory: %s", error)
        pause = self.pause
        self.pause = min(self.pause * 2, OUTAGE_RETRY_SECONDS)
        return pause

    def over(self) -> None:
        """The memory answered."""
        self.pause = _FIRST_RETRY_SECONDS
        if self._waiting:
            self._waiting = False
            _log.warning("search by meaning goes on: the memory answers again")


WORKER_BATCH = 16 * EMBED_BATCH
"""Texts the worker claims and saves at once: about 4 s of embedding on an idle core, so the
kept answers are dropped about once in 4 s, not 32 times. A client's write cuts the batch
short, so that its texts, the newest, are claimed next."""

SAVE_SECONDS = 5.0
"""A batch that has taken this long is saved as far as it got (and the rest given back): on a
busy machine the vectors still arrive every few seconds, well within the claim's two minutes."""

NICENESS = 10
"""The worker thread's scheduling niceness (Linux): a low priority, so that on a busy machine
the clients' calls get the processor first. Not the lowest (19): beside one busy process the
worker then got about 1% of a core and embedded nothing for minutes (issue 27, item 13)."""


def _lower_priority() -> None:
    """Give the calling thread (the worker's) a low scheduling priority (`NICENESS`), where the OS allows.

    On Linux `setpriority` on a thread's id applies to that thread alone (issue 27, item 13:
    reads slowed several times while the worker embedded on a busy 2-core machine). Elsewhere
    the same call would name a process, so it is not made.
    """
    if sys.platform.startswith("linux"):
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICENESS)
        except OSError:  # a sandbox that forbids it: the worker runs at the server's priority
            _log.debug("could not lower the embedding worker's priority", exc_info=True)


@dataclass
class _Claim:
    """The batch in hand: the memory's version just after it was claimed, and when."""

    version: Hashable | None = None
    started: float | None = None


class EmbeddingWorker:
    """Embeds the memory's waiting texts on a thread of its own until stopped.

    Args:
        meaning: the model.
        connect: opens the worker's own connection to the memory (one that keeps vectors);
            the worker's thread opens it when it starts and closes it as it ends.
        start_delay: seconds to wait before the first batch (and the model's loading).
        last_call: when the clients' last call started or ended (`time.monotonic()`): the
            worker lets a burst of calls pass before each batch, so that it takes no
            processor from them, but waits at most `LONGEST_YIELD_SECONDS` a batch.
    """

    def __init__(
        self,
        meaning: Meaning,
        connect: Callable[[], Store],
        *,
        start_delay: float = START_DELAY_SECONDS,
        last_call: Callable[[], float] | None = None,
    ) -> None:
        self._meaning = meaning
        self._connect = connect
        self._last_call = last_call
        self._start_delay = start_delay
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="graphmem-embedding", daemon=True)
        self._cut = False
        """Whether the last batch was cut short by a client's write."""

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop after the batch in hand (its vectors are stored, or its claim given back); the
        worker closes its connection itself as it ends."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        _lower_priority()
        if self._stopping.wait(self._start_delay):
            return
        outage = _Outage()
        store = self._open(outage)
        if store is None:
            return
        try:
            if not isinstance(store, VectorStore):
                return
            # Waiting for another writer's lock costs the worker nothing but time; a short
            # wait still lets it stop promptly.
            store.wait_for_locks(_LOCK_WAIT_SECONDS)
            self._work(store, store, outage)
        finally:
            store.close()

    def _open(self, outage: _Outage) -> Store | None:
        """The worker's connection, tried again until the memory can be opened; None when stopped first."""
        while True:
            try:
                store = self._connect()
            except StorageError as error:  # the database is down: the worker waits for it
                if self._stopping.wait(outage.failed(error)):
                    return None
            else:
                outage.over()
                return store

    def _work(self, store: Store, vectors: VectorStore, outage: _Outage) -> None:
        try:
            # The index of the vectors already stored is read here, not on the first search.
            vectors.warm_vectors()
        except StorageError as error:  # a search reads it then
            _log.warning("could not read the vector index ahead of the first search: %s", error)
        except Exception:  # a search reads it then
            _log.warning("could not read the vector index ahead of the first search", exc_info=True)
        idle_at: Hashable | None = None
        look_again_at = math.inf
        while not self._stopping.is_set() and self._meaning.enabled:
            try:
                version = store.version()
                if version is not None and version == idle_at and time.monotonic() < look_again_at:
                    outage.over()
                    self._stopping.wait(POLL_SECONDS)
                    continue
                if self._one_batch(store, vectors):
                    idle_at = None
                else:
                    # The version read before the claim: a write after it is looked for next time.
                    idle_at = version
                    look_again_at = _when_a_claim_lapses(vectors)
                outage.over()
            except InvalidInputError:  # the model could not be loaded: meaning is off (and logged)
                return
            except StorageBusyError:  # other writers kept the memory busy: try again shortly
                self._stopping.wait(POLL_SECONDS)
            except StorageError as error:  # the database down, the disk full: said once, tried again
                self._stopping.wait(outage.failed(error))
            except Exception:  # a bug: the worker must outlive it; the next write retries
                _log.warning("embedding paused for %.0f s after an error", _BACKOFF_SECONDS, exc_info=True)
                self._stopping.wait(_BACKOFF_SECONDS)

    def _yield_to_clients(self) -> None:
        if self._last_call is None:
            return
        deadline = time.monotonic() + LONGEST_YIELD_SECONDS
        while (now := time.monotonic()) < deadline and now - self._last_call() < QUIET_SECONDS:
            if self._stopping.wait(QUIET_SECONDS):
                return

    def _pause(self, store: Store, claim: _Claim, *, yielding: bool = True) -> bool:
        """Between slices of a batch: tell whether to cut the batch short, then let the clients'
        calls pass. A batch is cut at once when another connection committed since the claim (a
        client's write: what is done is saved, and its texts, the newest, go next), and after
        `SAVE_SECONDS` (a slow machine still saves as it goes). The small batch after a cut does
        not wait for the clients: it holds the texts a client just wrote, and is soon done."""
        if claim.started is not None:
            version = store.version()
            if version is None or version != claim.version:
                self._cut = True
                return True
            if time.monotonic() - claim.started > SAVE_SECONDS:
                return True
        if yielding:
            self._yield_to_clients()
        if claim.started is None:  # the first pause comes right after the claim's commit
            claim.version, claim.started = store.version(), time.monotonic()
        return False

    def _one_batch(self, store: Store, vectors: VectorStore) -> bool:
        """Embed one batch on the worker's connection; False when nothing was waiting.

        The batch is claimed and saved in one commit each, and the clients' calls pass before
        each `EMBED_BATCH` of it: every commit by the worker makes the server drop the answers
        it keeps (the memory's version moves), so few commits keep the searches an agent
        repeats cheap (issue 27, item 13). The yield comes after the claim, so that the claim
        follows the last batch's save at once, and the two drop the kept answers once.
        """
        claim = _Claim()
        # After a cut, the client's new texts (claimed first, being the newest) are saved
        # after one slice, not after a whole batch's.
        after_a_cut, self._cut = self._cut, False
        taken = self._meaning.embed_pending(
            EMBED_BATCH if after_a_cut else WORKER_BATCH,
            vectors=vectors,
            abandon=self._stopping.is_set,
            pause=lambda: self._pause(store, claim, yielding=not after_a_cut),
        )
        return taken > 0


def _when_a_claim_lapses(vectors: VectorStore) -> float:
    """When (`time.monotonic()`) the soonest claim another process holds lapses; infinity when none is held."""
    lapses_in = vectors.seconds_until_a_claim_lapses()
    return math.inf if lapses_in is None else time.monotonic() + max(lapses_in, POLL_SECONDS)
