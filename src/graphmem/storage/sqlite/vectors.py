"""SQLiteStore's vectors: the queue of texts waiting to be embedded, the vectors, and the search over them.

The tables and the triggers that fill the queue are in migration 0013. Texts are handed
out with a claim that expires (`vectors_stale.claimed_until`), so several processes on one
file share the work and a claim whose process died is taken up again. The first pass of a
search (`VectorIndex`: exact, or an approximate index past 300,000 vectors) is shared by
this process's connections to the file and catches up with every process's vectors by id.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from graphmem.storage.sqlite.reads import _Reads
from graphmem.storage.sqlite.scoping import and_visible, visible
from graphmem.storage.sqlite.vector_index import VectorIndex, build_index
from graphmem.storage.vectors import (
    ENTITY_TEXT,
    OBSERVATION_TEXT,
    EmbeddedText,
    NearEntity,
    PendingText,
    VectorProgress,
    dequantize,
    quantize,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

# How many vectors the exact pass scores for each entity asked for, and at least. The
# first pass (sign bits) keeps the true best ten of a few hundred thousand among its best
# 400 for nearly every query on the evaluation sets; scoring them costs about a millisecond.
_CANDIDATES_PER_RESULT = 8
_FEWEST_CANDIDATES = 400
# With a type filter most candidates may be of other types: look at more.
_CANDIDATES_OF_A_TYPE = 4000

# SQLite 3.40 takes 32,766 parameters in a statement; chunks of this many stay well below.
_CHUNK = 900

_SCOPED_EXACT = 100_000
"""Up to this many texts in the projects a search sees, every one of them is scored (about
40 MB of int8 vectors read, tens of milliseconds); past it the first pass proposes candidates."""

_Row = tuple[int, int, bytes]
"""A stored vector: its id, its entity's id, the vector (int8 with its scale)."""


def _chunks(items: Sequence[Any]) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]


def _aliases(extra: str | None) -> tuple[str, ...]:
    """The text aliases in an entity's extra (a list of strings, or one string)."""
    if not extra:
        return ()
    try:
        found = json.loads(extra).get("aliases")
    except (ValueError, AttributeError):
        return ()
    if isinstance(found, str):
        return (found,)
    if isinstance(found, list):
        return tuple(item for item in found if isinstance(item, str))
    return ()


