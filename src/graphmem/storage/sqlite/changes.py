"""SQLiteStore's change log (migration 19): each change a row of `changes`, written in the write
transaction that made it, and each entity it names a row of `change_entities`; and the facts
that hold for a time (migration 20: when the first one ends)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from graphmem.core.changes import Change, ChangeFilter, ChangePage, NewChange, names_touched
from graphmem.core.models import Entity
from graphmem.core.timestamps import now_iso
from graphmem.storage.sqlite.reads import _Reads
from graphmem.storage.sqlite.scoping import visible
from graphmem.storage.sqlite.text import key_item, keys_json

__all__ = ["_Changes"]

_LAST = 2**63 - 1
"""A change number past every change: a name that is still the entity's."""


class _Changes(_Reads):
    """The change log of `SQLiteStore`."""

    def append_change(self, change: NewChange) -> None:
        # Never earlier than the change before: a clock set back keeps the log in order.
        (last,) = self._conn.execute("SELECT max(at) FROM changes").fetchone()
        now = now_iso()
        at = now if last is None or now > last else last
        cursor = self._conn.execute(
            "INSERT INTO changes (at, author, via, project, ops) VALUES (?, ?, ?, ?, ?)",
            (at, change.author, change.via, change.project, json.dumps(change.ops, ensure_ascii=False)),
        )
        # One statement for every name, however many (a statement a row would cost a batch
        # write a statement an item); the names pass as JSON, a NUL kept (text.py).
        named = sorted(set(names_touched(change.ops)))
        if named:
            keys = keys_json(named)
            self._conn.execute(
                "INSERT OR IGNORE INTO change_entities (project, name, seq)"
                f" SELECT {key_item(keys, 0, 'value')}, {key_item(keys, 1, 'value')}, ? FROM json_each(?)",
                (cursor.lastrowid, keys),
            )

    def forget_changes(self, before: str) -> int:
        gone = self._conn.execute("DELETE FROM changes WHERE at < ?", (before,)).rowcount
        self._conn.execute(
            "INSERT INTO history_kept (id, since) VALUES (1, ?)"
            " ON CONFLICT (id) DO UPDATE SET since = max(since, excluded.since)",
            (before,),
        )
        return int(gone)

    def history_since(self) -> str | None:
        row = self._conn.execute("SELECT since FROM history_kept WHERE id = 1").fetchone()
        return None if row is None else str(row[0])

    def list_changes(self, where: ChangeFilter, limit: int) -> ChangePage:
        conditions: list[str] = ["1"]
        params: list[Any] = []
        for column, value, test in (
            ("at", where.since, ">="),
            ("at", where.until, "<"),
            ("via", where.via, "="),
            ("seq", where.before, "<"),
        ):
            if value is not None:
                conditions.append(f"{column} {test} ?")
                params.append(value)
        if where.author is not None:
            conditions.append("author IS ?")
            params.append(where.author or None)
        seen = "" if self._scope.every else f" AND {visible(self._scope, 'n.project')}"
        if where.names:
            named = " OR ".join("(n.name = ? AND n.seq > ? AND n.seq <= ?)" for _ in where.names)
            conditions.append(f"seq IN (SELECT n.seq FROM change_entities AS n WHERE ({named}){seen})")
            for name, after, upto in where.names:
                params += [name, after, _LAST if upto is None else upto]
        elif seen:
            # In a project: the changes that name its entities or the shared space's.
            conditions.append(f"EXISTS (SELECT 1 FROM change_entities AS n WHERE n.seq = changes.seq{seen})")
        rows: list[tuple[int, str, str | None, str, str | None, str]] = self._conn.execute(
            f"SELECT seq, at, author, via, project, ops FROM changes WHERE {' AND '.join(conditions)}"
            " ORDER BY seq DESC LIMIT ?",
            (*params, limit + 1),
        ).fetchall()
        changes = [
            Change(seq, at, author, via, project, json.loads(ops)) for seq, at, author, via, project, ops in rows
        ]
        return ChangePage(changes[:limit], len(changes) > limit)

    def rewrite_changes(self, clean: Callable[[Any], Any]) -> int:
        rewritten = 0
        for seq, ops in self._conn.execute("SELECT seq, ops FROM changes").fetchall():
            before = json.loads(ops)
            after = clean(before)
            if after != before:
                self._conn.execute(
                    "UPDATE changes SET ops = ? WHERE seq = ?", (json.dumps(after, ensure_ascii=False), seq)
                )
                rewritten += 1
        for (name,) in self._conn.execute("SELECT DISTINCT name FROM change_entities").fetchall():
            cleaned = clean(name)
            if cleaned != name:
                # Where the cleaned name is already kept for a change, the row with the old one goes.
                self._conn.execute("UPDATE OR REPLACE change_entities SET name = ? WHERE name = ?", (cleaned, name))
        return rewritten

    # -- names ----------------------------------------------------------------------------------

    def entity_names(self) -> list[tuple[str, str, str, tuple[str, ...]]]:
        aliases: dict[int, list[str]] = {}
        for entity_id, alias in self._conn.execute("SELECT entity_id, alias FROM entity_aliases ORDER BY rowid"):
            aliases.setdefault(entity_id, []).append(alias)
        return [
            (name, entity_type, project, tuple(aliases.get(entity_id, ())))
            for entity_id, name, entity_type, project in self._conn.execute(
                "SELECT id, name, entity_type, project FROM entities ORDER BY id"
            )
        ]

    # -- valid time -----------------------------------------------------------------------------

    def timed_entities(self) -> list[Entity]:
        # A scan of the extras and the facts' first characters: valid time is asked of rarely
        # (a read at a date, a fact that has ended), never on the way of an ordinary call.
        rows = self._conn.execute(
            "SELECT id, name, entity_type, extra, project FROM entities"
            " WHERE extra LIKE '%\"valid%' OR id IN"
            " (SELECT entity_id FROM observations WHERE substr(ltrim(content), 1, 1) = '[') ORDER BY id"
        ).fetchall()
        return self._entities_of(rows)

    def next_fact_end(self) -> str | None:
        row = self._conn.execute("SELECT next_end FROM fact_ends WHERE id = 1").fetchone()
        return None if row is None or row[0] is None else str(row[0])

    def set_next_fact_end(self, when: str | None) -> None:
        self._conn.execute(
            "INSERT INTO fact_ends (id, next_end) VALUES (1, ?)"
            " ON CONFLICT (id) DO UPDATE SET next_end = excluded.next_end",
            (when,),
        )
