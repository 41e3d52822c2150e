"""SQLiteStore: the default backend, one SQLite file in WAL mode.

Every tool call is one transaction. Writers take the write lock up front
(`BEGIN IMMEDIATE`) so two processes never deadlock upgrading a read lock, and
SQLite's busy timeout makes a second process wait its turn instead of failing.
`synchronous=FULL` makes a commit durable before the call answers.
"""

from __future__ import annotations

import errno
import json
import os
import re
import sqlite3
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import orjson

from graphmem.core.errors import SchemaVersionError
from graphmem.core.models import Entity, Relation
from graphmem.storage.base import (
    AnalyticsRows,
    EntitySummary,
    FieldHits,
    StoreCounts,
    map_backend_errors,
    map_driver_errors,
)
from graphmem.storage.entity_query import EntityQuery
from graphmem.storage.sqlite import query as sqlite_query
from graphmem.storage.sqlite import ranking as sqlite_ranking
from graphmem.storage.sqlite.checkpoints import FALLBACK_PAGES, Checkpointer
from graphmem.storage.sqlite.ranking import term_query
from graphmem.storage.sqlite.text import (
    TRIGRAM_FORM,
    escaped_json,
    exact,
    key_item,
    keys_json,
    texts_in,
    texts_json,
    trigram_query,
)
from graphmem.storage.words import (
    RANKED_AT_MOST,
    SearchHit,
    SearchResult,
    Term,
    WordSearch,
    everywhere_count,
    informative,
    is_common,
    is_everywhere,
)

__all__ = ["SCHEMA_VERSION", "SQLiteStore"]

# How long a write waits for another process's transaction before giving up. Long on
# purpose: an agent would rather wait than see "database is locked".
BUSY_TIMEOUT_SECONDS = 60.0

# Trigram FTS5 can only look up needles of at least three characters; shorter ones scan.
_TRIGRAM = 3

_BEGIN_WRITE = "BEGIN IMMEDIATE"

# Run first in each write: it reloads the schema if another connection changed it. In SQLite
# 3.40 (Python 3.11's), once another connection has dropped and recreated triggers (a bulk
# import does), the first DELETE from a table with a foreign key here fails with "no such
# table" instead of reloading the schema; any read of the schema table first avoids that.
_LOAD_SCHEMA = "SELECT 1 FROM sqlite_master LIMIT 1"


def _migrations() -> list[tuple[int, str]]:
    folder = resources.files("graphmem.storage") / "migrations" / "sqlite"
    found = []
    for item in folder.iterdir():
        if item.name.endswith(".sql"):
            found.append((int(item.name.split("_", 1)[0]), item.read_text(encoding="utf-8")))
    return sorted(found)


SCHEMA_VERSION = max(number for number, _ in _migrations())


# A list of texts (names, observations) travels as one JSON parameter (`texts_json`) so a
# batch of any size is one statement; `texts_in` reads its items back exactly, NUL included.


def _extra_json(extra: dict[str, Any] | None) -> str | None:
    return json.dumps(extra, ensure_ascii=False) if extra else None


def _extra(value: str | None) -> dict[str, Any] | None:
    return json.loads(value) if value else None


# SQLite's page cache for this connection, filled only as pages are read. The default
# (2 MB) holds little of a large memory: reading the relations of the first entities (a
# few hundred rows spread over the table) then reads most pages from the operating system
# again, 1.15 ms instead of 0.7 at 40,000 entities (8 MB was enough there). 16 MB keeps
# the server well within the 150 MB it may take at a million entities.
_CACHE_KIB = 16 * 1024

# How often (in SQLite virtual-machine steps, about a millisecond's worth) a call under a
# time limit checks the clock.
_PROGRESS_STEPS = 100_000

_WALK_CHUNK = 128

# Row triggers that keep the indexes current one insert at a time, and for each the one
# statement that does its work for every row inserted after the marks (the largest ids
# before a bulk insert). A bulk insert suspends them: a trigger's insert into an FTS5
# table runs in a statement savepoint of its own, and FTS5 writes out its pending terms
# at every savepoint, so a bulk load through triggers makes one tiny index segment per
# row and then merges them all (4.5 s of a 40,000-entity import, where one INSERT …
# SELECT takes 0.7 s); the degree upserts cost another 3 s row by row.
_BULK_CATCH_UP = {
    "entities_ai": (
        "INSERT INTO entity_text (rowid, name_lc, type_lc)"
        f" SELECT id, {TRIGRAM_FORM.format('name_lc')}, {TRIGRAM_FORM.format('type_lc')}"
        " FROM entities WHERE id > :entity"
    ),
    "observations_ai": (
        "INSERT INTO observation_text (rowid, content_lc)"
        f" SELECT id, {TRIGRAM_FORM.format('content_lc')} FROM observations WHERE id > :observation"
    ),
    "entity_words_entities_ai": (
        "INSERT OR IGNORE INTO entity_words_stale (entity_id) SELECT id FROM entities WHERE id > :entity"
    ),
    "entity_words_observations_ai": (
        "INSERT OR IGNORE INTO entity_words_stale (entity_id)"
        " SELECT DISTINCT entity_id FROM observations WHERE id > :observation"
    ),
    "degrees_ai": (
        "INSERT INTO degrees (name, degree) SELECT name, count(*) FROM ("
        " SELECT from_name AS name FROM relations WHERE id > :relation"
        " UNION ALL SELECT to_name FROM relations WHERE id > :relation AND to_name <> from_name"
        ") WHERE true GROUP BY name ON CONFLICT (name) DO UPDATE SET degree = degree + excluded.degree"
    ),
    "entities_count_ai": (
        "UPDATE row_counts SET count = count + (SELECT count(*) FROM entities WHERE id > :entity)"
        " WHERE name = 'entities'"
    ),
    "observations_count_ai": (
        "UPDATE row_counts SET count = count + (SELECT count(*) FROM observations WHERE id > :observation)"
        " WHERE name = 'observations'"
    ),
    "relations_count_ai": (
        "UPDATE row_counts SET count = count + (SELECT count(*) FROM relations WHERE id > :relation)"
        " WHERE name = 'relations'"
    ),
    "entity_type_counts_ai": (
        "INSERT INTO entity_type_counts (entity_type, count)"
        " SELECT entity_type, count(*) FROM entities WHERE id > :entity GROUP BY entity_type"
        " ON CONFLICT (entity_type) DO UPDATE SET count = count + excluded.count"
    ),
    "relation_writes_ai": "UPDATE write_counts SET count = count + 1 WHERE name = 'relations'",
    "relation_type_counts_ai": (
        "INSERT INTO relation_type_counts (relation_type, count)"
        " SELECT relation_type, count(*) FROM relations WHERE id > :relation GROUP BY relation_type"
        " ON CONFLICT (relation_type) DO UPDATE SET count = count + excluded.count"
    ),
}

