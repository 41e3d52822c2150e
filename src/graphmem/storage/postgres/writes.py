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
from graphmem.storage.base import ProjectCounts
from graphmem.storage.postgres.navigation import _Navigation
from graphmem.storage.postgres.reads import ENTITY_ROW, KEYS, _texts, key_columns, lock_key
from graphmem.storage.postgres.scoping import visible
from graphmem.storage.postgres.text import (
    derived_columns,
    document_columns,
    escape,
    extra_json,
    lowered,
    unescape,
    word_count,
    words_blob,
)

_ENTITY_COLUMNS = (
    "id, name, entity_type, name_lc, type_lc, extra, project, created_at, updated_at, created_instant,"
    " updated_instant, importance, version, thread_id, word_columns, words, word_count"
)

_RELATION_COLUMNS = "id, from_name, to_name, relation_type, extra, project"

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
        escape(entity.project),
        *derived_columns(entity.extra),
        columns,
        words_blob(columns),
        word_count(columns),
    )


class _Writes(_Navigation):
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
            placeholders = ", ".join(["%s"] * len(_ENTITY_COLUMNS.split(",")))
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
        # By id, not by name: every project at once may insert one name in two projects.
        created = list(zip(ids, entities, strict=True))
        self._insert_aliases([(entity_id, entity) for entity_id, entity in created if entity.aliases])
        self._insert_observations(
            [(entity_id, content) for entity_id, entity in created for content in entity.observations]
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
                + (extra_json(relation.extra), escape(relation.project))
                for relation_id, relation in zip(ids, relations, strict=True)
            ),
            key=lambda row: row[1:4],
        )
        tx = self._tx
        if tx.bulk:
            with tx.cursor.copy(f"COPY relations ({_RELATION_COLUMNS}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            inserted = len(rows)
        else:
            tx.cursor.executemany(
                f"INSERT INTO relations ({_RELATION_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                rows,
            )
            inserted = tx.cursor.rowcount
        if inserted != len(rows):
            raise StorageBusyError(_MEANWHILE.format(what="one of these relations"))
        tx.delta.relations += len(rows)

    def _entity_ids(self, names: Sequence[str]) -> dict[str, int]:
        """The id of the entity of each name the scope sees, by escaped name; the oldest, should
        every project at once see a name twice (the domain names one project then)."""
        self._lock_names(names)
        rows = self._rows(
            f"SELECT DISTINCT ON (name) name, id FROM entities WHERE name = ANY(%s){self._seen('project')}"
            " ORDER BY name, id",
            (_texts(names),),
        )
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
            " updated_instant = %s, importance = %s, version = %s, thread_id = %s"
            f" WHERE name = %s{self._seen('project')} RETURNING id",
            (*values, *derived_columns(changed.extra), escape(name)),
        )
        # One row in a project's scope; every project at once may see (and change) one name twice.
        ids = [entity_id for (entity_id,) in rows]
        if not ids:
            return
        self._tx.cursor.execute("DELETE FROM entity_aliases WHERE entity_id = ANY(%s)", (ids,))
        self._insert_aliases([(entity_id, changed) for entity_id in ids])
        self._tx.stale.update(ids)

    def delete_entities(self, names: Sequence[str]) -> int:
        self._check_writing()
        texts = _texts(names)
        self._lock_names(names)
        tx = self._tx
        gone = f"SELECT id, name, project FROM entities WHERE name = ANY(%(names)s){self._seen('project')}"
        if self._scope.every and not self.holds_projects():
            # No projects: every relation naming them goes, an entity's or not (the statement of before).
            tx.cursor.execute(
                "DELETE FROM relations WHERE from_name = ANY(%(names)s) OR to_name = ANY(%(names)s)", {"names": texts}
            )
            tx.delta.relations -= tx.cursor.rowcount
        else:
            # A relation touches an entity when it names it in the entity's project, or names a
            # shared entity anywhere (no project can hold a shared name). Each end through its index.
            touching = (
                "SELECT r.id FROM gone AS g JOIN relations AS r ON r.{end} = g.name"
                " WHERE g.project = '' OR r.project = g.project"
            )
            tx.cursor.execute(
                f"WITH gone AS ({gone}) DELETE FROM relations WHERE id IN"
                f" ({touching.format(end='from_name')} UNION {touching.format(end='to_name')})",
                {"names": texts},
            )
            tx.delta.relations -= tx.cursor.rowcount
            # A name no entity holds here: the relations naming it that the scope sees go, as
            # the official server deletes relations to an entity that never existed.
            present = self.existing_names(names)
            missing = [name for name in dict.fromkeys(names) if name not in present]
            if missing:
                tx.cursor.execute(
                    "DELETE FROM relations WHERE (from_name = ANY(%(names)s) OR to_name = ANY(%(names)s))"
                    f"{self._seen('project')}",
                    {"names": _texts(missing)},
                )
                tx.delta.relations -= tx.cursor.rowcount
        # The observations before their entities, to count them; the aliases go by cascade.
        tx.cursor.execute(
            f"WITH gone AS ({gone}) DELETE FROM observations WHERE entity_id IN (SELECT id FROM gone)",
            {"names": texts},
        )
        tx.delta.observations -= tx.cursor.rowcount
        rows = self._rows(
            f"WITH gone AS ({gone}) DELETE FROM entities WHERE id IN (SELECT id FROM gone) RETURNING id, word_count",
            {"names": texts},
        )
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
            f"DELETE FROM relations AS r USING {KEYS}"
            f" WHERE r.from_name = k.f AND r.to_name = k.t AND r.relation_type = k.y{self._seen('r.project')}"
            " RETURNING r.id",
            key_columns(unique),
        )
        self._tx.delta.relations -= len(rows)
        return len(rows)

    def holds_projects(self) -> bool:
        """Whether any entity or relation belongs to a project (not the shared space): a range of
        the project indexes, which ends at once in a memory without projects."""
        ((holds,),) = self._rows(
            "SELECT EXISTS (SELECT 1 FROM entities WHERE project > '')"
            " OR EXISTS (SELECT 1 FROM relations WHERE project > '')"
        )
        return bool(holds)

    # -- projects ---------------------------------------------------------------------------

    def move_entities(self, names: Sequence[str], source: str, target: str) -> int:
        self._check_writing()
        self._lock_names(names)
        # Their observations, aliases, words and vectors hang on their ids: they follow.
        rows = self._rows(
            "UPDATE entities SET project = %s WHERE name = ANY(%s) AND project = %s AND project <> %s RETURNING id",
            (escape(target), _texts(names), escape(source), escape(target)),
        )
        return len(rows)

    def move_relations(self, keys: Sequence[tuple[str, str, str]], source: str, target: str) -> int:
        self._check_writing()
        unique = list(dict.fromkeys(keys))
        self._lock(lock_key("r", *key) for key in unique)
        rows = self._rows(
            f"UPDATE relations AS r SET project = %s FROM {KEYS}"
            " WHERE r.from_name = k.f AND r.to_name = k.t AND r.relation_type = k.y AND r.project = %s"
            " AND r.project <> %s RETURNING r.id",
            (escape(target), *key_columns(unique), escape(source), escape(target)),
        )
        return len(rows)

    def projects_holding(self, names: Sequence[str]) -> dict[str, list[str]]:
        held: dict[str, list[str]] = {}
        for name, project in self._rows(
            "SELECT name, project FROM entities WHERE name = ANY(%s) ORDER BY id", (_texts(names),)
        ):
            held.setdefault(unescape(name), []).append(unescape(project))
        return held

    def project_keys(self) -> list[str]:
        # Each table's distinct projects by leaps along its project index (one look-up a project).
        keys: set[str] = set()
        for table in ("entities", "relations"):
            rows = self._rows(
                f"WITH RECURSIVE leap(project) AS (SELECT min(project) FROM {table}"
                f" UNION ALL SELECT (SELECT min(project) FROM {table} WHERE project > leap.project)"
                " FROM leap WHERE leap.project IS NOT NULL) SELECT project FROM leap WHERE project IS NOT NULL"
            )
            keys.update(unescape(project) for (project,) in rows)
        return sorted(keys)

    def project_counts(self) -> list[ProjectCounts]:
        seen = visible(self._scope, "project")
        # Each count from the project indexes (observations by their entities').
        rows = self._rows(
            "SELECT p.project,"
            " (SELECT count(*) FROM entities WHERE project = p.project),"
            " (SELECT count(*) FROM relations WHERE project = p.project),"
            " (SELECT count(*) FROM observations AS o JOIN entities AS e ON e.id = o.entity_id"
            " WHERE e.project = p.project),"
            " (SELECT max(updated_instant) FROM entities WHERE project = p.project)"
            f" FROM (SELECT DISTINCT project FROM entities WHERE {seen}"
            f" UNION SELECT DISTINCT project FROM relations WHERE {seen}) AS p ORDER BY p.project"
        )
        return [
            ProjectCounts(unescape(project), int(entities), int(relations), int(observations), last_written)
            for project, entities, relations, observations, last_written in rows
        ]

    def delete_project(self, project: str) -> tuple[int, int]:
        self._check_writing()
        tx = self._tx
        key = escape(project)
        # The whole memory's lock, exclusive: the project's names are not known before they go.
        self._lock_everything()
        relations = self._rows("DELETE FROM relations WHERE project = %s RETURNING id", (key,))
        tx.cursor.execute(
            "DELETE FROM observations WHERE entity_id IN (SELECT id FROM entities WHERE project = %s)", (key,)
        )
        tx.delta.observations -= tx.cursor.rowcount
        entities = self._rows("DELETE FROM entities WHERE project = %s RETURNING id, word_count", (key,))
        tx.delta.relations -= len(relations)
        tx.delta.entities -= len(entities)
        tx.delta.words -= sum(count for _, count in entities)
        tx.stale.difference_update(entity_id for entity_id, _ in entities)
        return len(entities), len(relations)

    def _refresh_words(self) -> None:
        """Rebuild the word documents of the entities this write changed (see text.document_columns)."""
        tx = self._tx
        if not tx.stale:
            return
        stale = sorted(tx.stale)
        tx.stale.clear()
        rows = self._rows(f"SELECT {ENTITY_ROW}, word_count FROM entities WHERE id = ANY(%s) ORDER BY id", (stale,))
        entities = self._entities_of([row[:-1] for row in rows])
        updates = []
        for row, entity in zip(rows, entities, strict=True):
            columns = document_columns(entity)
            count = word_count(columns)
            tx.delta.words += count - row[-1]
            updates.append((columns, words_blob(columns), count, row[0]))
        tx.cursor.executemany(
            "UPDATE entities SET word_columns = %s, words = %s, word_count = %s WHERE id = %s", updates
        )
        tx.cursor.execute("DELETE FROM entity_words WHERE entity_id = ANY(%s)", (stale,))
        self._insert_words([(entity_id, columns) for columns, _, _, entity_id in updates])
