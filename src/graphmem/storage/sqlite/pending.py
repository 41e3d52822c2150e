"""Texts written but not yet in the full-text indexes, and the work that indexes them.

A write records its new texts as pending instead of indexing them (migration 0015 for
the trigram indexes, 0002's `entity_words_stale` for the word index), in its own
transaction, so nothing written is ever missing from the indexes for good:

    write ─► rows + pending records ─► commit (the call answers)
    background thread (checkpoints.py) ─► index_pending + refresh_words, in short
        transactions of their own ─► pending records gone

Until then the searches read pending rows exactly (search.py: instr() over the pending
rows for the trigram indexes; the word index is brought up to date before a read).
A write that finds more pending than `TEXT_LIMIT` / `WORDS_LIMIT` indexes it itself, so
a flood of writes with no pause cannot make the searches' share unbounded.
"""

from __future__ import annotations

import json
import sqlite3

from graphmem.storage.sqlite.project_words import refresh_project_words
from graphmem.storage.sqlite.scoping import ENTITY_MARK_SQL, OBSERVATION_MARK_SQL, PROJECT_TOKEN_SQL
from graphmem.storage.sqlite.text import TRIGRAM_FORM, escaped_json, exact

__all__ = [
    "TEXT_LIMIT",
    "WORDS_LIMIT",
    "has_pending_text",
    "has_stale_words",
    "index_pending",
    "index_step",
    "more_pending_than",
    "refresh_words",
]

# Pending rows of one trigram index a write leaves for later. A search reads every pending
# row of the tables it looks in (an instr() each): at 40,000 entities, with 9,900 facts and
# 3,300 names pending, a search took 11 to 21 ms instead of 1 to 6 (under a load of 6).
TEXT_LIMIT = 5_000

# Entities whose word documents a write leaves for later: the next read rebuilds them if
# the background thread has not (3,300 took 50 ms, under a load of 6).
WORDS_LIMIT = 2_000

# Rows of each trigram index one background step indexes (a quarter as many word
# documents, each an entity's name and every fact): a write arriving meanwhile waits for
# one such step.
STEP_ROWS = 400

# Each trigram index: its pending table, and the statement that indexes the pending rows
# listed in the JSON array parameter (a project's texts after its mark, migration 18).
_TEXT_INDEXES = {
    "entity_text": (
        "entity_text_pending",
        "INSERT INTO entity_text (rowid, name_lc, type_lc)"
        f" SELECT id, {ENTITY_MARK_SQL.format(entity='entities')} || {TRIGRAM_FORM.format('name_lc')},"
        f" {TRIGRAM_FORM.format('type_lc')}"
        " FROM entities WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id",
    ),
    "observation_text": (
        "observation_text_pending",
        "INSERT INTO observation_text (rowid, content_lc)"
        f" SELECT id, {OBSERVATION_MARK_SQL.format(observation='observations')} || {TRIGRAM_FORM.format('content_lc')}"
        " FROM observations WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id",
    ),
}

# An entity's word-index document: name, aliases (text items of extra's `aliases`, a
# list or a single string), type, its observations in order, one per line, and the one
# word that stands for its project.
_REBUILD_DOCUMENTS = f"""
INSERT INTO entity_words (rowid, name, aliases, entity_type, observations, project)
SELECT e.id, e.name,
    CASE WHEN json_valid(e.extra) THEN coalesce(
        (SELECT group_concat({exact("value")}, char(10))
            FROM json_each({escaped_json("e.extra")}, '$.aliases') WHERE type = 'text'), ''
    ) ELSE '' END,
    e.entity_type,
    coalesce((SELECT group_concat(content, char(10)) FROM
        (SELECT content FROM observations AS o WHERE o.entity_id = e.id ORDER BY o.id)), ''),
    {PROJECT_TOKEN_SQL.format(column="e.project")}
FROM entities AS e WHERE e.id IN (SELECT value FROM json_each(?))
"""


def has_pending_text(conn: sqlite3.Connection, index: str) -> bool:
    """Whether trigram index `index` ("entity_text" or "observation_text") has rows still to index."""
    table, _ = _TEXT_INDEXES[index]
    return bool(conn.execute(f"SELECT EXISTS (SELECT 1 FROM {table})").fetchone()[0])


def has_stale_words(conn: sqlite3.Connection) -> bool:
    """Whether some entity's word-index document is missing or out of date."""
    return bool(conn.execute("SELECT EXISTS (SELECT 1 FROM entity_words_stale)").fetchone()[0])


def more_pending_than(conn: sqlite3.Connection, text_rows: int, stale_entities: int) -> bool:
    """Whether a trigram index has more than `text_rows` pending rows, or more than
    `stale_entities` entities wait for their word documents (counted no further)."""
    for table, _ in _TEXT_INDEXES.values():
        if conn.execute(f"SELECT EXISTS (SELECT 1 FROM {table} LIMIT 1 OFFSET ?)", (text_rows,)).fetchone()[0]:
            return True
    stale = conn.execute("SELECT EXISTS (SELECT 1 FROM entity_words_stale LIMIT 1 OFFSET ?)", (stale_entities,))
    return bool(stale.fetchone()[0])


def index_pending(conn: sqlite3.Connection, at_most: int | None = None) -> int:
    """Index the oldest pending rows of each trigram index (up to `at_most` of each, or all)
    inside the caller's write transaction; how many rows were indexed."""
    indexed = 0
    for table, insert in _TEXT_INDEXES.values():
        ids = [
            row_id
            for (row_id,) in conn.execute(
                f"SELECT id FROM {table} ORDER BY id LIMIT ?", (-1 if at_most is None else at_most,)
            )
        ]
        if ids:
            listed = json.dumps(ids)
            conn.execute(insert, (listed,))
            conn.execute(f"DELETE FROM {table} WHERE id IN (SELECT value FROM json_each(?))", (listed,))
            indexed += len(ids)
    return indexed


def refresh_words(conn: sqlite3.Connection, at_most: int | None = None) -> int:
    """Rebuild the word-index documents of the entities marked stale (up to `at_most` of
    them, or all) inside the caller's write transaction; how many were marked."""
    ids = [
        entity_id
        for (entity_id,) in conn.execute(
            "SELECT entity_id FROM entity_words_stale ORDER BY entity_id LIMIT ?", (-1 if at_most is None else at_most,)
        )
    ]
    if not ids:
        return 0
    listed = json.dumps(ids)
    conn.execute("DELETE FROM entity_words WHERE rowid IN (SELECT value FROM json_each(?))", (listed,))
    conn.execute(_REBUILD_DOCUMENTS, (listed,))
    refresh_project_words(conn, listed)
    conn.execute("DELETE FROM entity_words_stale WHERE entity_id IN (SELECT value FROM json_each(?))", (listed,))
    return len(ids)


def index_step(conn: sqlite3.Connection, rows: int = STEP_ROWS) -> bool:
    """Index up to `rows` pending rows of each trigram index and up to `rows // 4` stale word
    documents, in a write transaction of its own; True while there was something to index.

    It commits without an fsync: it only derives the indexes from rows already durable, and
    if a crash loses it, the pending records come back with it.
    """
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("BEGIN IMMEDIATE")
    try:
        done = index_pending(conn, rows) + refresh_words(conn, max(1, rows // 4))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return done > 0
