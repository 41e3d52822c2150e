"""An approximate index over the vectors' sign bits: an inverted file (IVF) kept in a file of its own.

The vectors are split into lists by k-means: each vector goes to the list whose centroid
is closest to it. A query is compared with the centroids, and only the vectors of the few
closest lists (about `_PROBED` of them all) are compared with it, by Hamming distance of
their sign bits; the best of those are then scored exactly by the caller. At 6.5 million
texts that is about 500,000 sign codes read from the page cache instead of 6.5 million held
in the process (364 MB).

A list's centroid stands for most of its vectors, but not for the few far from every
centroid: an odd fact, alone of its kind in a memory (and just the one a question by meaning
may look for), sits in a list that a query close to it need not probe. The `_OUTLIERS`
share of vectors farthest from their centroid are kept in one more list, probed always.

The file (`<memory>-ivf-<token>`) is written once and never changed, then read through
`numpy.memmap`, so several processes on one memory share its pages:

    4 KiB header (JSON: token, covered_up_to, entries, lists, dimensions)
    centroids  float32 [lists, dimensions]
    offsets    int64   [lists + 2]         list l holds entries offsets[l] to offsets[l + 1];
                                           the last, the outliers
    ids        int64   [entries]           vectors.id, grouped by list
    words      uint64  [dimensions / 64, entries]   the sign bits, word by word (as `BitIndex`)

Chosen by measurement against HNSW (usearch) and faiss's binary IVF: see
docs/performance.md, "Search by meaning".
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt

__all__ = ["IvfIndex", "IvfWriter", "nearest_codes"]

_MAGIC = "graphmem-ivf-1"
_HEADER_BYTES = 4096

# The share of all vectors a query's Hamming pass reads in the lists closest to it. On 94,000
# real vectors of made-up-word facts, 4% kept 0.67 of the true ten nearest, 8% 0.75, 16% 0.81
# (the exact pass: 0.88); at 6.5 million, 8% takes about 20 ms (`benchmarks/vector_index.py`).
_PROBED = 0.08
# Fewest lists probed: on a small index a few lists are most of it anyway.
_FEWEST_PROBES = 8
# The share of vectors, those least like their list's centroid, that every query compares.
_OUTLIERS = 0.02

# Groups of centroids a vector being added is compared with (see IvfWriter).
_GROUPS_PROBED = 4

# k-means: iterations, and vectors sampled for each centroid.
_ITERATIONS = 8
_SAMPLE_PER_LIST = 40
_SLICE = 8192


def list_count(entries: int) -> int:
    """How many lists an index of `entries` vectors gets: about sqrt(entries), 2,550 at 6.5 million.
    Smaller lists (more of them) keep more of the true nearest for the same share probed
    (measured: 0.76 of them at 123 lists, 0.82 at 307, 0.88 at 1,229, probing 8% of 94,000
    vectors), but each list costs a centroid compared with every query and every vector built."""
    return max(1, min(4096, round(math.sqrt(entries))))


def nearest_codes(words: npt.NDArray[np.uint64], code: npt.NDArray[np.uint64], count: int) -> npt.NDArray[np.intp]:
    """The positions of the `count` codes (columns of `words`, one row per 64-bit word) whose
    bits differ least from `code`; all of them if there are fewer."""
    entries = words.shape[1]
    if count >= entries:
        return np.arange(entries)
    scratch = np.empty(entries, dtype=np.uint64)
    distances = np.zeros(entries, dtype=np.uint16)
    for row, bits in zip(words, code, strict=True):
        np.bitwise_xor(row, bits, out=scratch)
        distances += np.bitwise_count(scratch)
    return _within(distances, count)


def _within(distances: npt.NDArray[np.uint16], count: int) -> npt.NDArray[np.intp]:
    """The positions of the `count` smallest distances (all, if fewer). They are small integers:
    counting them beats sorting."""
    if count >= len(distances):
        return np.arange(len(distances))
    within = int(np.searchsorted(np.cumsum(np.bincount(distances)), count))
    # Those at the last distance are many when the codes are many: only enough of them are
    # kept, since each candidate is then read back from the file.
    closer = np.flatnonzero(distances < within)
    return np.concatenate((closer, np.flatnonzero(distances == within)[: count - len(closer)]))


def sign_code(query: npt.NDArray[np.float32]) -> npt.NDArray[np.uint64]:
    """A vector's sign bits as 64-bit words, packed as `quantize` packs the stored ones."""
    return np.frombuffer(np.packbits(query > 0).tobytes(), dtype=np.uint64)


