"""SQLiteStore's writes: inserts, updates and deletes, inside `write()`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from graphmem.core.models import Entity, Relation
from graphmem.storage.base import ProjectCounts
from graphmem.storage.sqlite.project_words import drop_project_words
from graphmem.storage.sqlite.reads import _Reads
from graphmem.storage.sqlite.scoping import and_visible, visible
from graphmem.storage.sqlite.text import (
    key_item,
    keys_json,
    texts_in,
    texts_json,
)


def _extra_json(extra: dict[str, Any] | None) -> str | None:
    return json.dumps(extra, ensure_ascii=False) if extra else None


class _Writes(_Reads):
    """The writes of `SQLiteStore`."""

    def insert_entities(self, entities: Sequence[Entity]) -> None:
        # One statement per table for the whole batch, never one per row: each statement
        # that writes an FTS5 table (the triggers' trigram rows) ends with FTS5 writing its
        # pending terms out as a new index segment, and merging segments, so a row at a
        # time cost 0.4 ms a row (46 ms for 100 entities with 3 facts each at 40,000
        # entities; 9 ms in one statement each). Issue 17, item 2.
        if not entities:
            return
        # Entities of one batch often share one extra (the graph builds it once per shape):
        # written as JSON once each.
        extras: dict[int, str | None] = {}

        def extra_json(extra: dict[str, Any] | None) -> str | None:
            if id(extra) not in extras:
                extras[id(extra)] = _extra_json(extra)
            return extras[id(extra)]

        rows = keys_json(
            (
                entity.name,
                entity.entity_type,
                entity.name.lower(),
                entity.entity_type.lower(),
                extra_json(entity.extra),
                entity.project,
            )
            for entity in entities
        )
        values = ", ".join(key_item(rows, index) for index in range(6))
        # ORDER BY key: ids follow the batch's order, the creation order searches rank by.
        self._conn.execute(
            "INSERT INTO entities (name, entity_type, name_lc, type_lc, extra, project)"
            f" SELECT {values} FROM json_each(?) AS k ORDER BY k.key",
            (rows,),
        )
        self._insert_observations(
            [(entity.name, content, entity.project) for entity in entities for content in entity.observations]
        )

    def _insert_observations(self, contents: Sequence[tuple[str, str] | tuple[str, str, str]]) -> None:
        """Append each (entity name, content[, project]) to its entity, in order, in one
        statement: the entity of that name in that project (new entities), else the one the
        scope sees."""
        if not contents:
            return
        rows = keys_json((item[0], item[1], item[1].lower(), *item[2:]) for item in contents)
        if len(contents[0]) == 2:
            of_project = and_visible(self._scope, "e.project")
        else:
            of_project = f" AND e.project = {key_item(rows, 3)}"
        self._conn.execute(
            "INSERT INTO observations (entity_id, content, content_lc)"
            f" SELECT e.id, {key_item(rows, 1)}, {key_item(rows, 2)}"
            f" FROM json_each(?) AS k JOIN entities AS e ON e.name = {key_item(rows, 0)}{of_project} ORDER BY k.key",
            (rows,),
        )

    def insert_relations(self, relations: Sequence[Relation]) -> None:
        if not relations:
            return
        rows = keys_json((*relation.key, _extra_json(relation.extra), relation.project) for relation in relations)
        values = ", ".join(key_item(rows, index) for index in range(5))
        self._conn.execute(
            "INSERT INTO relations (from_name, to_name, relation_type, extra, project)"
            f" SELECT {values} FROM json_each(?) AS k ORDER BY k.key",
            (rows,),
        )

    def append_observations(self, name: str, contents: Sequence[str]) -> None:
        self._insert_observations([(name, content) for content in contents])

    def append_observations_batch(self, additions: Sequence[tuple[str, Sequence[str]]]) -> None:
        self._insert_observations([(name, content) for name, contents in additions for content in contents])

    def update_extras(self, entities: Sequence[Entity]) -> None:
        if not entities:
            return
        rows = keys_json((entity.name, _extra_json(entity.extra)) for entity in entities)
        # One statement for the batch; only extra is set (see update_entity on why).
        self._conn.execute(
            f"UPDATE entities SET extra = {key_item(rows, 1)} FROM json_each(?) AS k"
            f" WHERE entities.name = {key_item(rows, 0)}{and_visible(self._scope, 'entities.project')}",
            (rows,),
        )

    def update_entity(self, name: str, changed: Entity) -> None:
        extra = _extra_json(changed.extra)
        seen = and_visible(self._scope, "project")
        if changed.name == name:
            # Most updates (every add or delete of an observation) change only extra. SQLite
            # rewrites the index entries of every column an UPDATE sets, changed or not, so
            # setting name and type too would dirty the name and type index pages for nothing:
            # two of the twenty pages such a write commits.
            cursor = self._conn.execute(
                f"UPDATE entities SET extra = ? WHERE name = ? AND entity_type = ?{seen}",
                (extra, name, changed.entity_type),
            )
            if cursor.rowcount:
                return
            # A new type (or no such entity): the name stays.
            self._conn.execute(
                f"UPDATE entities SET entity_type = ?, type_lc = ?, extra = ? WHERE name = ?{seen}",
                (changed.entity_type, changed.entity_type.lower(), extra, name),
            )
            return
        self._conn.execute(
            f"UPDATE entities SET name = ?, entity_type = ?, name_lc = ?, type_lc = ?, extra = ? WHERE name = ?{seen}",
            (
                changed.name,
                changed.entity_type,
                changed.name.lower(),
                changed.entity_type.lower(),
                extra,
                name,
            ),
        )

    def delete_entities(self, names: Sequence[str]) -> int:
        names_json = texts_json(names)
        names_in, names_in_1 = texts_in(names_json), texts_in(names_json, "?1")
        seen = and_visible(self._scope, "project")
        if self._scope.every and not self.holds_projects():
            # No projects: every relation naming them touches them (the statement of before).
            self._conn.execute(
                f"DELETE FROM relations WHERE from_name IN ({names_in_1}) OR to_name IN ({names_in_1})",
                (names_json,),
            )
        else:
            # A relation touches an entity when it names it in the entity's project, or names a
            # shared entity anywhere (no project can hold a shared name).
            gone = f"SELECT name, project FROM entities WHERE name IN ({names_in_1}){seen}"
            touching = (
                "SELECT r.id FROM ({gone}) AS g JOIN relations AS r ON r.{end} = g.name"
                " WHERE g.project = '' OR r.project = g.project"
            )
            self._conn.execute(
                "DELETE FROM relations WHERE id IN ("
                f"{touching.format(gone=gone, end='from_name')} UNION {touching.format(gone=gone, end='to_name')})",
                (names_json,),
            )
            # A name no entity holds here: the relations naming it that the scope sees go, as
            # the official server deletes relations to an entity that never existed.
            missing = sorted(set(names) - self.existing_names(names))
            if missing:
                missing_json = texts_json(missing)
                self._conn.execute(
                    f"DELETE FROM relations WHERE (from_name IN ({texts_in(missing_json, '?1')})"
                    f" OR to_name IN ({texts_in(missing_json, '?1')})){seen}",
                    (missing_json,),
                )
        self._conn.execute(
            f"DELETE FROM observations WHERE entity_id IN (SELECT id FROM entities WHERE name IN ({names_in}){seen})",
            (names_json,),
        )
        cursor = self._conn.execute(f"DELETE FROM entities WHERE name IN ({names_in}){seen}", (names_json,))
        return cursor.rowcount

    def holds_projects(self) -> bool:
        """Whether any entity or relation belongs to a project (not the shared space)."""
        return bool(
            self._conn.execute(
                "SELECT EXISTS (SELECT 1 FROM entities WHERE project > '')"
                " OR EXISTS (SELECT 1 FROM relations WHERE project > '')"
            ).fetchone()[0]
        )

    def remove_observations(self, name: str, contents: Sequence[str]) -> int:
        contents_json = texts_json(contents)
        contents_in = texts_in(contents_json)
        row = self._conn.execute(
            f"SELECT id FROM entities WHERE name = ?{and_visible(self._scope, 'project')} ORDER BY id", (name,)
        ).fetchone()
        if row is None:
            return 0
        (matched,) = self._conn.execute(
            f"SELECT count(DISTINCT content) FROM observations WHERE entity_id = ? AND content IN ({contents_in})",
            (row[0], contents_json),
        ).fetchone()
        self._conn.execute(
            f"DELETE FROM observations WHERE entity_id = ? AND content IN ({contents_in})",
            (row[0], contents_json),
        )
        return int(matched)

    def delete_relations(self, keys: Sequence[tuple[str, str, str]]) -> int:
        # rowcount counts the rows each statement deleted, not what triggers changed.
        cursor = self._conn.executemany(
            "DELETE FROM relations WHERE from_name = ? AND to_name = ? AND relation_type = ?"
            f"{and_visible(self._scope, 'project')}",
            keys,
        )
        return cursor.rowcount

    # -- projects ---------------------------------------------------------------------------

    def move_entities(self, names: Sequence[str], source: str, target: str) -> int:
        names_json = texts_json(names)
        cursor = self._conn.execute(
            f"UPDATE entities SET project = ?1 WHERE name IN ({texts_in(names_json, '?2')}) AND project = ?3",
            (target, names_json, source),
        )
        return cursor.rowcount

    def move_relations(self, keys: Sequence[tuple[str, str, str]], source: str, target: str) -> int:
        cursor = self._conn.executemany(
            "UPDATE relations SET project = ?"
            " WHERE from_name = ? AND to_name = ? AND relation_type = ? AND project = ?",
            [(target, *key, source) for key in keys],
        )
        return cursor.rowcount

    def projects_holding(self, names: Sequence[str]) -> dict[str, list[str]]:
        names_json = texts_json(names)
        held: dict[str, list[str]] = {}
        for name, project in self._conn.execute(
            f"SELECT name, project FROM entities WHERE name IN ({texts_in(names_json)}) ORDER BY id", (names_json,)
        ):
            held.setdefault(name, []).append(project)
        return held

    def project_keys(self) -> list[str]:
        # Each table's distinct projects by leaps along its project index (one look-up a project).
        keys: set[str] = set()
        for table in ("entities", "relations"):
            rows = self._conn.execute(
                f"WITH RECURSIVE leap(project) AS (SELECT min(project) FROM {table}"
                f" UNION ALL SELECT (SELECT min(project) FROM {table} WHERE project > leap.project)"
                " FROM leap WHERE leap.project IS NOT NULL) SELECT project FROM leap WHERE project IS NOT NULL"
            )
            keys.update(project for (project,) in rows)
        return sorted(keys)

    def project_counts(self) -> list[ProjectCounts]:
        seen = visible(self._scope, "project")
        rows = self._conn.execute(
            "SELECT p.project,"
            " (SELECT count(*) FROM entities WHERE project = p.project),"
            " (SELECT count(*) FROM relations WHERE project = p.project),"
            " (SELECT count(*) FROM observations AS o JOIN entities AS e ON e.id = o.entity_id"
            " WHERE e.project = p.project),"
            " (SELECT max(updated_utc) FROM entities WHERE project = p.project)"
            f" FROM (SELECT DISTINCT project FROM entities WHERE {seen}"
            f" UNION SELECT DISTINCT project FROM relations WHERE {seen}) AS p ORDER BY p.project"
        )
        return [ProjectCounts(*row) for row in rows]

    def delete_project(self, project: str) -> tuple[int, int]:
        relations = self._conn.execute("DELETE FROM relations WHERE project = ?", (project,)).rowcount
        self._conn.execute(
            "DELETE FROM observations WHERE entity_id IN (SELECT id FROM entities WHERE project = ?)", (project,)
        )
        entities = self._conn.execute("DELETE FROM entities WHERE project = ?", (project,)).rowcount
        # Its trigram mark and its own word index go too, once no text of it is left to unmark.
        drop_project_words(self._conn, project)
        return entities, relations
