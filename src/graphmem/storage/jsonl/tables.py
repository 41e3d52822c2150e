"""JsonlStore's in-memory tables: the file's rows, the indexes over them, and the journal a rollback undoes.

Rows keep their positions while a transaction runs (a deleted one leaves a hole), so the
indexes stay valid and the journal can put back exactly what was replaced.

The indexes are by name and by relation key across every project: a name is held once per
project (save a file's duplicates), so a name's positions are few, and each look-up keeps
those of the projects the transaction's scope sees (`_holds`, `_visible_relations`).
"""

from __future__ import annotations

from collections.abc import Iterable

from graphmem.core.models import Entity, Relation
from graphmem.core.projects import Scope
from graphmem.storage.jsonl.format import OtherRecord
from graphmem.storage.words import WordDocument

# Deleted rows stay as holes (so a rollback can put them back); past this many, and
# once they outnumber the live rows, the lists are rebuilt after a commit.
_COMPACT_AFTER = 1024


class _HeadRow:
    """An entity line or another line, held in memory with caches dropped when it changes."""

    __slots__ = ("folded", "line", "value", "words")

    def __init__(self, value: Entity | OtherRecord, line: str | None = None) -> None:
        self.value = value
        self.line = line
        """The encoded line, kept once it has been needed: most rows outlive many saves."""
        self.folded: str | None = None
        """For an entity: its lower-cased name, type and observations joined, so a text
        search rules most entities out with one substring test."""
        self.words: WordDocument | None = None
        """For an entity: its document in the word index, made when a search first needs it."""


class _RelationRow:
    """A relation line held in memory, with its encoded line once it has been needed."""

    __slots__ = ("line", "value")

    def __init__(self, value: Relation) -> None:
        self.value = value
        self.line: str | None = None


class _Tables:
    """The rows of one memory file held in memory, with the journal of the write under way."""

    # Set by JsonlStore's transactions; declared here for the mixins that use it.
    _writing: bool
    _scope: Scope

    def _reset(self) -> None:
        # `_head` holds entity lines and other lines in file order, `_relations` the
        # relation lines; a deleted row becomes None. The dicts map a name or a key to
        # the positions of its rows (dead ones included, skipped on use), so a point
        # operation never scans the lists.
        self._head: list[_HeadRow | None] = []
        self._relations: list[_RelationRow | None] = []
        self._by_name: dict[str, list[int]] = {}
        self._by_key: dict[tuple[str, str, str], list[int]] = {}
        self._by_endpoint: dict[str, list[int]] = {}
        self._dead_head = 0
        self._dead_relations = 0
        self._alias_index: dict[str, list[int]] | None = None
        """Each alias with the positions of the entities holding it, oldest first; built when
        first needed after a change to the entity rows (which drops it)."""
        self._clear_journal()

    def _clear_journal(self) -> None:
        # What one write transaction changed, so a rollback can undo it: the rows it
        # replaced or deleted, and the list lengths and hole counts at its start.
        self._head_journal: list[tuple[int, _HeadRow | None]] = []
        self._relation_journal: list[tuple[int, _RelationRow | None]] = []
        self._mark = (len(self._head), len(self._relations), self._dead_head, self._dead_relations)

    def _check_writing(self) -> None:
        if not self._writing:
            raise RuntimeError("JsonlStore changes must happen inside write().")

    def _add_head(self, row: _HeadRow) -> None:
        position = len(self._head)
        self._head.append(row)
        self._alias_index = None
        if isinstance(row.value, Entity):
            self._by_name.setdefault(row.value.name, []).append(position)

    def _add_relation(self, row: _RelationRow) -> None:
        relation = row.value
        position = len(self._relations)
        self._relations.append(row)
        self._by_key.setdefault(relation.key, []).append(position)
        self._by_endpoint.setdefault(relation.from_, []).append(position)
        if relation.to != relation.from_:
            self._by_endpoint.setdefault(relation.to, []).append(position)

    def _set_head(self, position: int, row: _HeadRow | None) -> None:
        self._head_journal.append((position, self._head[position]))
        self._head[position] = row
        self._alias_index = None
        self._dead_head += row is None

    def _set_relation(self, position: int, row: _RelationRow) -> None:
        """Replace a live relation row by one of the same key (the indexes stay as they are)."""
        self._relation_journal.append((position, self._relations[position]))
        self._relations[position] = row

    def _delete_relation(self, position: int) -> None:
        self._relation_journal.append((position, self._relations[position]))
        self._relations[position] = None
        self._dead_relations += 1

    def _entity_positions(self, name: str) -> list[int]:
        """The positions of the entities called `name` that the scope sees, oldest first."""
        return [p for p in self._by_name.get(name, ()) if self._holds(p, name)]

    def _holds(self, position: int, name: str) -> bool:
        """Whether the row at `position` is an entity called `name` that the scope sees."""
        # `_by_name` entries are hints: a rename (or its rollback) leaves the other name's
        # entry in place, so each is checked against the row it points at.
        row = self._head[position]
        return (
            row is not None
            and isinstance(row.value, Entity)
            and row.value.name == name
            and self._scope.sees(row.value.project)
        )

    def _first_entity(self, name: str) -> tuple[int, Entity] | None:
        # Seen across every project, or in a file holding duplicate names (all kept), a name
        # may be several entities: point operations act on the first, like the official
        # `find()`. Across projects the domain refuses a write that names one of several.
        for position in self._by_name.get(name, ()):
            if self._holds(position, name):
                row = self._head[position]
                assert row is not None and isinstance(row.value, Entity)
                return position, row.value
        return None

    def _live_relations(self, positions: Iterable[int]) -> list[int]:
        """The positions of live relation rows among `positions`, in every project."""
        return [p for p in positions if self._relations[p] is not None]

    def _visible_relations(self, positions: Iterable[int]) -> list[int]:
        """The positions of live relation rows among `positions` that the scope sees."""
        if self._scope.every:
            return self._live_relations(positions)
        seen = self._scope.visible
        return [p for p in positions if (row := self._relations[p]) is not None and row.value.project in seen]

    def _rollback(self) -> None:
        """Put the in-memory graph back as it was when the transaction began."""
        self._alias_index = None
        for position, old_head in reversed(self._head_journal):
            self._head[position] = old_head
        for position, old_relation in reversed(self._relation_journal):
            self._relations[position] = old_relation
        head_length, relations_length, self._dead_head, self._dead_relations = self._mark
        # Rows appended by the transaction are live again now; drop them and their index
        # entries, which are the last ones of their lists.
        while len(self._head) > head_length:
            row = self._head.pop()
            if row is not None and isinstance(row.value, Entity):
                self._by_name[row.value.name].remove(len(self._head))
        while len(self._relations) > relations_length:
            relation_row = self._relations.pop()
            if relation_row is not None:
                relation = relation_row.value
                self._by_key[relation.key].pop()
                self._by_endpoint[relation.from_].pop()
                if relation.to != relation.from_:
                    self._by_endpoint[relation.to].pop()
        self._clear_journal()

    def _compact(self) -> None:
        head = [row for row in self._head if row is not None]
        relations = [row for row in self._relations if row is not None]
        self._reset()
        for row in head:
            self._add_head(row)
        for relation_row in relations:
            self._add_relation(relation_row)
        self._clear_journal()

    def _changed(self) -> bool:
        return bool(self._head_journal or self._relation_journal) or (
            (len(self._head), len(self._relations)) != self._mark[:2]
        )