class _Vectors(_Reads):
    """The `VectorStore` side of `SQLiteStore`."""

    supports_vectors = True
    why_no_vectors: str | None = None
    _vector_index: VectorIndex | None = None
    """The first pass, shared with this process's other connections to the file."""

    def claim_texts(self, limit: int, lease_seconds: float) -> list[PendingText]:
        now = time.time()
        # Looked for first in a read: an idle worker asking finds nothing without writing.
        with self.read():  # type: ignore[attr-defined]
            if not self._conn.execute("SELECT 1 FROM vectors_stale WHERE claimed_until < ? LIMIT 1", (now,)).fetchone():
                return []
        with self.write():  # type: ignore[attr-defined]
            # Newest first, of each kind (half the batch each, the rest to whichever has more):
            # a fact just written is found by meaning soon, even while a large import waits.
            newest = [
                self._conn.execute(
                    "SELECT kind, row_id FROM vectors_stale WHERE kind = ? AND claimed_until < ?"
                    " ORDER BY row_id DESC LIMIT ?",
                    (kind, now, limit),
                ).fetchall()
                for kind in (OBSERVATION_TEXT, ENTITY_TEXT)
            ]
            observations, entities = newest
            taken_entities = min(len(entities), max(limit // 2, limit - len(observations)))
            keys = observations[: limit - taken_entities] + entities[:taken_entities]
            if not keys:
                return []
            self._conn.executemany(
                "UPDATE vectors_stale SET claimed_until = ? WHERE kind = ? AND row_id = ?",
                [(now + lease_seconds, kind, row_id) for kind, row_id in keys],
            )
            pending = self._current_texts(keys)
            gone = set(keys) - {(text.kind, text.row_id) for text in pending}
            # Deletes remove their queue entries; a left-over one is dropped here, not retried forever.
            self._conn.executemany("DELETE FROM vectors_stale WHERE kind = ? AND row_id = ?", sorted(gone))
        return pending

    def _current_texts(self, keys: Sequence[tuple[int, int]]) -> list[PendingText]:
        """The texts of these queue keys as they are now (the ones still there)."""
        observation_ids = [row_id for kind, row_id in keys if kind == OBSERVATION_TEXT]
        entity_ids = [row_id for kind, row_id in keys if kind == ENTITY_TEXT]
        found: list[PendingText] = []
        for chunk in _chunks(observation_ids):
            found.extend(
                PendingText(OBSERVATION_TEXT, row_id, name, content)
                for row_id, content, name in self._conn.execute(
                    "SELECT o.id, o.content, e.name FROM observations AS o JOIN entities AS e ON e.id = o.entity_id"
                    f" WHERE o.id IN ({', '.join('?' * len(chunk))})",
                    tuple(chunk),
                )
            )
        for chunk in _chunks(entity_ids):
            found.extend(
                PendingText(ENTITY_TEXT, row_id, name, name, _aliases(extra))
                for row_id, name, extra in self._conn.execute(
                    f"SELECT id, name, extra FROM entities WHERE id IN ({', '.join('?' * len(chunk))})", tuple(chunk)
                )
            )
        return found

    def save_vectors(self, embedded: Sequence[EmbeddedText]) -> int:
        if not embedded:
            return 0
        import numpy as np

        with self.write():  # type: ignore[attr-defined]
            current = {
                (text.kind, text.row_id): text
                for text in self._current_texts([(item.pending.kind, item.pending.row_id) for item in embedded])
            }
            # An observation keeps its text (observations are never edited in place), but it
            # can move to another entity (a merge); an entity can be renamed or get new aliases.
            unchanged: list[EmbeddedText] = []
            changed: list[PendingText] = []
            for item in embedded:
                if current.get((item.pending.kind, item.pending.row_id)) == item.pending:
                    unchanged.append(item)
                else:
                    changed.append(item.pending)
            if unchanged:
                codes, blobs = quantize(np.stack([item.vector for item in unchanged]).astype(np.float32))
                owners = self._owners([item.pending for item in unchanged])
                self._conn.executemany(
                    "INSERT OR REPLACE INTO vectors (kind, row_id, entity_id, code, vector) VALUES (?, ?, ?, ?, ?)",
                    [
                        (
                            item.pending.kind,
                            item.pending.row_id,
                            owners[item.pending.kind, item.pending.row_id],
                            code,
                            blob,
                        )
                        for item, code, blob in zip(unchanged, codes, blobs, strict=True)
                    ],
                )
                self._conn.executemany(
                    "DELETE FROM vectors_stale WHERE kind = ? AND row_id = ?",
                    [(item.pending.kind, item.pending.row_id) for item in unchanged],
                )
            self._release(changed)
        return len(unchanged)

    def _owners(self, texts: Sequence[PendingText]) -> dict[tuple[int, int], int]:
        """The entity id of each text, by (kind, row): by row, not by name, which two projects may share."""
        owners = {(ENTITY_TEXT, text.row_id): text.row_id for text in texts if text.kind == ENTITY_TEXT}
        observation_ids = [text.row_id for text in texts if text.kind == OBSERVATION_TEXT]
        for chunk in _chunks(observation_ids):
            owners.update(
                ((OBSERVATION_TEXT, row_id), entity_id)
                for row_id, entity_id in self._conn.execute(
                    f"SELECT id, entity_id FROM observations WHERE id IN ({', '.join('?' * len(chunk))})", tuple(chunk)
                )
            )
        return owners

    def seconds_until_a_claim_lapses(self) -> float | None:
        with self.read():  # type: ignore[attr-defined]
            (soonest,) = self._conn.execute(
                "SELECT min(claimed_until) FROM vectors_stale WHERE claimed_until > 0"
            ).fetchone()
        # Claims are stamped with the claiming process's clock: the same machine's (a file memory).
        return None if soonest is None else max(0.0, soonest - time.time())

    def release_texts(self, pending: Sequence[PendingText]) -> None:
        if pending:
            with self.write():  # type: ignore[attr-defined]
                self._release(pending)

    def _release(self, pending: Sequence[PendingText]) -> None:
        self._conn.executemany(
            "UPDATE vectors_stale SET claimed_until = 0 WHERE kind = ? AND row_id = ?",
            [(text.kind, text.row_id) for text in pending],
        )

    def vector_progress(self) -> VectorProgress:
        with self.read():  # type: ignore[attr-defined]
            embedded = self._conn.execute("SELECT count(*) FROM vectors").fetchone()[0]
            waiting = self._conn.execute("SELECT count(*) FROM vectors_stale").fetchone()[0]
            row = self._conn.execute("SELECT fingerprint FROM vector_model").fetchone()
        return VectorProgress(embedded, waiting, row[0] if row else None)

    def any_waiting(self) -> bool:
        with self.read():  # type: ignore[attr-defined]
            return self._conn.execute("SELECT 1 FROM vectors_stale LIMIT 1").fetchone() is not None

    def waiting_among(self, names: Sequence[str]) -> set[str]:
        waiting: set[str] = set()
        with self.read():  # type: ignore[attr-defined]
            for chunk in _chunks(list(dict.fromkeys(names))):
                rows = self._conn.execute(
                    "SELECT e.name FROM entities AS e"
                    f" WHERE e.name IN ({', '.join('?' * len(chunk))}){and_visible(self._scope, 'e.project')} AND ("
                    f"  EXISTS (SELECT 1 FROM vectors_stale AS s WHERE s.kind = {ENTITY_TEXT} AND s.row_id = e.id)"
                    "  OR EXISTS (SELECT 1 FROM observations AS o JOIN vectors_stale AS s"
                    f"   ON s.kind = {OBSERVATION_TEXT} AND s.row_id = o.id WHERE o.entity_id = e.id))",
                    tuple(chunk),
                )
                waiting.update(row[0] for row in rows)
        return waiting

    def use_model(self, fingerprint: str) -> bool:
        with self.write():  # type: ignore[attr-defined]
            row = self._conn.execute("SELECT fingerprint FROM vector_model").fetchone()
            if row is not None and row[0] == fingerprint:
                return False
            self._conn.execute("INSERT OR REPLACE INTO vector_model (id, fingerprint) VALUES (1, ?)", (fingerprint,))
            if row is None:
                return False
            self.drop_vectors()
        return True

    def drop_vectors(self) -> None:
        with self.write():  # type: ignore[attr-defined]
            self._conn.execute("DELETE FROM vectors")
            self._conn.execute("DELETE FROM vectors_stale")
            self._conn.execute(f"INSERT INTO vectors_stale (kind, row_id) SELECT {ENTITY_TEXT}, id FROM entities")
            self._conn.execute(
                f"INSERT INTO vectors_stale (kind, row_id) SELECT {OBSERVATION_TEXT}, id FROM observations"
            )
            # The approximate index listed the dropped vectors: none is used until the next build.
            self._conn.execute("DELETE FROM vector_index")
        self._shared_index().clear()

    def nearest_entities(
        self, query: npt.NDArray[np.float32], model: str, limit: int, entity_type: str | None = None
    ) -> list[NearEntity]:
        import numpy as np

        with self.read():  # type: ignore[attr-defined]
            if self._conn.execute("SELECT fingerprint FROM vector_model").fetchone() != (model,):
                return []
            rows = self._scoped_rows() if not self._scope.every else None
            if rows is None:
                rows = self._candidate_rows(query, limit, entity_type)
            if not rows:
                return []
            scores = dequantize([row[2] for row in rows], len(query)) @ query.astype(np.float32)
            best: dict[int, float] = {}
            for (_, entity_id, _), score in zip(rows, scores.tolist(), strict=True):
                if score > best.get(entity_id, -2.0):
                    best[entity_id] = score
            ranked = sorted(best.items(), key=lambda item: -item[1])
            return self._named(ranked, limit, entity_type)

    def _candidate_rows(self, query: npt.NDArray[np.float32], limit: int, entity_type: str | None) -> list[_Row]:
        """The rows (id, entity id, vector) of the texts the first pass finds nearest `query`."""
        index = self._caught_up_index()
        wanted = (
            _CANDIDATES_OF_A_TYPE
            if entity_type is not None or not self._scope.every
            else _CANDIDATES_PER_RESULT * limit
        )
        approximate, exact = index.candidates(query, max(wanted, _FEWEST_CANDIDATES))
        candidates = list(dict.fromkeys(approximate + exact))
        rows: list[_Row] = []
        for chunk in _chunks(candidates):
            rows.extend(
                self._conn.execute(
                    f"SELECT id, entity_id, vector FROM vectors WHERE id IN ({', '.join('?' * len(chunk))})",
                    tuple(chunk),
                )
            )
        # Vectors deleted since they were indexed (their texts were deleted or changed)
        # are not found: counted, so that the index is rebuilt when they grow many.
        found = {row[0] for row in rows}
        index.note_missing(
            len(approximate),
            sum(1 for item in approximate if item not in found),
            sum(1 for item in exact if item not in found),
        )
        return rows

    def _scoped_rows(self) -> list[_Row] | None:
        """Every text of the projects the scope sees, when they are few enough to score each
        (`_SCOPED_EXACT`): a search in a small project of a large memory then costs what the
        project holds, and finds what the first pass over every project would pass over.
        None when they are more: the first pass then proposes more candidates, filtered by name."""
        seen = visible(self._scope, "e.project")
        (count,) = self._conn.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM vectors AS v JOIN entities AS e ON e.id = v.entity_id"
            f" WHERE {seen} LIMIT ?)",
            (_SCOPED_EXACT + 1,),
        ).fetchone()
        if count > _SCOPED_EXACT:
            return None
        rows: list[_Row] = self._conn.execute(
            "SELECT v.id, v.entity_id, v.vector FROM entities AS e JOIN vectors AS v ON v.entity_id = e.id"
            f" WHERE {seen}"
        ).fetchall()
        return rows

    def _named(self, ranked: list[tuple[int, float]], limit: int, entity_type: str | None) -> list[NearEntity]:
        found: list[NearEntity] = []
        # Named a few at a time, the best first: most searches need the first `limit` only,
        # and at a million entities naming all ~500 candidates' entities took 13 ms.
        start, size = 0, max(2 * limit, 16)
        while start < len(ranked):
            chunk = ranked[start : start + size]
            start, size = start + len(chunk), min(2 * size, _CHUNK)
            ids = [entity_id for entity_id, _ in chunk]
            names = {
                entity_id: (name, kind)
                for entity_id, name, kind in self._conn.execute(
                    f"SELECT id, name, entity_type FROM entities WHERE id IN ({', '.join('?' * len(ids))})"
                    f"{and_visible(self._scope, 'project')}",
                    tuple(ids),
                )
            }
            for entity_id, score in chunk:
                named = names.get(entity_id)
                if named is not None and (entity_type is None or named[1] == entity_type):
                    found.append(NearEntity(named[0], score))
                    if len(found) == limit:
                        return found
        return found

    def warm_vectors(self) -> int:
        with self.read():  # type: ignore[attr-defined]
            return len(self._caught_up_index())

    def rebuild_vector_index(self) -> bool:
        """Build the approximate index now, on this thread (when it is due, a search starts a
        build in the background by itself); False if another build is under way or the
        memory has no file. A memory with fewer vectors than `APPROXIMATE_FROM` gets none."""
        index = self._shared_index()
        if index.location is None:
            return False
        return build_index(index.location, approximate_from=index.approximate_from)

    def wait_for_vector_index(self, seconds: float) -> bool:
        """Wait up to `seconds` for a build of the approximate index that a search of this process
        started in the background; True when none is under way."""
        return self._shared_index().wait_for_build(seconds)

    def _shared_index(self) -> VectorIndex:
        held = self._vector_index
        if held is None:
            in_memory = self.location == ":memory:"
            key = f":memory:{id(self)}" if in_memory else os.path.realpath(self.location)
            held = self._vector_index = VectorIndex.attach(key, None if in_memory else key)
            self._vector_index_key = key
        return held

    def _release_vector_index(self) -> None:
        """Let go of the shared first pass (the last connection to let go stops its build)."""
        if self._vector_index is not None:
            self._vector_index = None
            VectorIndex.detach(self._vector_index_key)

    def _caught_up_index(self) -> VectorIndex:
        """The first pass with every vector committed so far (read inside the caller's transaction)."""
        index = self._shared_index()
        index.catch_up(self._conn)
        return index
