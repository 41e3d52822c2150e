"""The trigram index query for a needle that reads the least: one rare piece of it.

FTS5 finds a phrase of the trigram index by reading the list of rows (the doclist) of
every trigram of it and checking the positions of each row holding them all. In a large
memory the trigrams of common words are in most rows: at 1,000,000 entities and 5.5
million facts a phrase holding one reads millions of entries (newest first, FTS5 reads
each list whole), for a match decided by its rare part.

Any text containing the needle contains each of its substrings, so a query for one of
them still finds every row that may match; `instr()` on the exact text then keeps the
answer exact, as it always does. This module picks that substring, the one cheapest to
read and then to check:

    needle ─► its substrings of 3 to 8 characters (one to six trigrams)
    ─► how often each is found in a sample of the table's texts, scaled to the table
    ─► cost: every entry of each of its trigrams read, plus each row found checked
    ─► the cheapest, as one FTS5 phrase

The sample only decides what is read, never what is answered: a stale or unlucky
sample makes a search slower, not wrong. It is taken once, and again when the table
has grown or shrunk by a quarter.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING

from graphmem.storage.sqlite.text import trigram_query

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["TrigramSamples", "narrow_query"]

_TRIGRAM = 3
_LONGEST = 6
"""Substrings up to this long are weighed: a longer phrase makes FTS5 read more lists."""

_SAMPLE = 2000
"""Texts sampled per table, evenly spread over its rows."""

# Relative costs, measured at 40,000 entities: FTS5 reads a doclist entry in ~0.4 µs;
# checking a row a phrase query returns (its positions, then the row and instr()) ~5 µs.
_ENTRY = 0.4
_ROW = 5.0

# The hash of a piece: its characters as the digits of a number in this base, modulo 2**64.
_MULTIPLIER = 0x100000001B3

# A substring not found in the sample is still found in some rows: about half a sampled row.
_UNSEEN = 0.5

# The texts of each trigram-indexed table, as its trigram index holds them.
_TEXTS = {
    "entity_text": ("entities", "name_lc || char(10) || type_lc"),
    "observation_text": ("observations", "content_lc"),
}


class _Sample:
    """Texts sampled from a table, and how often each piece of 3 to `_LONGEST` characters is found in them."""

    def __init__(self, texts: Sequence[str], rows: int) -> None:
        import numpy as np  # imported on the first search of a needle, not at start-up

        self._np = np
        # Each character as a number; the line break keeps texts apart.
        self._codes = np.frombuffer("\n".join(texts).encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
        self._counts: dict[int, tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64]]] = {}
        self.scale = rows / max(1, len(texts))
        """Rows of the table per sampled text."""
        self.rows = rows
        """The table's largest id when sampled."""

    def _hashes(self, codes: npt.NDArray[np.uint64], length: int) -> npt.NDArray[np.uint64]:
        """A 64-bit hash of each piece of `length` characters of `codes` (wrapping arithmetic)."""
        hashes = self._np.zeros(max(0, len(codes) - length + 1), dtype=self._np.uint64)
        for at in range(length):
            hashes = hashes * self._np.uint64(_MULTIPLIER) + codes[at : len(codes) - length + 1 + at]
        return hashes

    def counts_of_pieces(self, text: str, length: int) -> list[int]:
        """About how many times each piece of `length` characters of `text` is found in the
        sample, in the order the pieces start: one pass for all of them."""
        np = self._np
        if length not in self._counts:
            keys, counts = np.unique(self._hashes(self._codes, length), return_counts=True)
            self._counts[length] = (keys, counts)
        keys, counts = self._counts[length]
        if not len(keys):
            return [0] * max(0, len(text) - length + 1)
        wanted = self._hashes(np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64), length)
        at = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
        return [int(count) if found else 0 for count, found in zip(counts[at], keys[at] == wanted, strict=True)]

    def count(self, piece: str) -> int:
        """About how many times `piece` (3 to `_LONGEST` characters) is found in the sample."""
        np = self._np
        length = len(piece)
        if length not in self._counts:
            keys, counts = np.unique(self._hashes(self._codes, length), return_counts=True)
            self._counts[length] = (keys, counts)
        keys, counts = self._counts[length]
        (key,) = self._hashes(np.frombuffer(piece.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64), length)
        at = int(np.searchsorted(keys, key))
        return int(counts[at]) if at < len(keys) and keys[at] == key else 0


class TrigramSamples:
    """A sample of the texts of each trigram-indexed table, kept while its size holds.

    Args:
        narrow_from: tables with fewer rows are searched by the whole needle: reading
            their lists costs less than sampling them (~150 ms once, numpy included).
    """

    def __init__(self, narrow_from: int = 100_000) -> None:
        self._samples: dict[str, _Sample] = {}
        self.narrow_from = narrow_from

    def of(self, conn: sqlite3.Connection, table: str) -> _Sample | None:
        """The sample of `table`, taken again once the table has grown or shrunk by a quarter;
        None for a table too small to narrow."""
        source, column = _TEXTS[table]
        (rows,) = conn.execute(f"SELECT coalesce(max(id), 0) FROM {source}").fetchone()
        if rows < self.narrow_from:
            return None
        kept = self._samples.get(table)
        if kept is not None and 4 * abs(rows - kept.rows) <= kept.rows:
            return kept
        step = max(1, rows // _SAMPLE)
        ids = json.dumps(list(range(1, rows + 1, step)))
        texts = [
            text
            for (text,) in conn.execute(
                f"SELECT {column} FROM {source} WHERE id IN (SELECT value FROM json_each(?))", (ids,)
            )
        ]
        sample = _Sample(texts, rows)
        self._samples[table] = sample
        return sample


def narrow_query(conn: sqlite3.Connection, samples: TrigramSamples, table: str, needle: str) -> str:
    """The FTS5 query of trigram table `table` for rows that may contain `needle` (3+ characters).

    The phrase of the needle's cheapest substring (see the module): every row containing
    the needle matches it, some others may too, which the caller's `instr()` leaves out.
    """
    exact = trigram_query(needle)
    if len(needle) <= _TRIGRAM or exact != _phrase(needle):
        # One trigram; or a needle a text with a NUL spells otherwise (as JSON): as it was.
        return exact
    sample = samples.of(conn, table)
    if sample is None:
        return exact

    # Every trigram's count in one pass, longer pieces as they are asked about.
    known = {needle[at : at + _TRIGRAM]: count for at, count in enumerate(sample.counts_of_pieces(needle, _TRIGRAM))}

    def rows(piece: str) -> float:
        count = known.get(piece)
        if count is None:
            count = known[piece] = sample.count(piece)
        return (count or _UNSEEN) * sample.scale

    def cost(start: int, end: int) -> float:
        trigrams = (needle[at : at + _TRIGRAM] for at in range(start, end - _TRIGRAM + 1))
        return _ENTRY * sum(map(rows, trigrams)) + _ROW * rows(needle[start:end])

    # From the rarest trigram, grow the piece a character to the left or right while
    # that makes it cheaper: each step adds one list to read and may rule out most rows.
    start = min(range(len(needle) - _TRIGRAM + 1), key=lambda at: rows(needle[at : at + _TRIGRAM]))
    end = start + _TRIGRAM
    best = cost(start, end)
    while end - start < _LONGEST:
        grown = [(cost(a, b), a, b) for a, b in ((start - 1, end), (start, end + 1)) if a >= 0 and b <= len(needle)]
        if not grown or min(grown)[0] >= best:
            break
        best, start, end = min(grown)
    return _phrase(needle[start:end])


def _phrase(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'
