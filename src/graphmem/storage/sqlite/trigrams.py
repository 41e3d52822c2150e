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
from collections import Counter
from dataclasses import dataclass

from graphmem.storage.sqlite.text import trigram_query

__all__ = ["TrigramSamples", "narrow_query"]

_TRIGRAM = 3
_LONGEST = 8
"""Substrings up to this long are weighed: a longer phrase makes FTS5 read more lists."""

_SAMPLE = 2000
"""Texts sampled per table, evenly spread over its rows."""

# Relative costs, measured at 40,000 entities: FTS5 reads a doclist entry in ~0.4 µs;
# checking a row a phrase query returns (its positions, then the row and instr()) ~5 µs.
_ENTRY = 0.4
_ROW = 5.0

# A substring not found in the sample is still found in some rows: about half a sampled row.
_UNSEEN = 0.5

# The texts of each trigram-indexed table, as its trigram index holds them.
_TEXTS = {
    "entity_text": ("entities", "name_lc || char(10) || type_lc"),
    "observation_text": ("observations", "content_lc"),
}


@dataclass(frozen=True, slots=True)
class _Sample:
    text: str
    """The sampled texts, one a line."""
    trigrams: Counter[str]
    """How often each trigram is found in them."""
    scale: float
    """Rows of the table per sampled text."""
    rows: int
    """The table's largest id when sampled."""


class TrigramSamples:
    """A sample of the texts of each trigram-indexed table, kept while its size holds."""

    def __init__(self) -> None:
        self._samples: dict[str, _Sample] = {}

    def of(self, conn: sqlite3.Connection, table: str) -> _Sample:
        """The sample of `table`, taken again once the table has grown or shrunk by a quarter."""
        source, column = _TEXTS[table]
        (rows,) = conn.execute(f"SELECT coalesce(max(id), 0) FROM {source}").fetchone()
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
        text = "\n".join(texts)
        trigrams = Counter(text[at : at + _TRIGRAM] for at in range(len(text) - _TRIGRAM + 1))
        sample = _Sample(text, trigrams, rows / max(1, len(texts)), rows)
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
    found: dict[str, float] = {}

    def rows(piece: str) -> float:
        if piece not in found:
            seen = sample.trigrams[piece] if len(piece) == _TRIGRAM else sample.text.count(piece)
            found[piece] = (seen or _UNSEEN) * sample.scale
        return found[piece]

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
