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

from graphmem.core.limits import Limits
from graphmem.domain.searching import RankedNames, Searches
from graphmem.domain.writing import CreatedEntities, CreatedRelations, Writes
from graphmem.storage.base import Store

__all__ = ["CreatedEntities", "CreatedRelations", "KnowledgeGraph", "RankedNames"]


class KnowledgeGraph(Writes, Searches):
    """The memory as the tools see it.

    Args:
        store: where the graph lives.
        strict: reject relations whose endpoints do not exist, instead of accepting them
            with a notice as the official server does.
        limits: the per-call limits to enforce.
    """

    def __init__(self, store: Store, *, strict: bool = False, limits: Limits | None = None) -> None:
        self.store = store
        self.strict = strict
        self.limits = limits or Limits()
        self._indexed = None