# The official read_graph answer, entities and relations in creation order.
_OFFICIAL_ENTITIES = """
SELECT json_group_array(json_object('name', e.name, 'entityType', e.entity_type, 'observations', (
    SELECT json_group_array(o.content) FROM (
        SELECT content FROM observations WHERE entity_id = e.id ORDER BY id
    ) AS o
)))
FROM (SELECT id, name, entity_type FROM entities ORDER BY id) AS e
"""
_OFFICIAL_RELATIONS = """
SELECT json_group_array(json_object('from', from_name, 'to', to_name, 'relationType', relation_type))
FROM (SELECT from_name, to_name, relation_type FROM relations ORDER BY id)
"""

# An entity's word-index document: name, aliases (text items of extra's `aliases`, a
# list or a single string), type, and its observations in order, one per line.
_REBUILD_DOCUMENTS = f"""
INSERT INTO entity_words (rowid, name, aliases, entity_type, observations)
SELECT e.id, e.name,
    CASE WHEN json_valid(e.extra) THEN coalesce(
        (SELECT group_concat({exact("value")}, char(10))
            FROM json_each({escaped_json("e.extra")}, '$.aliases') WHERE type = 'text'), ''
    ) ELSE '' END,
    e.entity_type,
    coalesce((SELECT group_concat(content, char(10)) FROM
        (SELECT content FROM observations AS o WHERE o.entity_id = e.id ORDER BY o.id)), '')
FROM entities AS e WHERE e.id IN (SELECT entity_id FROM entity_words_stale)
"""


# An entity's summary for get_analytics: columns 1 to 8 of EntitySummary.
_SUMMARY = (
    "SELECT e.name, e.entity_type,"
    " CASE WHEN json_valid(e.extra) THEN json_extract(e.extra, '$.createdAt') END, e.updated_at,"
    " CASE WHEN json_valid(e.extra) THEN json_extract(e.extra, '$.version') END, e.importance,"
    " (SELECT count(*) FROM observations AS o WHERE o.entity_id = e.id),"
    " coalesce((SELECT d.degree FROM degrees AS d WHERE d.name = e.name), 0)"
    " FROM entities AS e"
)


def _summary(row: tuple[Any, ...]) -> EntitySummary:
    name, entity_type, created_at, updated_at, version, importance, observations, degree = row
    return EntitySummary(
        name,
        entity_type,
        created_at if isinstance(created_at, str) else None,
        updated_at if isinstance(updated_at, str) else None,
        version if isinstance(version, int) else None,
        float(importance) if isinstance(importance, int | float) else None,
        observations,
        degree,
    )


def _fts_query(terms: Sequence[Term]) -> str | None:
    """The FTS5 query for a word search: any of the terms, each a word or a word prefix."""
    if not terms:
        return None
    return " OR ".join(map(term_query, terms))


# Up to this many entities holding a word, checking each is cheaper than the trigram walk.
_WORD_CANDIDATES = 200
# A word the word index holds as it is (ASCII letters and digits), and the characters that
# end a word in both the index's tokenizer and this check (ASCII, not letters, digits or _).
_ASCII_WORD = re.compile(r"[a-z0-9]+")
_WORD_ENDS = frozenset(" \t\n\r!\"#$%&'()*+,-./:;<=>?@[\\]^`{|}~")


def _word_inside(needle: str) -> Term | None:
    """The longest word every text containing the needle holds in the word index, or None.

    A word of the needle with a word-ending character on each side inside the needle
    ("4321" in "#4321-1") is a word of its own in any text that contains the needle. A
    number ending the needle, with a word-ending character before it ("4321" in
    "entity-4321"), starts a word of any such text ("entity-43210"): a prefix term. Only
    a number: the index stems words, and the stem of a longer word need not start with
    the stem of its start ("generalization" is "gener", not "genera..."), while a number
    is never stemmed. So the word index lists every entity whose texts could contain it.
    """
    words = []
    for match in _ASCII_WORD.finditer(needle):
        if match.start() == 0 or needle[match.start() - 1] not in _WORD_ENDS:
            continue
        if match.end() < len(needle):
            if needle[match.end()] in _WORD_ENDS:
                words.append(Term(match.group()))
        elif match.group().isdigit():
            words.append(Term(match.group(), prefix=True))
    return max(words, key=lambda term: len(term.word)) if words else None


@dataclass(frozen=True, slots=True)
class _OfficialQuery:
    """One query for the ids of entities containing a needle (the official match)."""

    sql: str
    params: dict[str, Any]
    newest_first: str
    """The ORDER BY that walks the rows newest first, cheaply (a rowid, walked backwards)."""
    in_names: bool
    """It looks in names and types (else in observations)."""


def _official_queries(search: WordSearch, selective: Callable[[Term], bool]) -> list[_OfficialQuery]:
    """Queries for the ids of the entities containing a needle (the official match).

    `selective(word)` says whether the word index's entities for a word are few enough to
    check each one. The observation queries give an entity once per matching row (see
    `SQLiteStore._walk_official`).
    """
    of_type = " AND e.entity_type = :type" if search.entity_type is not None else ""
    join_entity = " JOIN entities AS e ON e.id = o.entity_id" if of_type else ""
    queries: list[_OfficialQuery] = []
    for needle in dict.fromkeys(search.needles):
        params = {"needle": needle, "phrase": trigram_query(needle), "type": search.entity_type}
        if not needle:
            # Every text contains the empty string.
            queries.append(_OfficialQuery("SELECT e.id FROM entities AS e WHERE 1" + of_type, params, "e.id", True))
            continue
        word = _word_inside(needle)
        if word is not None and not selective(word):
            word = None  # a word in many entities ("0" in every tag): the trigrams narrow better
        if len(needle) >= _TRIGRAM:
            # The trigram index narrows the rows; instr() keeps the answer exact.
            entities = "entity_text JOIN entities AS e ON e.id = entity_text.rowid WHERE entity_text MATCH :phrase AND"
            entities_newest = "entity_text.rowid"
            observations = (
                "observation_text JOIN observations AS o ON o.id = observation_text.rowid"
                f"{join_entity} WHERE observation_text MATCH :phrase AND"
            )
            observations_newest = "observation_text.rowid"
        else:
            entities, entities_newest = "entities AS e WHERE", "e.id"
            observations, observations_newest = f"observations AS o{join_entity} WHERE", "o.id"
        if word is not None:
            # Fewer candidates still: the entities whose names, types or observations hold
            # that word. Common trigrams ("-1" in every tag, "ent" in every "entity-N" name)
            # make the trigram index walk long lists.
            params["name_word"] = f"{{name entity_type}} : {term_query(word)}"
            entities = (
                "entities AS e WHERE e.id IN (SELECT rowid FROM entity_words WHERE entity_words MATCH :name_word) AND"
            )
            entities_newest = "e.id"
            params["word"] = f"observations : {term_query(word)}"
            observations = (
                f"observations AS o{join_entity} WHERE o.entity_id IN"
                " (SELECT rowid FROM entity_words WHERE entity_words MATCH :word) AND"
            )
            observations_newest = "o.id"
        queries.append(
            _OfficialQuery(
                f"SELECT e.id FROM {entities} (instr(e.name_lc, :needle) > 0 OR instr(e.type_lc, :needle) > 0)"
                + of_type,
                params,
                entities_newest,
                True,
            )
        )
        queries.append(
            _OfficialQuery(
                f"SELECT o.entity_id FROM {observations} instr(o.content_lc, :needle) > 0" + of_type,
                params,
                observations_newest,
                False,
            )
        )
    return queries


