"""How one memory file's vectors are searched in this process: exactly while they are few, through
an approximate index (`graphmem.storage.ivf`) past `APPROXIMATE_FROM`, rebuilt in the background.

    vectors (SQLite) ──► IVF file <memory>-ivf-<token>   every vector with id <= covered_up_to
                    └──► tail (BitIndex, in memory)      every vector after it: exact, always current

The table `vector_index` (migration 0016) names the index file in use. A build runs on a
thread of its own with its own connection: it claims the build (a lease, so two processes
do not build at once), reads the vectors in short statements, writes the file whole, then
names it in the table. Every search reads that name: a process whose file went away, or
whose memory another process reindexed, sees it there, and searches exactly meanwhile.

Vectors added since the build are in the tail; a vector deleted (its text deleted or
changed) is still listed in the file, and the exact pass, which reads candidates back from
`vectors`, finds it gone. A build starts again when the tail passes a tenth of the index or
dead entries pass a quarter of the candidates.
"""

from __future__ import annotations

import logging
import random
import secrets
import sqlite3
import threading
import time
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from graphmem.storage.vectors import BitIndex, dequantize

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from graphmem.storage.ivf import IvfIndex

__all__ = ["APPROXIMATE_FROM", "VectorIndex"]

logger = logging.getLogger(__name__)

APPROXIMATE_FROM = 300_000
"""Vectors from which a memory gets an approximate index. Below it the exact first pass over
every sign code takes under 6 ms (18 ms at a million); above, time and memory grow with it."""

# A build starts again when the vectors added since the last exceed this share of it...
_STALE_TAIL_SHARE = 0.1
# ...or when this share of a search's candidates from the index were deleted since.
_STALE_DEAD_SHARE = 0.25
_JUDGED_CANDIDATES = 10_000

# A build's claim, renewed while it reads; a claim whose process died lapses after it.
_LEASE_SECONDS = 300.0
# After a build failed (a read-only folder, a full disk), this process tries again after this.
_RETRY_SECONDS = 600.0

# Vectors read at a time: into the tail, and by a build.
_CHUNK = 50_000

_BUSY_TIMEOUT_SECONDS = 60.0

# The vectors' length when none can be read to tell (the model's: all-MiniLM-L6-v2's 384).
_DIMENSIONS = 384


def index_path(location: str, token: str) -> Path:
    """The file of the index named `token` of the memory at `location`."""
    return Path(f"{location}-ivf-{token}")


