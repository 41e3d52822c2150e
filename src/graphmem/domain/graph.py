"""KnowledgeGraph: the domain rules of the memory, over any `Store`.

The class is put together from focused parts, each in its module: `Checks` (checks.py)
refuses arguments over the limits; `Reads` (reading.py), `Writes` (writing.py) and
`Searches` (searching.py) build on it. Nothing else here: this module only names them.

It holds what the official server does (exact, case-sensitive names; dedup of
entities by name and relations by key; cascade on delete; add_observations on a
missing entity fails whole) and the fixes graphmem adds (duplicates within one
batch stored once, first wins; what was skipped or missing is reported; limits).
Every public method is one store transaction, so a call is all-or-nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import cast

from graphmem.core.limits import Limits
from graphmem.core.projects import EVERY, Scope
from graphmem.domain.change_log import RecordingStore
from graphmem.domain.fusion import Fusion
from graphmem.domain.meaning import EMBED_BATCH, Meaning, TextEmbedder
from graphmem.domain.searching import RankedNames, Searches
from graphmem.domain.secret_policy import Policy, Redaction
from graphmem.domain.writing import CreatedEntities, CreatedRelations, Writes
from graphmem.storage.base import Store

__all__ = ["LIBRARY", "CreatedEntities", "CreatedRelations", "KnowledgeGraph", "RankedNames"]

LIBRARY = "graphmem"
"""What a change is made through when no tool or command says (graphmem used as a library)."""


class KnowledgeGraph(Writes, Searches):
    """The memory as the tools see it.

    Args:
        store: where the graph lives.
        strict: reject relations whose endpoints do not exist, instead of accepting them
            with a notice as the official server does.
        limits: the per-call limits to enforce.
        embedder: the sentence-embedding model for search by meaning.
        load_embedder: what loads the model on first need (a server starts without it);
            with neither, search by meaning is off.
        fusion: how a hybrid search weighs words against meaning.
    """

    def __init__(
        self,
        store: Store,
        *,
        strict: bool = False,
        limits: Limits | None = None,
        embedder: TextEmbedder | None = None,
        load_embedder: Callable[[], TextEmbedder] | None = None,
        fusion: Fusion | None = None,
    ) -> None:
        # Every write goes through the recorder, which logs it (change_log.py).
        self._recorder = RecordingStore(store, lambda: (self.author, self.via))
        self.store: Store = cast(Store, self._recorder)
        self.strict = strict
        self.author: str | None = None
        """Who the calls made now are made by (`authored_by`); None: nobody named."""
        self.history_days: int | None = None
        """How many days of the change log `compact` keeps; None: all of it."""
        self.via = LIBRARY
        """What the calls made now are made through (`through`): a tool's name or a command."""
        self.scope: Scope = EVERY
        """What the calls made now see and where they create (`working_in`; graphmem.core.projects)."""
        self.reach: tuple[str, ...] | None = None
        """The projects the caller may reach (its token's), or None for every one (`working_in`)."""
        self.limits = limits or Limits()
        self._indexed = None
        if embedder is not None:
            load_embedder = lambda: embedder  # noqa: E731 - the model is already loaded
        self.meaning = Meaning(load_embedder, store)
        self.fusion = fusion or Fusion()

    @contextmanager
    def authored_by(self, author: str | None) -> Iterator[None]:
        """Record `author` (a team member's token name) as the maker of the changes made in the block.

        New observation records get `author`, new entities and relations `createdBy`, changed
        ones `updatedBy`; with None, no such key is written. The server enters this around
        one tool call, on the thread where calls run one at a time, as it does `time_limit`.
        """
        previous, self.author = self.author, author
        try:
            yield
        finally:
            self.author = previous

    @contextmanager
    def through(self, via: str) -> Iterator[None]:
        """Record `via` (a tool's name, `explorer`, `import`, ...) as what the block's changes
        were made through, in the change log. Entered as `authored_by` is."""
        previous, self.via = self.via, via
        try:
            yield
        finally:
            self.via = previous

    @contextmanager
    def working_in(self, scope: Scope, reach: tuple[str, ...] | None = None) -> Iterator[None]:
        """Make the calls of the block in `scope`: they see its projects, and create in its home;
        a caller limited to projects (`reach`, its token's) moves nothing out of them.

        Entered around one tool call as `authored_by` is: a server that serves several
        projects (one per HTTP client) gives each call its own.
        """
        previous = self.scope, self.reach
        self.scope, self.reach = scope, reach
        try:
            yield
        finally:
            self.scope, self.reach = previous

    @property
    def secrets(self) -> Policy:
        """What is done with a secret written: redact (the default), refuse or allow
        (domain/secret_policy.py)."""
        return self._recorder.secrets

    @secrets.setter
    def secrets(self, policy: Policy) -> None:
        self._recorder.secrets = policy

    def texts_checked(self) -> AbstractContextManager[None]:
        """Write in the block without looking for secrets again: a tool call's arguments were
        looked at before it ran (server/tool_calls.py)."""
        return self._recorder.texts_checked()

    def take_redactions(self) -> list[Redaction]:
        """The secrets this thread's writes took out of what they stored since the last call
        (domain/secret_policy.py), forgotten as they are returned."""
        return self._recorder.take_redactions()

    def facts_may_have_ended(self, now: str) -> bool:
        """Whether a current fact's valid time may have ended by `now` (domain/validity.py)."""
        return self._recorder.may_have_ended(now)

    def embed_pending(self, batch: int = EMBED_BATCH) -> int:
        """Embed one batch of the texts waiting for vectors, here and now; how many it took.

        A worker does this off the request path; call it in a loop (until it answers 0) to
        embed a whole memory in place, as `graphmem embed` does.
        """
        return self.meaning.embed_pending(batch)