def _newest_first(queries: list[_OfficialQuery]) -> list[_OfficialQuery]:
    """The queries in the order of the newest-first walk: names and types before observations."""
    return sorted(queries, key=lambda query: not query.in_names)


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """A connection that never writes: the file, its folder and any -wal or -shm stay as they are."""
    if not path.is_file():
        raise FileNotFoundError(errno.ENOENT, "No such file", str(path))
    address = f"file:{urllib.parse.quote(str(path.resolve()))}"
    connection = sqlite3.connect(f"{address}?mode=ro", uri=True, isolation_level=None, check_same_thread=False)
    try:
        connection.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        return connection
    except sqlite3.OperationalError:
        connection.close()
        wal = Path(f"{path}-wal")
        if wal.exists() and wal.stat().st_size > 0:
            raise
    # A WAL database needs its -shm file, which a folder this user cannot write cannot
    # hold. With no -wal file (or an empty one) every committed page is in the database
    # itself, and nobody can be writing (no writer could create the -wal), so SQLite may
    # read it as an unchanging file.
    return sqlite3.connect(f"{address}?mode=ro&immutable=1", uri=True, isolation_level=None, check_same_thread=False)


def create_private_file(path: Path) -> None:
    """Create `path` (and its missing parent folders) readable by the owner only, if it is new."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    os.close(fd)


@dataclass(frozen=True, slots=True)
class _OfficialGraph:
    """A small memory's whole graph in the official wire form, and when it was read."""

    state: tuple[int, int]
    """`SQLiteStore._state()`: the memory is unchanged while it is."""
    relation_writes: int
    """The relations' write count (migration 0010): they are unchanged while it is."""
    entities: list[dict[str, Any]]
    relations: list[dict[str, Any]]


