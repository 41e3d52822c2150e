"""PostgresStore's change log (migration 5): each change a row of `changes`, written in the write
transaction that made it, and each entity it names a row of `change_entities`."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from graphmem.core.changes import Change, ChangeFilter, ChangePage, NewChange, names_touched
from graphmem.core.models import Entity
from graphmem.core.timestamps import now_iso
from graphmem.storage.postgres.reads import ENTITY_ROW, _Reads
from graphmem.storage.postgres.text import escape, unescape

__all__ = ["_Changes"]

_LAST = 2**63 - 1
"""A change number past every change: a name that is still the entity's."""


class _Changes(_Reads):
    """The change log of `PostgresStore`."""

    def append_change(self, change: NewChange) -> None:
        # Writers hold the memory's lock (reads.py), so the last time read here is the last.
        ((last,),) = self._rows("SELECT max(at) FROM changes")
        now = now_iso()
        at = now if last is None or now > last else last
        # ASCII JSON: any text a client sent survives, whatever PostgreSQL's text refuses.
        ((seq,),) = self._rows(
            "INSERT INTO changes (at, author, via, project, ops) VALUES (%s, %s, %s, %s, %s) RETURNING seq",
            (
                at,
                None if change.author is None else escape(change.author),
                escape(change.via),
                None if change.project is None else escape(change.project),
                json.dumps(change.ops),
            ),
        )
        named = sorted(set(names_touched(change.ops)))
        if named:
            self._tx.cursor.executemany(
                "INSERT INTO change_entities (project, name, seq) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                [(escape(project), escape(name), seq) for project, name in named],
            )

    def forget_changes(self, before: str) -> int:
        ((gone,),) = self._rows(
            "WITH gone AS (DELETE FROM changes WHERE at < %s RETURNING 1) SELECT count(*) FROM gone", (before,)
        )
        self._rows(
            "INSERT INTO history_kept (id, since) VALUES (1, %s)"
            " ON CONFLICT (id) DO UPDATE SET since = greatest(history_kept.since, excluded.since) RETURNING since",
            (before,),
        )
        return int(gone)

    def history_since(self) -> str | None:
        rows = self._rows("SELECT since FROM history_kept WHERE id = 1")
        return None if not rows else str(rows[0][0])

    def list_changes(self, where: ChangeFilter, limit: int) -> ChangePage:
        conditions: list[str] = ["true"]
        params: list[Any] = []
        for column, value, test in (
            ("at", where.since, ">="),
            ("at", where.until, "<"),
            ("via", None if where.via is None else escape(where.via), "="),
            ("seq", where.before, "<"),
        ):
            if value is not None:
                conditions.append(f"{column} {test} %s")
                params.append(value)
        if where.author is not None:
            conditions.append("author IS NOT DISTINCT FROM %s")
            params.append(escape(where.author) or None)
        seen = self._seen("n.project")
        if where.names:
            named = " OR ".join("(n.name = %s AND n.seq > %s AND n.seq <= %s)" for _ in where.names)
            conditions.append(f"seq IN (SELECT n.seq FROM change_entities AS n WHERE ({named}){seen})")
            for name, after, upto in where.names:
                params += [escape(name), after, _LAST if upto is None else upto]
        elif seen:
            # In a project: the changes that name its entities or the shared space's.
            conditions.append(f"EXISTS (SELECT 1 FROM change_entities AS n WHERE n.seq = changes.seq{seen})")
        rows = self._rows(
            f"SELECT seq, at, author, via, project, ops FROM changes WHERE {' AND '.join(conditions)}"
            " ORDER BY seq DESC LIMIT %s",
            (*params, limit + 1),
        )
        changes = [
            Change(
                int(seq),
                at,
                None if author is None else unescape(author),
                unescape(via),
                None if project is None else unescape(project),
                json.loads(ops),
            )
            for seq, at, author, via, project, ops in rows
        ]
        return ChangePage(changes[:limit], len(changes) > limit)

    def rewrite_changes(self, clean: Callable[[Any], Any]) -> int:
        rewritten = 0
        for seq, ops in self._rows("SELECT seq, ops FROM changes"):
            before = json.loads(ops)
            after = clean(before)
            if after != before:
                self._rows("UPDATE changes SET ops = %s WHERE seq = %s RETURNING seq", (json.dumps(after), seq))
                rewritten += 1
        for (name,) in self._rows("SELECT DISTINCT name FROM change_entities"):
            cleaned = clean(unescape(name))
            if cleaned != unescape(name):
                # Where the cleaned name is already kept for a change, the row with the old one goes.
                self._rows(
                    "DELETE FROM change_entities AS old USING change_entities AS new"
                    " WHERE old.name = %s AND new.name = %s AND new.project = old.project AND new.seq = old.seq"
                    " RETURNING old.seq",
                    (name, escape(cleaned)),
                )
                self._rows(
                    "UPDATE change_entities SET name = %s WHERE name = %s RETURNING seq", (escape(cleaned), name)
                )
        return rewritten

    # -- names ----------------------------------------------------------------------------------

    def entity_names(self) -> list[tuple[str, str, str, tuple[str, ...]]]:
        aliases: dict[int, list[str]] = {}
        for entity_id, alias in self._rows("SELECT entity_id, alias FROM entity_aliases"):
            aliases.setdefault(entity_id, []).append(unescape(alias))
        return [
            (unescape(name), unescape(entity_type), unescape(project), tuple(aliases.get(entity_id, ())))
            for entity_id, name, entity_type, project in self._rows(
                "SELECT id, name, entity_type, project FROM entities ORDER BY id"
            )
        ]

    # -- valid time -----------------------------------------------------------------------------

    def timed_entities(self) -> list[Entity]:
        # A scan of the extras and the facts' first characters: valid time is asked of rarely
        # (a read at a date, a fact that has ended), never on the way of an ordinary call.
        # (%% is one % to LIKE, and a wildcard either way.)
        rows = self._rows(
            f"SELECT {ENTITY_ROW} FROM entities WHERE extra LIKE '%%\"valid%%' OR id IN"
            " (SELECT entity_id FROM observations WHERE left(ltrim(content), 1) = '[') ORDER BY id"
        )
        return self._entities_of(rows)

    def next_fact_end(self) -> str | None:
        rows = self._rows("SELECT next_fact_end FROM graphmem_state WHERE id = 1")
        return None if not rows or rows[0][0] is None else str(rows[0][0])

    def set_next_fact_end(self, when: str | None) -> None:
        self._rows("UPDATE graphmem_state SET next_fact_end = %s WHERE id = 1 RETURNING id", (when,))