def train_centroids(
    sample: npt.NDArray[np.float32], lists: int, keep_going: Callable[[], bool] = lambda: True, seed: int = 0
) -> npt.NDArray[np.float32]:
    """`lists` unit centroids of the (unit) sample vectors by spherical k-means (fewer iterations
    if `keep_going`, asked before each, says to stop)."""
    rng = np.random.default_rng(seed)
    lists = min(lists, len(sample))
    centroids = sample[rng.choice(len(sample), lists, replace=False)].copy()
    for _ in range(_ITERATIONS):
        if not keep_going():
            break
        # In slices: the whole sample against every centroid would be a gigabyte at 6.5 million.
        nearest = np.concatenate(
            [np.argmax(sample[at : at + _SLICE] @ centroids.T, axis=1) for at in range(0, len(sample), _SLICE)]
        )
        sums = np.zeros_like(centroids)
        np.add.at(sums, nearest, sample)
        # A list that lost every vector starts again from a random one.
        empty = np.flatnonzero(np.bincount(nearest, minlength=lists) == 0)
        sums[empty] = sample[rng.choice(len(sample), len(empty))]
        centroids = (sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)).astype(np.float32)
    return centroids


def sample_size(entries: int) -> int:
    """How many vectors k-means trains on for an index of `entries`."""
    return list_count(entries) * _SAMPLE_PER_LIST