class VectorIndex:
    """The first pass of search by meaning over one memory file, shared by this process's
    connections to it (a server's and its embedding worker's)."""

    _shared: ClassVar[dict[str, tuple[VectorIndex, int]]] = {}
    _shared_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, location: str | None) -> None:
        """An index for the memory file at `location` (None: a memory with no file, searched
        exactly, never indexed)."""
        self.location = location
        self.lock = threading.Lock()
        """Held while the index is read, caught up or swapped."""
        self.tail = BitIndex()
        self.ivf: IvfIndex | None = None
        self.approximate_from = APPROXIMATE_FROM
        self._dead = 0
        self._looked = 0
        self._builder: threading.Thread | None = None
        self._stopping = threading.Event()
        self._retry_after = 0.0

    # -- sharing -----------------------------------------------------------------------

    @classmethod
    def attach(cls, key: str, location: str | None) -> VectorIndex:
        """The index of the memory `key`, shared with this process's other connections to it;
        each `attach` is matched by a `detach`."""
        with cls._shared_lock:
            index, holders = cls._shared.get(key, (None, 0))
            if index is None:
                index = cls(location)
            cls._shared[key] = (index, holders + 1)
            return index

    @classmethod
    def detach(cls, key: str) -> None:
        """One connection is done with the index; the last one stops its build."""
        with cls._shared_lock:
            index, holders = cls._shared[key]
            if holders > 1:
                cls._shared[key] = (index, holders - 1)
                return
            del cls._shared[key]
        index.stop()

    def stop(self) -> None:
        """Stop a build under way (it writes nothing) and wait for it."""
        self._stopping.set()
        builder = self._builder
        if builder is not None:
            builder.join()

    def wait_for_build(self, seconds: float) -> bool:
        """Wait up to `seconds` for a build this process started; True when none is under way."""
        builder = self._builder
        if builder is not None:
            builder.join(seconds)
            return not builder.is_alive()
        return True

    # -- searching ---------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.tail) + (len(self.ivf) if self.ivf is not None else 0)

    def clear(self) -> None:
        """Forget every vector (they were all dropped): the next search reads them again."""
        with self.lock:
            self.tail.clear()
            self.ivf = None

    def catch_up(self, conn: sqlite3.Connection) -> None:
        """Follow the table: load the index file it names (or drop one it no longer names), read
        the vectors stored since into the tail, and start a build if one is due. Runs inside
        a read transaction on `conn`."""
        row = conn.execute("SELECT token, building_until FROM vector_index WHERE id = 1").fetchone()
        token, building_until = row if row is not None else (None, 0.0)
        with self.lock:
            if (self.ivf.token if self.ivf is not None else None) != token:
                self._switch(token)
        while True:
            with self.lock:
                rows = conn.execute(
                    "SELECT id, code FROM vectors WHERE id > ? ORDER BY id LIMIT ?", (self.tail.last_id, _CHUNK)
                ).fetchall()
                if rows:
                    self.tail.append([row[0] for row in rows], [row[1] for row in rows])
            if len(rows) < _CHUNK:
                break
        if self._build_due(building_until):
            self._start_build()

    def _switch(self, token: str | None) -> None:
        """Use the index file named `token` (None: no index); held under the lock."""
        from graphmem.storage.ivf import IvfIndex  # numpy's import waits for the first search by meaning

        loaded: IvfIndex | None = None
        if token is not None and self.location is not None:
            try:
                loaded = IvfIndex(index_path(self.location, token))
            except (OSError, ValueError):
                # Lost or cut short: searched exactly until the build that follows is done.
                loaded = None
        if loaded is not None and loaded.token == token:
            self.ivf = loaded
            self.tail.keep_after(loaded.covered_up_to)
        else:
            # The tail takes every vector again (the next catch-up reads them all).
            self.ivf = None
            self.tail.clear()
        self._dead = self._looked = 0

    def candidates(self, query: npt.NDArray[np.float32], count: int) -> tuple[list[int], list[int]]:
        """The ids of at least `count` vectors whose signs differ least from the query's, from the
        index (approximate) and from the tail (exact)."""
        with self.lock:
            approximate = self.ivf.candidates(query, count).tolist() if self.ivf is not None else []
            exact = self.tail.candidates(query, count).tolist()
        return approximate, exact

    def note_missing(self, approximate: int, missing_approximate: int, missing_exact: int) -> None:
        """Record how many candidates were found deleted: the tail is read anew once a quarter of
        it is dead, and the index is rebuilt once a quarter of what it offers is."""
        with self.lock:
            self.tail.dead += missing_exact
            if self.tail.dead * 4 > len(self.tail):
                self.tail.clear()
                if self.ivf is not None:
                    self.tail.keep_after(self.ivf.covered_up_to)
            self._dead += missing_approximate
            self._looked += approximate

    def _build_due(self, building_until: float) -> bool:
        if self.location is None or self._stopping.is_set():
            return False
        if self._builder is not None and self._builder.is_alive():
            return False
        now = time.time()
        if building_until > now or self._retry_after > now:
            return False
        with self.lock:
            total = len(self)
            if self.ivf is None:
                return total >= self.approximate_from
            # Dead entries are judged over enough candidates that one search's chance does not decide.
            return len(self.tail) > _STALE_TAIL_SHARE * len(self.ivf) or (
                self._looked >= _JUDGED_CANDIDATES and self._dead > _STALE_DEAD_SHARE * self._looked
            )

    def _start_build(self) -> None:
        self._builder = threading.Thread(target=self._build_in_background, name="graphmem-vector-index", daemon=True)
        self._builder.start()

    def _build_in_background(self) -> None:
        # The top of a thread of its own: a failed build leaves search exact (it stays
        # correct, only slower), so it is logged and tried again later, never raised.
        try:
            assert self.location is not None
            build_index(self.location, self._stopping, self.approximate_from)
        except Exception:
            self._retry_after = time.time() + _RETRY_SECONDS
            logger.exception("Building the vector index of %s failed; search by meaning stays exact", self.location)


class _Lost(Exception):
    """The build's claim was taken or its vectors dropped meanwhile: it publishes nothing."""


