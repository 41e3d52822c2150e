"""PostgresStore's writes: inserts, updates and deletes inside `write()`.

Every write locks the names (or relation keys) it touches first (`_Reads._lock`), in sorted
order. Ids follow the batch's order (the creation order), taken from the sequence up front, and
the rows are then inserted in sorted key order, so two writers never wait on each other's rows
in opposite orders. A name another server created since this call looked (possible only without
the lock, so in theory) makes the call fail busy, to be made again from the start: the domain
decided what to create from a memory that has changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from graphmem.core.errors import StorageBusyError
from graphmem.core.models import Entity, Relation
from graphmem.storage.postgres.reads import _Reads, lock_key
from graphmem.storage.postgres.text import (
    derived_columns,
    document_columns,
    escape,
    extra_json,
    lowered,
    word_count,
    words_blob,
)

_ENTITY_COLUMNS = (
    "id, name, entity_type, name_lc, type_lc, extra, created_at, updated_at, created_instant, updated_instant,"
    " importance, version, thread_id, word_columns, words, word_count"
)

_MEANWHILE = "Another graphmem server created {what} at the same moment; nothing was changed. Retry the call."


def _entity_row(entity_id: int, entity: Entity, extra: str | None) -> tuple[Any, ...]:
    columns = document_columns(entity)
    return (
        entity_id,
        escape(entity.name),
        escape(entity.entity_type),
        lowered(entity.name),
        lowered(entity.entity_type),
        extra,
        *derived_columns(entity.extra),
        columns,
        words_blob(columns),
        word_count(columns),
    )


class _Writes(_Reads):
    """The writes of `PostgresStore`."""

    def _check_writing(self) -> None:
        if not self._tx.writing:
            raise RuntimeError("PostgresStore changes must happen inside write().")

    def _new_ids(self, sequence_of: str, count: int) -> list[int]:
        """`count` new ids from the table's identity sequence, increasing."""
        rows = self._rows(
            "SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s) ORDER BY 1",
            (sequence_of, count),
        )
        return [row[0] for row in rows]

    def insert_entities(self, entities: Sequence[Entity]) -> None:
        self._check_writing()
        if not entities:
            return
        self._lock_names(entity.name for entity in entities)
        ids = self._new_ids("entities", len(entities))
        extras: dict[int, str | None] = {}
        rows = []
        for entity_id, entity in zip(ids, entities, strict=True):
            if id(entity.extra) not in extras:
                extras[id(entity.extra)] = extra_json(entity.extra)
            rows.append(_entity_row(entity_id, entity, extras[id(entity.extra)]))
        rows.sort(key=lambda row: row[1])
        tx = self._tx
        if tx.bulk:
            with tx.cursor.copy(f"COPY entities ({_ENTITY_COLUMNS}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            inserted = len(rows)
        else:
            placeholders = ", ".join(["%s"] * 16)
            tx.cursor.executemany(
                f"INSERT INTO entities ({_ENTITY_COLUMNS}) VALUES ({placeholders}) ON CONFLICT DO NOTHING",
                rows,
            )
            inserted = tx.cursor.rowcount
        if inserted != len(rows):
            raise StorageBusyError(_MEANWHILE.format(what="one of these entities"))
        tx.delta.entities += len(rows)
        tx.delta.words += sum(row[-1] for row in rows)
        self._insert_words([(row[0], row[-3]) for row in rows])
        by_name = {entity.name: entity_id for entity_id, entity in zip(ids, entities, strict=True)}
        self._insert_aliases([(by_name[entity.name], entity) for entity in entities if entity.aliases])
        self._insert_observations(
            [(by_name[entity.name], content) for entity in entities for content in entity.observations]
        )

    def _insert_words(self, documents: Sequence[tuple[int, Sequence[str]]]) -> None:
        """Index each (entity id, word columns): one row per distinct word (migration 0003)."""
        words, ids = [], []
        for entity_id, columns in documents:
            for word in dict.fromkeys(word for column in columns for word in column.split()):
                words.append(word)
                ids.append(entity_id)
        if not words:
            return
        tx = self._tx
        if tx.bulk:
            with tx.cursor.copy("COPY entity_words (word, entity_id) FROM STDIN") as copy:
                for row in zip(words, ids, strict=True):
                    copy.write_row(row)
        else:
            tx.cursor.execute(
                "INSERT INTO entity_words (word, entity_id) SELECT * FROM unnest(%s::text[], %s::bigint[])",
                (words, ids),
            )

    def _insert_aliases(self, entities: Sequence[tuple[int, Entity]]) -> None:
        rows = [(escape(alias), entity_id) for entity_id, entity in entities for alias in dict.fromkeys(entity.aliases)]
        if rows:
            self._tx.cursor.executemany("INSERT INTO entity_aliases (alias, entity_id) VALUES (%s, %s)", rows)

    def _insert_observations(self, contents: Sequence[tuple[int, str]]) -> None:
        """Append each (entity id, content) to its entity, in order."""
        if not contents:
            return
        tx = self._tx
        ids = self._new_ids("observations", len(contents))
        rows = [
            (observation_id, entity_id, escape(content), lowered(content))
            for observation_id, (entity_id, content) in zip(ids, contents, strict=True)
        ]
        if tx.bulk:
            with tx.cursor.copy("COPY observations (id, entity_id, content, content_lc) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        else:
            tx.cursor.executemany(
                "INSERT INTO observations (id, entity_id, content, content_lc) VALUES (%s, %s, %s, %s)", rows
            )
        tx.delta.observations += len(rows)

    def insert_relations(self, relations: Sequence[Relation]) -> None:
        self._check_writing()
        if not relations:
            return
        self._lock(lock_key("r", *relation.key) for relation in relations)
        ids = self._new_ids("relations", len(relations))
        rows = sorted(
            (
                (relation_id, escape(relation.from_), escape(relation.to), escape(relation.relation_type))
                + (extra_json(relation.extra),)
                for relation_id, relation in zip(ids, relations, strict=True)
            ),
            key=lambda row: row[1:4],
        )
        tx = self._tx
        if tx.bulk:
            with tx.cursor.copy("COPY relations (id, from_name, to_name, relation_type, extra) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            inserted = len(rows)
        else:
            tx.cursor.executemany(
                "INSERT INTO relations (id, from_name, to_name, relation_type, extra)"
                " VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                rows,
            )
            inserted = tx.cursor.rowcount
        if inserted != len(rows):
            raise StorageBusyError(_MEANWHILE.format(what="one of these relations"))
        tx.delta.relations += len(rows)

    def _entity_ids(self, names: Sequence[str]) -> dict[str, int]:
        self._lock_names(names)
        rows = self._rows("SELECT name, id FROM entities WHERE name = ANY(%s)", ([escape(n) for n in set(names)],))
        return {name: entity_id for name, entity_id in rows}

    def append_observations(self, name: str, contents: Sequence[str]) -> None:
        self.append_observations_batch([(name, contents)])

    def append_observations_batch(self, additions: Sequence[tuple[str, Sequence[str]]]) -> None:
        self._check_writing()
        ids = self._entity_ids([name for name, contents in additions if contents])
        pairs = [
            (ids[escape(name)], content) for name, contents in additions if escape(name) in ids for content in contents
        ]
        self._insert_observations(pairs)
        self._tx.stale.update(entity_id for entity_id, _ in pairs)

    def update_extras(self, entities: Sequence[Entity]) -> None:
        for entity in entities:
            self._set_entity(entity.name, entity, keep_name_and_type=True)

    def update_entity(self, name: str, changed: Entity) -> None:
        self._set_entity(name, changed, keep_name_and_type=False)

    def _set_entity(self, name: str, changed: Entity, *, keep_name_and_type: bool) -> None:
        self._check_writing()
        self._lock_names([name, changed.name])
        extra = extra_json(changed.extra)
        if keep_name_and_type:
            sets, values = "extra = %s", [extra]
        else:
            sets = "name = %s, entity_type = %s, name_lc = %s, type_lc = %s, extra = %s"
            values = [
                escape(changed.name),
                escape(changed.entity_type),
                lowered(changed.name),
                lowered(changed.entity_type),
                extra,
            ]
        rows = self._rows(
            f"UPDATE entities SET {sets}, created_at = %s, updated_at = %s, created_instant = %s,"
            " updated_instant = %s, importance = %s, version = %s, thread_id = %s WHERE name = %s RETURNING id",
            (*values, *derived_columns(changed.extra), escape(name)),
        )
        if not rows:
            return
        (entity_id,) = rows[0]
        self._tx.cursor.execute("DELETE FROM entity_aliases WHERE entity_id = %s", (entity_id,))
        self._insert_aliases([(entity_id, changed)])
        self._tx.stale.add(entity_id)

    def delete_entities(self, names: Sequence[str]) -> int:
        self._check_writing()
        texts = [escape(name) for name in dict.fromkeys(names)]
        self._lock_names(names)
        tx = self._tx
        # The observations first, to count them; the aliases go by cascade.
        tx.cursor.execute(
            "DELETE FROM observations WHERE entity_id IN (SELECT id FROM entities WHERE name = ANY(%s))", (texts,)
        )
        tx.delta.observations -= tx.cursor.rowcount
        tx.cursor.execute("DELETE FROM relations WHERE from_name = ANY(%s) OR to_name = ANY(%s)", (texts, texts))
        tx.delta.relations -= tx.cursor.rowcount
        rows = self._rows("DELETE FROM entities WHERE name = ANY(%s) RETURNING id, word_count", (texts,))
        tx.delta.entities -= len(rows)
        tx.delta.words -= sum(count for _, count in rows)
        tx.stale.difference_update(entity_id for entity_id, _ in rows)
        return len(rows)

    def remove_observations(self, name: str, contents: Sequence[str]) -> int:
        self._check_writing()
        ids = self._entity_ids([name])
        entity_id = ids.get(escape(name))
        if entity_id is None:
            return 0
        tx = self._tx
        removed = self._rows(
            "DELETE FROM observations WHERE entity_id = %s AND content = ANY(%s) RETURNING content",
            (entity_id, [escape(content) for content in dict.fromkeys(contents)]),
        )
        tx.delta.observations -= len(removed)
        if removed:
            tx.stale.add(entity_id)
        return len({content for (content,) in removed})

    def delete_relations(self, keys: Sequence[tuple[str, str, str]]) -> int:
        self._check_writing()
        unique = list(dict.fromkeys(keys))
        self._lock(lock_key("r", *key) for key in unique)
        rows = self._rows(
            "DELETE FROM relations AS r USING unnest(%s::text[], %s::text[], %s::text[]) AS k (f, t, y)"
            " WHERE r.from_name = k.f AND r.to_name = k.t AND r.relation_type = k.y RETURNING r.id",
            (
                [escape(key[0]) for key in unique],
                [escape(key[1]) for key in unique],
                [escape(key[2]) for key in unique],
            ),
        )
        self._tx.delta.relations -= len(rows)
        return len(rows)

    def _refresh_words(self) -> None:
        """Rebuild the word documents of the entities this write changed (see text.document_columns)."""
        tx = self._tx
        if not tx.stale:
            return
        stale = sorted(tx.stale)
        tx.stale.clear()
        rows = self._rows(
            "SELECT id, name, entity_type, extra, word_count FROM entities WHERE id = ANY(%s) ORDER BY id", (stale,)
        )
        entities = self._entities_of([row[:4] for row in rows])
        updates = []
        for row, entity in zip(rows, entities, strict=True):
            columns = document_columns(entity)
            count = word_count(columns)
            tx.delta.words += count - row[4]
            updates.append((columns, words_blob(columns), count, row[0]))
        tx.cursor.executemany(
            "UPDATE entities SET word_columns = %s, words = %s, word_count = %s WHERE id = %s", updates
        )
        tx.cursor.execute("DELETE FROM entity_words WHERE entity_id = ANY(%s)", (stale,))
        self._insert_words([(entity_id, columns) for columns, _, _, entity_id in updates])