class SQLiteStore:
    """A `Store` over one SQLite database file (or `:memory:`)."""

    def __init__(self, path: Path | str, *, read_only: bool = False) -> None:
        """Open (or create) the database; `read_only` opens an existing one without writing anything,
        so that a memory in a folder this user cannot write can still be read and exported."""
        self.location = str(path)
        with map_backend_errors():
            if read_only:
                self._conn = _connect_read_only(Path(path))
            else:
                if str(path) != ":memory:":
                    create_private_file(Path(path))
                # check_same_thread=False: calls arrive on worker threads; self._lock serialises them.
                self._conn = sqlite3.connect(
                    str(path), timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None, check_same_thread=False
                )
                self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute("PRAGMA synchronous=FULL")
            self._conn.execute("PRAGMA foreign_keys=ON")
            self._conn.execute(f"PRAGMA cache_size=-{_CACHE_KIB}")
            if read_only:
                self._check_schema_is_current()
            else:
                self._migrate()
        self._checkpointer: Checkpointer | None = None
        if str(path) != ":memory:" and not read_only:
            self._checkpointer = Checkpointer(str(path), BUSY_TIMEOUT_SECONDS)
            self._conn.execute(f"PRAGMA wal_autocheckpoint={FALLBACK_PAGES}")
        self._lock = threading.RLock()
        self._term_counts = sqlite_ranking.TermCounts()
        self._writes = 0
        """Write transactions this connection committed: what it changed, data_version does not show."""
        self._official: _OfficialGraph | None = None
        """The last official_graph answer of a small memory, and the state it was read in."""
        self._depth = 0
        self._writing = False
        self._bulk = False

    # -- transactions ---------------------------------------------------------

    def _check_schema_is_current(self) -> None:
        current = self._conn.execute("PRAGMA user_version").fetchone()[0]
        if current > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{self.location} has schema version {current}, but this graphmem knows only up to "
                f"{SCHEMA_VERSION}; upgrade graphmem to open it."
            )
        if current < SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{self.location} has schema version {current} and this graphmem reads {SCHEMA_VERSION}; "
                "it cannot be upgraded without write access. Open it once where it can be written."
            )

    def integrity_problems(self) -> list[str]:
        with self._lock, map_backend_errors():
            rows = [row[0] for row in self._conn.execute("PRAGMA quick_check")]
        return [] if rows == ["ok"] else rows

    def _migrate(self) -> None:
        current = self._conn.execute("PRAGMA user_version").fetchone()[0]
        if current > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{self.location} has schema version {current}, but this graphmem knows only up to "
                f"{SCHEMA_VERSION}; upgrade graphmem to open it."
            )
        pending = [(number, sql) for number, sql in _migrations() if number > current]
        if not pending:
            return
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            # Re-read under the write lock: another process may have migrated meanwhile.
            current = self._conn.execute("PRAGMA user_version").fetchone()[0]
            for number, sql in pending:
                if number > current:
                    for statement in _split_sql(sql):
                        self._conn.execute(statement)
                    self._conn.execute(f"PRAGMA user_version = {number}")
            self._refresh_word_index()
            self._conn.execute("COMMIT")
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise

    @contextmanager
    def _transaction(self, begin: str) -> Iterator[None]:
        with self._lock:
            if self._depth:
                # Already inside a transaction on this connection: join it.
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            with map_backend_errors():
                self._conn.execute(begin)
                if begin == _BEGIN_WRITE:
                    self._conn.execute(_LOAD_SCHEMA).fetchall()
            self._depth = 1
            self._writing = begin == _BEGIN_WRITE
            try:
                with map_driver_errors():
                    yield
                    if self._writing:
                        self._refresh_word_index()
            except BaseException:
                self._depth, self._writing = 0, False
                self._roll_back()
                raise
            wrote, self._depth, self._writing = self._writing, 0, False
            if wrote:
                # The word index may have changed: the terms' counts are recounted.
                self._term_counts.forget()
                self._writes += 1
            try:
                with map_backend_errors():
                    self._conn.execute("COMMIT")
            except BaseException:
                self._roll_back()
                raise
            if wrote and self._checkpointer is not None:
                self._checkpointer.request()

    def _roll_back(self) -> None:
        # A statement stopped by the time limit has already rolled its transaction back
        # (SQLite does so on an interrupt); a second ROLLBACK would fail.
        if self._conn.in_transaction:
            with map_backend_errors():
                self._conn.execute("ROLLBACK")

    def write(self) -> AbstractContextManager[None]:
        return self._transaction(_BEGIN_WRITE)

    def read(self) -> AbstractContextManager[None]:
        return self._transaction("BEGIN")

    @contextmanager
    def bulk_insert(self) -> Iterator[None]:
        with self._lock:
            if not self._writing:
                raise RuntimeError("bulk_insert() runs inside write().")
            if self._bulk:
                yield
                return
            marks = {
                name: self._conn.execute(f"SELECT coalesce(max(id), 0) FROM {table}").fetchone()[0]
                for name, table in (("entity", "entities"), ("observation", "observations"), ("relation", "relations"))
            }
            definitions = self._conn.execute(
                "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name IN"
                f" ({', '.join('?' * len(_BULK_CATCH_UP))})",
                tuple(_BULK_CATCH_UP),
            ).fetchall()
            # Inside the write transaction: if anything fails, the rollback brings the
            # triggers back with everything else, and other connections never see them gone.
            for name, _ in definitions:
                self._conn.execute(f"DROP TRIGGER {name}")
            self._bulk = True
            try:
                yield
            finally:
                self._bulk = False
            for name, sql in definitions:
                self._conn.execute(_BULK_CATCH_UP[name], marks)
                self._conn.execute(sql)

    def close(self) -> None:
        with self._lock:
            if self._checkpointer is not None:
                self._checkpointer.close()
            self._conn.close()

    def size_on_disk(self) -> int:
        total = 0
        for suffix in ("", "-wal"):
            with suppress(FileNotFoundError):
                total += os.stat(f"{self.location}{suffix}").st_size
        return total

    def compact(self) -> None:
        with self._lock, map_backend_errors():
            if self._depth:
                raise RuntimeError("compact() cannot run inside a transaction.")
            # Merge each full-text index's segments, rewrite the file without free pages,
            # then empty the write-ahead log into it.
            for table in ("entity_words", "entity_text", "observation_text"):
                self._conn.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")
            self._conn.execute("VACUUM")
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    # -- reads ----------------------------------------------------------------

    def existing_names(self, names: Sequence[str]) -> set[str]:
        names_json = texts_json(names)
        rows = self._conn.execute(f"SELECT name FROM entities WHERE name IN ({texts_in(names_json)})", (names_json,))
        return {name for (name,) in rows}

    def resolve_names(self, names: Sequence[str]) -> dict[str, str]:
        resolved = {name: name for name in self.existing_names(names)}
        others = [name for name in dict.fromkeys(names) if name not in resolved]
        if others:
            others_json = texts_json(others)
            rows = self._conn.execute(
                "SELECT a.alias, e.name FROM entity_aliases AS a JOIN entities AS e ON e.id = a.entity_id"
                f" WHERE a.alias IN ({texts_in(others_json)}) ORDER BY a.entity_id DESC",
                (others_json,),
            )
            # Oldest entity last, so it wins.
            resolved.update(dict(rows.fetchall()))
        return resolved

    def get_entities(self, names: Sequence[str]) -> list[Entity]:
        names_json = texts_json(names)
        rows = self._conn.execute(
            f"SELECT id, name, entity_type, extra FROM entities WHERE name IN ({texts_in(names_json)}) ORDER BY id",
            (names_json,),
        ).fetchall()
        if not rows:
            return []
        observations: dict[int, list[str]] = {row[0]: [] for row in rows}
        for entity_id, content in self._conn.execute(
            "SELECT entity_id, content FROM observations"
            " WHERE entity_id IN (SELECT value FROM json_each(?)) ORDER BY entity_id, id",
            (json.dumps(list(observations)),),
        ):
            observations[entity_id].append(content)
        return [
            Entity(name, entity_type, tuple(observations[entity_id]), _extra(extra))
            for entity_id, name, entity_type, extra in rows
        ]

    def iter_entities(self) -> Iterator[Entity]:
        observations = self._conn.execute("SELECT entity_id, content FROM observations ORDER BY entity_id, id")
        pending = next(observations, None)
        for entity_id, name, entity_type, extra in self._conn.execute(
            "SELECT id, name, entity_type, extra FROM entities ORDER BY id"
        ):
            contents = []
            # Both cursors walk in entity-id order, so this is a merge join in one pass.
            while pending is not None and pending[0] <= entity_id:
                if pending[0] == entity_id:
                    contents.append(pending[1])
                pending = next(observations, None)
            yield Entity(name, entity_type, tuple(contents), _extra(extra))

    def iter_relations(self) -> Iterator[Relation]:
        for from_, to, relation_type, extra in self._conn.execute(
            "SELECT from_name, to_name, relation_type, extra FROM relations ORDER BY id"
        ):
            yield Relation(from_, to, relation_type, _extra(extra))

    @contextmanager
    def time_limit(self, seconds: float) -> Iterator[None]:
        if seconds <= 0:
            yield
            return
        deadline = time.monotonic() + seconds

        def past_deadline() -> bool:
            # SQLite calls this every _PROGRESS_STEPS virtual-machine steps; True interrupts
            # the statement, which fails as "interrupted" and rolls its transaction back.
            return time.monotonic() > deadline

        with self._lock:
            self._conn.set_progress_handler(past_deadline, _PROGRESS_STEPS)
            try:
                yield
            finally:
                self._conn.set_progress_handler(None, 0)

    def wait_for_locks(self, seconds: float) -> None:
        with self._lock:
            self._conn.execute(f"PRAGMA busy_timeout = {max(0, round(seconds * 1000))}")

    def committed_writes(self) -> int:
        return self._writes

    def version(self) -> tuple[int, int] | None:
        with self._lock:
            if self._depth:
                return None
            return self._state()

    def _state(self) -> tuple[int, int]:
        # data_version moves when another connection commits, the write count when this one
        # does: an unchanged pair is an unchanged memory.
        (version,) = self._conn.execute("PRAGMA data_version").fetchone()
        return (version, self._writes)

    def official_graph(self, at_most: int) -> dict[str, list[dict[str, Any]]] | None:
        # An unchanged memory gives the same answer.
        state = self._state()
        answer = self._official
        if self._writing or answer is None or answer.state != state:
            if self._entity_count(None) > at_most:
                return None
            # SQLite writes the JSON in C; orjson reads it back faster than Python could build it.
            (entities_json,) = self._conn.execute(_OFFICIAL_ENTITIES).fetchone()
            (relation_writes,) = self._conn.execute(
                "SELECT count FROM write_counts WHERE name = 'relations'"
            ).fetchone()
            if answer is not None and answer.relation_writes == relation_writes:
                relations = answer.relations  # a write to entities only: the relations are those kept
            else:
                (relations_json,) = self._conn.execute(_OFFICIAL_RELATIONS).fetchone()
                relations = orjson.loads(relations_json)
            answer = _OfficialGraph(state, relation_writes, orjson.loads(entities_json), relations)
            # Inside a write the memory may still roll back: nothing read then is kept.
            self._official = None if self._writing else answer
        if len(answer.entities) > at_most:
            return None
        # New lists for the caller; the items are never changed by anyone.
        return {"entities": list(answer.entities), "relations": list(answer.relations)}

    def page_entities(self, entity_type: str | None, offset: int, limit: int | None) -> tuple[list[Entity], int]:
        where = "" if entity_type is None else " WHERE entity_type = ?1"
        parameters: tuple[object, ...] = () if entity_type is None else (entity_type,)
        total = self._entity_count(entity_type)
        start = self._dense_id(offset, total) if entity_type is None and offset else None
        if start is not None:
            where, parameters, offset = " WHERE id >= ?1", (start,), 0
        rows = self._conn.execute(
            f"SELECT id, name, entity_type, extra FROM entities{where} ORDER BY id LIMIT ? OFFSET ?",
            (*parameters, -1 if limit is None else limit, offset),
        ).fetchall()
        return self._entities_of(rows), total

    def query_entities(self, query: EntityQuery) -> tuple[list[Entity], int]:
        rows, total = sqlite_query.query_rows(self._conn, query)
        return self._entities_of(rows), total

    def _entities_of(self, rows: Sequence[tuple[int, str, str, str | None]]) -> list[Entity]:
        """The entities of rows (id, name, type, extra), in the rows' order, with their observations."""
        observations: dict[int, list[str]] = {row[0]: [] for row in rows}
        if rows:
            for entity_id, content in self._conn.execute(
                "SELECT entity_id, content FROM observations"
                " WHERE entity_id IN (SELECT value FROM json_each(?)) ORDER BY entity_id, id",
                (json.dumps(list(observations)),),
            ):
                observations[entity_id].append(content)
        return [
            Entity(name, entity_type, tuple(observations[entity_id]), _extra(extra))
            for entity_id, name, entity_type, extra in rows
        ]

    def _dense_id(self, offset: int, total: int) -> int | None:
        """The id of the entity at `offset`, when the ids have no gaps; None when they have some.

        SQLite walks every row an OFFSET skips (15 ms for 900,000 entities); a memory that
        never lost an entity (an import, say) has ids first..last, and the entity at
        `offset` is simply first + offset.
        """
        # Two subqueries: SQLite answers min() or max() alone from the ends of the rowid
        # tree, but scans a whole index for both in one SELECT.
        first, last = self._conn.execute(
            "SELECT (SELECT min(id) FROM entities), (SELECT max(id) FROM entities)"
        ).fetchone()
        if first is None or last - first + 1 != total:
            return None
        return int(first) + offset

    def relations_touching(self, names: Sequence[str]) -> list[Relation]:
        names_json = texts_json(names)
        rows = self._conn.execute(
            "SELECT from_name, to_name, relation_type, extra FROM relations WHERE id IN ("
            f" SELECT id FROM relations WHERE from_name IN ({texts_in(names_json, '?1')})"
            f" UNION SELECT id FROM relations WHERE to_name IN ({texts_in(names_json, '?1')})"
            ") ORDER BY id",
            (names_json,),
        )
        return [Relation(from_, to, relation_type, _extra(extra)) for from_, to, relation_type, extra in rows]

    def relation_keys_touching(self, names: Sequence[str]) -> list[tuple[str, str, str]]:
        names_json = texts_json(names)
        return self._conn.execute(
            "SELECT from_name, to_name, relation_type FROM relations WHERE id IN ("
            f" SELECT id FROM relations WHERE from_name IN ({texts_in(names_json, '?1')})"
            f" UNION SELECT id FROM relations WHERE to_name IN ({texts_in(names_json, '?1')})"
            ") ORDER BY id",
            (names_json,),
        ).fetchall()

    def existing_relations(self, keys: Sequence[tuple[str, str, str]]) -> set[tuple[str, str, str]]:
        found_keys = keys_json(keys)
        rows = self._conn.execute(
            "SELECT r.from_name, r.to_name, r.relation_type FROM json_each(?) AS k JOIN relations AS r"
            f" ON r.from_name = {key_item(found_keys, 0)} AND r.to_name = {key_item(found_keys, 1)}"
            f" AND r.relation_type = {key_item(found_keys, 2)}",
            (found_keys,),
        )
        return {(from_, to, relation_type) for from_, to, relation_type in rows}

    def observations_of(self, name: str) -> list[str] | None:
        row = self._conn.execute("SELECT id FROM entities WHERE name = ?", (name,)).fetchone()
        if row is None:
            return None
        rows = self._conn.execute("SELECT content FROM observations WHERE entity_id = ? ORDER BY id", row)
        return [content for (content,) in rows]

    def find_text(self, needle: str) -> dict[str, FieldHits]:
        if len(needle) >= _TRIGRAM:
            phrase = trigram_query(needle)
            # The FTS match narrows the rows through the index; instr() keeps the answer
            # exact whatever the tokenizer does with the phrase.
            entity_rows = self._conn.execute(
                "SELECT e.name, instr(e.name_lc, ?1) > 0, instr(e.type_lc, ?1) > 0, e.id"
                " FROM entity_text JOIN entities AS e ON e.id = entity_text.rowid"
                " WHERE entity_text MATCH ?2",
                (needle, phrase),
            ).fetchall()
            observation_rows = self._conn.execute(
                "SELECT e.name, count(*), e.id FROM observation_text"
                " JOIN observations AS o ON o.id = observation_text.rowid"
                " JOIN entities AS e ON e.id = o.entity_id"
                " WHERE observation_text MATCH ?2 AND instr(o.content_lc, ?1) > 0 GROUP BY o.entity_id",
                (needle, phrase),
            ).fetchall()
        else:
            entity_rows = self._conn.execute(
                "SELECT name, instr(name_lc, ?1) > 0, instr(type_lc, ?1) > 0, id FROM entities"
                " WHERE instr(name_lc, ?1) > 0 OR instr(type_lc, ?1) > 0",
                (needle,),
            ).fetchall()
            observation_rows = self._conn.execute(
                "SELECT e.name, count(*), e.id FROM observations AS o JOIN entities AS e ON e.id = o.entity_id"
                " WHERE instr(o.content_lc, ?1) > 0 GROUP BY o.entity_id",
                (needle,),
            ).fetchall()
        hits: dict[str, FieldHits] = {}
        for name, in_name, in_type, entity_id in entity_rows:
            if in_name or in_type:
                hits[name] = FieldHits(bool(in_name), bool(in_type), 0, entity_id)
        for name, count, entity_id in observation_rows:
            previous = hits.get(name)
            if previous is None:
                hits[name] = FieldHits(False, False, count, entity_id)
            else:
                hits[name] = FieldHits(previous.in_name, previous.in_type, count, entity_id)
        return hits

    # -- ranked search (issue 3, part 1) ---------------------------------------------------

    def search_entities(self, search: WordSearch) -> SearchResult:
        if self._writing:
            # A search inside a write transaction sees what the transaction wrote. FTS5
            # writes its statistics only at commit, so it ranks alone, and nothing is remembered.
            self._refresh_word_index()
            # The index holds one row per entity: the triggers' count saves a scan, except
            # inside bulk_insert, which suspends them.
            if self._bulk:
                (rows,) = self._conn.execute("SELECT count(*) FROM entities").fetchone()
            else:
                rows = self._entity_count(None)
            words = None
        else:
            rows, words = sqlite_ranking.index_size(self._conn, "entity_words")
            (version,) = self._conn.execute("PRAGMA data_version").fetchone()
            self._term_counts.valid_for((version, rows))
        end = None if search.limit is None else search.offset + search.limit
        # The order is known to here; past it, only its length is (see named_at_most).
        named_end = end if search.named_at_most is None else search.offset + search.named_at_most
        if end is not None and named_end is not None:
            named_end = min(end, named_end)
        newest, complete = self._official_ids(search, RANKED_AT_MOST)
        if not complete:
            return self._newest_official(search, end, named_end, newest)
        official = set(newest)
        terms, counts = self._informative_terms(search.terms, rows)
        query = _fts_query(terms)
        # Words found everywhere ("#0-1" is "0" and "1", in every entity's tag) cannot tell
        # entities apart: they neither order the whole-query matches nor add to them.
        everywhere = bool(official) and bool(counts) and self._only_everywhere(terms, counts, rows)
        rank_by = None if everywhere else query
        ranked = [(i, True, score) for i, score in self._rank_official(search, rank_by, official, named_end)]
        wanted = 0 if everywhere else search.max_word_matches if end is None else end - len(official)
        best: list[tuple[int, float]] = []
        if query and wanted > 0:
            pruned = None
            if words is not None:
                # Words each in more entities than are worth scoring are scored among the newest.
                choose = (
                    sqlite_ranking.newest_matches
                    if all(count > RANKED_AT_MOST for count in counts)
                    else sqlite_ranking.best_matches
                )
                pruned = choose(
                    self._conn, terms, counts, rows, words, search.weights, wanted, official, search.entity_type
                )
            best = pruned if pruned is not None else self._best_words(search, query, official, wanted)
        length = len(official) + len(best)
        if len(ranked) == len(official):
            ranked += [(i, False, score) for i, score in best]
        page = ranked[search.offset : named_end]
        hits = self._hits(page)
        total = max(0, (length if end is None else min(end, length)) - search.offset)
        return SearchResult(hits, total)

    def _hits(self, page: Sequence[tuple[int, bool, float]]) -> list[SearchHit]:
        names = dict(
            self._conn.execute(
                "SELECT id, name FROM entities WHERE id IN (SELECT value FROM json_each(?))",
                (json.dumps([i for i, _, _ in page]),),
            ).fetchall()
        )
        return [SearchHit(names[i], is_official, score) for i, is_official, score in page]

    def _newest_official(
        self, search: WordSearch, end: int | None, named_end: int | None, first: list[int]
    ) -> SearchResult:
        """The answer when more than `RANKED_AT_MOST` entities contain a query: newest first.

        Each match is found walking an index from its newest row: first the entities
        whose name or type contains a query, then those whose observations do, each where
        its most recent matching row is. A page costs what it shows, not what matches.
        Without a limit the walk counts one past `RANKED_AT_MOST` (or the names wanted),
        and `more` says that it stopped there. `first`: the start of that order, found
        already (by `_official_ids`), which is often all that is needed.
        """
        if end is not None:
            reach: int | None = end
        elif named_end is not None:
            reach = max(named_end, RANKED_AT_MOST) + 1
        else:
            reach = None  # every match asked for by name: walk them all
        enough = reach is not None and len(first) >= reach
        ids = first[:reach] if enough else self._walk_official(search, reach, first)
        hits = self._hits([(entity_id, True, 0.0) for entity_id in ids[search.offset : named_end]])
        if end is not None:
            return SearchResult(hits, max(0, min(end, len(ids)) - search.offset))
        more = reach is not None and len(ids) >= reach
        return SearchResult(hits, max(0, len(ids) - search.offset), more=more)

    def _rank_official(
        self, search: WordSearch, query: str | None, official: set[int], upto: int | None
    ) -> list[tuple[int, float]]:
        """The official matches best first (by score, then creation), the first `upto` of them.

        When only a few of many are wanted (a common word), SQLite ranks and cuts them,
        so the thousands past the cut are neither sorted nor named in Python.
        """
        if upto is not None and upto < len(official) and query:
            top = self._conn.execute(
                "SELECT rowid, -bm25(entity_words, ?, ?, ?, ?) AS score FROM entity_words"
                " WHERE entity_words MATCH ? AND +rowid IN (SELECT value FROM json_each(?))"
                " ORDER BY score DESC, rowid LIMIT ?",
                (*search.weights, query, json.dumps(sorted(official)), upto),
            ).fetchall()
            if len(top) == upto:
                return top
            # Every scored match is in `top`: the unscored ones follow in creation order.
            seen = {entity_id for entity_id, _ in top}
            return top + [(i, 0.0) for i in sorted(official - seen)[: upto - len(top)]]
        scores = self._scores(search, query, official) if query and official else {}
        ordered = sorted(official, key=lambda i: (-scores.get(i, 0.0), i))
        return [(i, scores.get(i, 0.0)) for i in ordered[:upto]]

    def _only_everywhere(self, terms: Sequence[Term], counts: Sequence[int], rows: int) -> bool:
        """Whether every term is `is_everywhere`; counted further only when all are common."""
        if not all(is_common(count, rows) for count in counts):
            return False
        at_least = everywhere_count(rows)
        return all(is_everywhere(self._count_term(term, at_least), rows) for term in terms)

    def _informative_terms(self, terms: Sequence[Term], rows: int) -> tuple[list[Term], list[int]]:
        """The terms a query is ranked by (`words.informative`: none found nowhere, none
        found in half of the rows or more unless all found are), and how many rows each
        matches (counting stops at half: past that a term is common)."""
        counts = [self._count_term(term, (rows + 1) // 2) for term in terms]
        kept = informative(counts, rows)
        return [terms[index] for index in kept], [counts[index] for index in kept]

    def _count_term(self, term: Term, at_most: int) -> int:
        if self._writing:
            # Counts remembered before this write may be stale now.
            return sqlite_ranking.count_term(self._conn, term, at_most)
        return self._term_counts.count(self._conn, term, at_most)

    def _selective_word(self, word: Term) -> bool:
        """Whether at most `_WORD_CANDIDATES` entities hold `word` (counted once per index state)."""
        return self._count_term(word, _WORD_CANDIDATES + 1) <= _WORD_CANDIDATES

    def _official_ids(self, search: WordSearch, cap: int) -> tuple[list[int], bool]:
        """Ids of the entities containing a needle, newest first (see `_newest_official`),
        and whether that is all of them: it stops past `cap`."""
        found = self._walk_official(search, cap + 1)
        return found, len(found) <= cap

    def _walk_official(self, search: WordSearch, reach: int | None, start: Sequence[int] = ()) -> list[int]:
        """The first `reach` (or all) ids of the entities containing a needle, newest first.

        `start`: the beginning of that order, when known. An entity with several matching
        rows is met again further on: Python keeps its first, newest place, which costs a
        third of what a DISTINCT does in SQLite (a temporary b-tree of every id).
        """
        found = dict.fromkeys(start)
        for official in _newest_first(_official_queries(search, self._selective_word)):
            if reach is not None and len(found) >= reach:
                break
            cursor = self._conn.execute(f"{official.sql} ORDER BY {official.newest_first} DESC", official.params)
            try:
                while (reach is None or len(found) < reach) and (chunk := cursor.fetchmany(_WALK_CHUNK)):
                    for (entity_id,) in chunk:
                        found[entity_id] = None
                        if reach is not None and len(found) >= reach:
                            break
            finally:
                cursor.close()
        return list(found)

    def _scores(self, search: WordSearch, query: str, ids: set[int]) -> dict[int, float]:
        # "+rowid" keeps SQLite from running the FTS query once per id: one pass over
        # the query's matches, and bm25() only for the rows asked about.
        rows = self._conn.execute(
            "SELECT rowid, -bm25(entity_words, ?, ?, ?, ?) FROM entity_words"
            " WHERE entity_words MATCH ? AND +rowid IN (SELECT value FROM json_each(?))",
            (*search.weights, query, json.dumps(sorted(ids))),
        )
        return dict(rows.fetchall())

    def _word_matches_sql(self, search: WordSearch) -> tuple[str, list[Any]]:
        sql = "SELECT entity_words.rowid, -bm25(entity_words, ?, ?, ?, ?) AS score FROM entity_words"
        params: list[Any] = [*search.weights]
        if search.entity_type is not None:
            sql += " JOIN entities AS e ON e.id = entity_words.rowid AND e.entity_type = ?"
            params.append(search.entity_type)
        return sql + " WHERE entity_words MATCH ?", params

    def _best_words(self, search: WordSearch, query: str, exclude: set[int], limit: int) -> list[tuple[int, float]]:
        """The best `limit` word matches outside `exclude`, SQLite ranking and cutting them."""
        sql, params = self._word_matches_sql(search)
        sql += (
            " AND entity_words.rowid NOT IN (SELECT value FROM json_each(?))"
            " ORDER BY score DESC, entity_words.rowid LIMIT ?"
        )
        return self._conn.execute(sql, (*params, query, json.dumps(sorted(exclude)), limit)).fetchall()

    def _refresh_word_index(self) -> None:
        """Rebuild the word-index documents of the entities the triggers marked as changed."""
        if not self._conn.execute("SELECT EXISTS (SELECT 1 FROM entity_words_stale)").fetchone()[0]:
            return
        self._conn.execute("DELETE FROM entity_words WHERE rowid IN (SELECT entity_id FROM entity_words_stale)")
        self._conn.execute(_REBUILD_DOCUMENTS)
        self._conn.execute("DELETE FROM entity_words_stale")

    # -- end of ranked search --------------------------------------------------------------

    def counts(self) -> StoreCounts:
        counts = dict(self._conn.execute("SELECT name, count FROM row_counts").fetchall())
        return StoreCounts(counts["entities"], counts["relations"], counts["observations"])

    def _entity_count(self, entity_type: str | None) -> int:
        """How many entities there are (of one type), from the counts the triggers keep."""
        if entity_type is None:
            row = self._conn.execute("SELECT count FROM row_counts WHERE name = 'entities'").fetchone()
        else:
            row = self._conn.execute(
                "SELECT count FROM entity_type_counts WHERE entity_type = ?", (entity_type,)
            ).fetchone()
        return 0 if row is None else int(row[0])

    # -- navigation (issue 3, parts 3 and 4) -----------------------------------------------

    def entity_type_counts(self) -> list[tuple[str, int]]:
        rows = self._conn.execute("SELECT entity_type, count FROM entity_type_counts ORDER BY count DESC, entity_type")
        return [(entity_type, count) for entity_type, count in rows]

    def relation_type_counts(self) -> list[tuple[str, int]]:
        rows = self._conn.execute(
            "SELECT relation_type, count FROM relation_type_counts ORDER BY count DESC, relation_type"
        )
        return [(relation_type, count) for relation_type, count in rows]

    def find_relations(
        self, from_: str | None, to: str | None, relation_type: str | None, offset: int, limit: int | None
    ) -> tuple[list[Relation], int]:
        conditions = []
        parameters: list[object] = []
        for column, value in (("from_name", from_), ("to_name", to), ("relation_type", relation_type)):
            if value is not None:
                conditions.append(f"{column} = ?")
                parameters.append(value)
        where = " WHERE " + " AND ".join(conditions) if conditions else ""
        (total,) = self._conn.execute(f"SELECT count(*) FROM relations{where}", parameters).fetchone()
        rows = self._conn.execute(
            f"SELECT from_name, to_name, relation_type, extra FROM relations{where} ORDER BY id LIMIT ? OFFSET ?",
            (*parameters, -1 if limit is None else limit, offset),
        )
        return [Relation(f, t, r, _extra(extra)) for f, t, r, extra in rows], total

    def analytics(self, thread_id: str | None, limit: int) -> AnalyticsRows:
        of_thread = "" if thread_id is None else " AND e.thread_id = :thread"
        params = {"thread": thread_id, "limit": limit}

        def summaries(where: str, order: str) -> list[EntitySummary]:
            rows = self._conn.execute(f"{_SUMMARY} WHERE 1{where}{of_thread} ORDER BY {order} LIMIT :limit", params)
            return [_summary(row) for row in rows]

        # Each order is an index walked backwards (ties: the newer entity, or the later name, first).
        recent = summaries("", "e.updated_at DESC, e.id DESC")
        important = summaries("", "e.importance DESC, e.id DESC")
        if thread_id is None:
            # Walk the degree index from the top; CROSS JOIN keeps SQLite from scanning entities.
            connected = [
                _summary(row)
                for row in self._conn.execute(
                    _SUMMARY.replace("FROM entities AS e", "FROM degrees AS top CROSS JOIN entities AS e")
                    + " WHERE e.name = top.name ORDER BY top.degree DESC, top.name DESC LIMIT :limit",
                    params,
                )
            ]
        else:
            connected = summaries(
                " AND EXISTS (SELECT 1 FROM degrees AS d WHERE d.name = e.name)", "8 DESC, e.name DESC"
            )
        # Few entities lack relations in a healthy memory: one scan finds them all and counts them.
        lonely = [
            entity_id
            for (entity_id,) in self._conn.execute(
                "SELECT e.id FROM entities AS e WHERE NOT EXISTS (SELECT 1 FROM degrees AS d WHERE d.name = e.name)"
                f"{of_thread} ORDER BY e.id",
                params,
            )
        ]
        unconnected = [
            _summary(row)
            for row in self._conn.execute(
                f"{_SUMMARY} WHERE e.id IN (SELECT value FROM json_each(?)) ORDER BY e.id",
                (json.dumps(lonely[:limit]),),
            )
        ]
        dangling = [
            name
            for (name,) in self._conn.execute(
                "SELECT d.name FROM degrees AS d WHERE NOT EXISTS (SELECT 1 FROM entities AS e WHERE e.name = d.name)"
                " ORDER BY d.name"
            )
        ]
        return AnalyticsRows(recent, important, connected, unconnected, len(lonely), dangling[:limit], len(dangling))

    # -- end of navigation -----------------------------------------------------------------

    # -- writes ---------------------------------------------------------------

    def insert_entities(self, entities: Sequence[Entity]) -> None:
        for entity in entities:
            cursor = self._conn.execute(
                "INSERT INTO entities (name, entity_type, name_lc, type_lc, extra) VALUES (?, ?, ?, ?, ?)",
                (
                    entity.name,
                    entity.entity_type,
                    entity.name.lower(),
                    entity.entity_type.lower(),
                    _extra_json(entity.extra),
                ),
            )
            self._insert_observations(cursor.lastrowid, entity.observations)

    def _insert_observations(self, entity_id: int | None, contents: Sequence[str]) -> None:
        self._conn.executemany(
            "INSERT INTO observations (entity_id, content, content_lc) VALUES (?, ?, ?)",
            [(entity_id, content, content.lower()) for content in contents],
        )

    def insert_relations(self, relations: Sequence[Relation]) -> None:
        self._conn.executemany(
            "INSERT INTO relations (from_name, to_name, relation_type, extra) VALUES (?, ?, ?, ?)",
            [(*relation.key, _extra_json(relation.extra)) for relation in relations],
        )

    def append_observations(self, name: str, contents: Sequence[str]) -> None:
        row = self._conn.execute("SELECT id FROM entities WHERE name = ?", (name,)).fetchone()
        if row is not None:
            self._insert_observations(row[0], contents)

    def update_entity(self, name: str, changed: Entity) -> None:
        extra = _extra_json(changed.extra)
        if changed.name == name:
            # Most updates (every add or delete of an observation) change only extra. SQLite
            # rewrites the index entries of every column an UPDATE sets, changed or not, so
            # setting name and type too would dirty the name and type index pages for nothing:
            # two of the twenty pages such a write commits.
            cursor = self._conn.execute(
                "UPDATE entities SET extra = ? WHERE name = ? AND entity_type = ?", (extra, name, changed.entity_type)
            )
            if cursor.rowcount:
                return
            # A new type (or no such entity): the name stays.
            self._conn.execute(
                "UPDATE entities SET entity_type = ?, type_lc = ?, extra = ? WHERE name = ?",
                (changed.entity_type, changed.entity_type.lower(), extra, name),
            )
            return
        self._conn.execute(
            "UPDATE entities SET name = ?, entity_type = ?, name_lc = ?, type_lc = ?, extra = ? WHERE name = ?",
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
        self._conn.execute(
            f"DELETE FROM observations WHERE entity_id IN (SELECT id FROM entities WHERE name IN ({names_in}))",
            (names_json,),
        )
        self._conn.execute(
            f"DELETE FROM relations WHERE from_name IN ({names_in_1}) OR to_name IN ({names_in_1})",
            (names_json,),
        )
        cursor = self._conn.execute(f"DELETE FROM entities WHERE name IN ({names_in})", (names_json,))
        return cursor.rowcount

    def remove_observations(self, name: str, contents: Sequence[str]) -> int:
        contents_json = texts_json(contents)
        contents_in = texts_in(contents_json)
        row = self._conn.execute("SELECT id FROM entities WHERE name = ?", (name,)).fetchone()
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
            "DELETE FROM relations WHERE from_name = ? AND to_name = ? AND relation_type = ?", keys
        )
        return cursor.rowcount


def _split_sql(script: str) -> list[str]:
    """Split a migration into statements; `sqlite3.complete_statement` keeps triggers whole."""
    statements: list[str] = []
    buffer = ""
    for line in script.splitlines(keepends=True):
        if not buffer and line.lstrip().startswith("--"):
            continue
        buffer += line
        if sqlite3.complete_statement(buffer):
            statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        statements.append(buffer.strip())
    return statements