def build_index(
    location: str, stopping: threading.Event | None = None, approximate_from: int = APPROXIMATE_FROM
) -> bool:
    """Build the approximate index of the memory at `location` and name it in `vector_index` (or
    name none, if it has fewer than `approximate_from` vectors); False if another build was
    under way, or `stopping` was set. Files of earlier indexes are removed."""
    import numpy as np

    from graphmem.storage.ivf import IvfWriter, list_count, sample_size, train_centroids

    stopping = stopping or threading.Event()
    conn = sqlite3.connect(location, timeout=_BUSY_TIMEOUT_SECONDS, isolation_level=None, check_same_thread=False)
    token = secrets.token_hex(8)
    try:
        if not _claim(conn, token):
            return False
        covered, entries = conn.execute("SELECT coalesce(max(id), 0), count(*) FROM vectors").fetchone()
        if entries < approximate_from:
            _publish(conn, location, token, None, covered)
            return True
        centroids = train_centroids(
            _sample(conn, covered, sample_size(entries)), list_count(entries), lambda: not stopping.is_set()
        )
        dimensions = centroids.shape[1]
        writer = IvfWriter(Path(location).parent, centroids, dimensions // 64)
        try:
            last, renewed = 0, time.monotonic()
            while not stopping.is_set():
                rows = conn.execute(
                    "SELECT id, code, vector FROM vectors WHERE id > ? AND id <= ? ORDER BY id LIMIT ?",
                    (last, covered, _CHUNK),
                ).fetchall()
                if not rows:
                    break
                writer.add(
                    np.array([row[0] for row in rows], dtype=np.int64),
                    np.frombuffer(b"".join(row[1] for row in rows), dtype=np.uint64).reshape(len(rows), -1),
                    dequantize([row[2] for row in rows], dimensions),
                )
                last = rows[-1][0]
                if time.monotonic() - renewed > _LEASE_SECONDS / 5:
                    _renew(conn, token)
                    renewed = time.monotonic()
            path = index_path(location, token)
            if stopping.is_set() or not writer.finish(path, token, covered, lambda: not stopping.is_set()):
                _give_up(conn, token)
                return False
        finally:
            writer.close()
        try:
            _publish(conn, location, token, token, covered)
        except _Lost:
            path.unlink(missing_ok=True)
            return False
        return True
    except _Lost:
        return False
    except BaseException:
        # The claim goes with the build, so that the next search may start another.
        _give_up(conn, token)
        raise
    finally:
        conn.close()


def _sample(conn: sqlite3.Connection, covered: int, size: int) -> npt.NDArray[np.float32]:
    """About `size` vectors drawn at random (ids drawn at random; the deleted ones are missed)."""
    import numpy as np

    chosen = sorted(random.Random(covered).sample(range(1, covered + 1), min(covered, 2 * size)))
    blobs: list[bytes] = []
    for start in range(0, len(chosen), 900):
        part = chosen[start : start + 900]
        blobs.extend(
            row[0]
            for row in conn.execute(f"SELECT vector FROM vectors WHERE id IN ({', '.join('?' * len(part))})", part)
        )
    # A stored vector is its int8 values followed by a float32 scale.
    dimensions = len(blobs[0]) - 4 if blobs else _DIMENSIONS
    vectors = dequantize(blobs[:size], dimensions) if blobs else np.zeros((0, dimensions), np.float32)
    norms = np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    sample: npt.NDArray[np.float32] = (vectors / norms).astype(np.float32)
    return sample


def _claim(conn: sqlite3.Connection, token: str) -> bool:
    """Claim the build for `token` unless another build's claim is alive."""
    now = time.time()
    conn.execute("BEGIN IMMEDIATE")
    try:
        row = conn.execute("SELECT building_until FROM vector_index WHERE id = 1").fetchone()
        claimed = row is None or row[0] <= now
        if claimed:
            conn.execute(
                "INSERT INTO vector_index (id, building, building_until) VALUES (1, ?, ?) ON CONFLICT (id)"
                " DO UPDATE SET building = excluded.building, building_until = excluded.building_until",
                (token, now + _LEASE_SECONDS),
            )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return claimed


def _renew(conn: sqlite3.Connection, token: str) -> None:
    changed = conn.execute(
        "UPDATE vector_index SET building_until = ? WHERE id = 1 AND building = ?",
        (time.time() + _LEASE_SECONDS, token),
    ).rowcount
    if not changed:
        raise _Lost


def _give_up(conn: sqlite3.Connection, token: str) -> None:
    with suppress(sqlite3.Error):
        conn.execute(
            "UPDATE vector_index SET building = NULL, building_until = 0 WHERE id = 1 AND building = ?", (token,)
        )


def _publish(conn: sqlite3.Connection, location: str, token: str, named: str | None, covered: int) -> None:
    """Name the index `named` (None: no index) if this build's claim still holds, then remove
    the files of the others (a file another process still maps stays readable to it)."""
    changed = conn.execute(
        "UPDATE vector_index SET token = ?, covered_up_to = ?, building = NULL, building_until = 0"
        " WHERE id = 1 AND building = ?",
        (named, covered, token),
    ).rowcount
    if not changed:
        raise _Lost
    kept = index_path(location, named).name if named is not None else None
    for old in Path(location).parent.glob(f"{Path(location).name}-ivf-*"):
        if old.name != kept:
            with suppress(OSError):
                old.unlink()