class IvfIndex:
    """A finished index file, mapped read-only."""

    def __init__(self, path: Path) -> None:
        """Map the index at `path`.

        Raises:
            ValueError: the file is not a whole index (cut short, or not one at all).
            OSError: it cannot be read.
        """
        with path.open("rb") as file:
            head = file.read(_HEADER_BYTES)
        try:
            header = json.loads(head.rstrip(b"\0 \n").decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise ValueError(f"{path} is not a vector index") from exc
        if not isinstance(header, dict) or header.get("magic") != _MAGIC:
            raise ValueError(f"{path} is not a vector index")
        self.path = path
        self.token: str = header["token"]
        self.covered_up_to: int = header["covered_up_to"]
        """The largest vector id when it was built: later vectors are not in it."""
        lists, dimensions, entries = header["lists"], header["dimensions"], header["entries"]
        words = dimensions // 64
        size = _HEADER_BYTES + 4 * lists * dimensions + 8 * (lists + 2) + 8 * entries * (1 + words)
        if path.stat().st_size != size:
            raise ValueError(f"{path} is cut short")
        offset = _HEADER_BYTES
        # The centroids and offsets are small and read on every query: kept in memory.
        self.centroids = np.array(np.memmap(path, np.float32, "r", offset, (lists, dimensions)))
        offset += 4 * lists * dimensions
        self.offsets = np.array(np.memmap(path, np.int64, "r", offset, (lists + 2,)))
        offset += 8 * (lists + 2)
        # Plain views of the mapped file: slicing a numpy.memmap costs microseconds a slice.
        self.ids: npt.NDArray[np.int64] = (
            np.memmap(path, np.int64, "r", offset, (entries,)).view(np.ndarray)
            if entries
            else np.zeros(0, dtype=np.int64)
        )
        offset += 8 * entries
        self.words: npt.NDArray[np.uint64] = (
            np.memmap(path, np.uint64, "r", offset, (words, entries)).view(np.ndarray)
            if entries
            else np.zeros((words, 0), dtype=np.uint64)
        )
        self.sizes = np.diff(self.offsets)[:lists]
        self.probed = _PROBED * entries
        """How many vectors a query's closest lists hold, at least, before the outliers (a share)."""

    def __len__(self) -> int:
        return len(self.ids)

    def candidates(self, query: npt.NDArray[np.float32], count: int) -> npt.NDArray[np.int64]:
        """The ids of `count` vectors (or fewer) of the lists closest to the (unit) query whose signs
        differ least from its signs."""
        if not len(self.ids):
            return np.zeros(0, dtype=np.int64)
        closeness = self.centroids @ query.astype(np.float32)
        # The closest lists until they hold the share probed (lists near a query tend to be
        # the large ones: counting lists instead would read more than the share), then the outliers.
        order = np.argsort(-closeness)
        taken = int(np.searchsorted(np.cumsum(self.sizes[order]), self.probed)) + 1
        lists = [*np.sort(order[: max(taken, _FEWEST_PROBES)]).tolist(), len(closeness)]
        code = sign_code(query)
        distances, ids = [], []
        # List by list, on views of the mapped file: nothing is copied but the distances.
        for at in lists:
            start, end = int(self.offsets[at]), int(self.offsets[at + 1])
            if end > start:
                distance = np.bitwise_count(self.words[0, start:end] ^ code[0]).astype(np.uint16)
                for word in range(1, len(code)):
                    distance += np.bitwise_count(self.words[word, start:end] ^ code[word])
                distances.append(distance)
                ids.append(self.ids[start:end])
        if not ids:
            return np.zeros(0, dtype=np.int64)
        found: npt.NDArray[np.int64] = np.concatenate(ids)[_within(np.concatenate(distances), count)]
        return found


class IvfWriter:
    """Writes an index of vectors streamed in id order, in three steps: train, add, finish.

    The sign codes wait in a temporary file beside the index until they are sorted by list,
    so a build holds in memory only the ids and their lists (12 bytes a vector), never the
    codes of them all.
    """

    def __init__(self, folder: Path, centroids: npt.NDArray[np.float32], words: int) -> None:
        self.folder = folder
        self.centroids = centroids
        self.words = words
        # The centroids in groups (k-means of the centroids themselves): a vector is compared
        # with the groups, then with the centroids of its closest few groups only. At 2,550
        # lists that is about 250 products a vector instead of 2,550: minutes of a build at
        # 6.5 million vectors, which would otherwise take ten on these two cores.
        self._groups = train_centroids(centroids, max(1, round(math.sqrt(len(centroids)))))
        members = np.argmax(centroids @ self._groups.T, axis=1)
        self._group_members = [np.flatnonzero(members == group) for group in range(len(self._groups))]
        self._ids: list[npt.NDArray[np.int64]] = []
        self._lists: list[npt.NDArray[np.int32]] = []
        self._closeness: list[npt.NDArray[np.float32]] = []
        # Lives as long as the writer: finish() or close() closes it, and the system removes it.
        self._codes = tempfile.TemporaryFile(dir=folder, prefix=".ivf-")  # noqa: SIM115

    def add(self, ids: npt.NDArray[np.int64], codes: npt.NDArray[np.uint64], vectors: npt.NDArray[np.float32]) -> None:
        """Add vectors (ids ascending, their sign codes as `words` uint64 each, and the vectors)."""
        if not len(ids):
            return
        self._ids.append(np.asarray(ids, dtype=np.int64))
        nearest, closeness = self._assign(vectors)
        self._lists.append(nearest)
        self._closeness.append(closeness)
        self._codes.write(np.ascontiguousarray(codes, dtype=np.uint64).tobytes())

    def _assign(self, vectors: npt.NDArray[np.float32]) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]]:
        """Each vector's closest centroid among those of its closest groups, and how close."""
        nearest = np.zeros(len(vectors), dtype=np.int32)
        closeness = np.full(len(vectors), -np.inf, dtype=np.float32)
        groups = vectors @ self._groups.T
        probed = min(_GROUPS_PROBED, len(self._groups))
        chosen = np.argpartition(-groups, probed - 1, axis=1)[:, :probed] if probed < len(self._groups) else None
        # (vector, group) pairs sorted by group: each group's vectors side by side, one product each.
        pairs = chosen.ravel() if chosen is not None else np.tile(np.arange(len(self._groups)), len(vectors))
        order = np.argsort(pairs, kind="stable")
        rows_of = order // probed if chosen is not None else order // len(self._groups)
        bounds = np.searchsorted(pairs[order], np.arange(len(self._groups) + 1))
        for group in range(len(self._groups)):
            members = self._group_members[group]
            rows = rows_of[bounds[group] : bounds[group + 1]]
            if not len(members) or not len(rows):
                continue
            scores = vectors[rows] @ self.centroids[members].T
            best = np.argmax(scores, axis=1)
            score = scores[np.arange(len(rows)), best]
            better = score > closeness[rows]
            nearest[rows[better]] = members[best[better]]
            closeness[rows[better]] = score[better]
        return nearest, closeness

    def finish(self, path: Path, token: str, covered_up_to: int, keep_going: Callable[[], bool]) -> bool:
        """Write the index to `path` (through a temporary file, so it appears whole or not at all);
        False if `keep_going`, asked between steps, said to stop (then nothing is written)."""
        ids = np.concatenate(self._ids) if self._ids else np.zeros(0, dtype=np.int64)
        assigned = np.concatenate(self._lists) if self._lists else np.zeros(0, dtype=np.int32)
        lists, dimensions = self.centroids.shape
        if self._closeness:
            closeness = np.concatenate(self._closeness)
            assigned[closeness < np.quantile(closeness, _OUTLIERS)] = lists
        self._ids, self._lists, self._closeness = [], [], []
        order = np.argsort(assigned, kind="stable")
        offsets = np.searchsorted(assigned[order], np.arange(lists + 2)).astype(np.int64)
        header = {
            "magic": _MAGIC,
            "token": token,
            "covered_up_to": covered_up_to,
            "entries": len(ids),
            "lists": lists,
            "dimensions": dimensions,
        }
        self._codes.flush()
        codes = (
            np.memmap(self._codes, np.uint64, "r", 0, (len(ids), self.words))
            if len(ids)
            else np.zeros((0, self.words), dtype=np.uint64)
        )
        partial = path.with_name(path.name + ".partial")
        try:
            # Owner-only, like the memory: the sign bits are derived from its texts.
            descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0), 0o600)
            with os.fdopen(descriptor, "wb") as out:
                out.write(json.dumps(header).encode("utf-8").ljust(_HEADER_BYTES, b" "))
                out.write(self.centroids.astype(np.float32).tobytes())
                out.write(offsets.tobytes())
                out.write(ids[order].tobytes())
                for word in range(self.words):
                    if not keep_going():
                        raise _Abandoned
                    out.write(np.ascontiguousarray(codes[order, word]).tobytes())
                out.flush()
                os.fsync(out.fileno())
            del codes
            os.replace(partial, path)
            return True
        except _Abandoned:
            partial.unlink(missing_ok=True)
            return False
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        finally:
            self._codes.close()

    def close(self) -> None:
        """Drop what was added (the temporary file goes)."""
        self._codes.close()


class _Abandoned(Exception):
    """A build stopped on request."""
