"""Texts with U+0000 through SQLite's JSON functions and FTS5, kept exact.

SQLite stores and compares any text exactly when it is bound as a parameter, NUL
included, but two of its parts stop at the first NUL (SQLite 3.40):

- the JSON functions (`json_each`, `json_extract`) decode `\\u0000` as the end of the
  string, so "nul\\u0000name" arrives as "nul";
- FTS5 reads a MATCH expression, and the trigram tokenizer a document, only up to a NUL;
- `replace()` cannot replace a NUL (it takes a pattern starting with NUL for empty).

So a text passed inside a JSON parameter is escaped first, and the SQL unescapes each
value (`exact(...)`): U+0001 becomes U+0001 U+0002 and U+0000 becomes U+0001 U+0003, a
code SQLite decodes without trouble and two `replace()` calls undo. JSON written by
Python (`extra`) is rewritten into that code in SQL before it is decoded
(`escaped_json(...)`). The trigram indexes hold a text with a NUL as its JSON string
(`TRIGRAM_FORM`, and `trigram_query` for the needle): FTS5 only narrows the rows, and
`instr()` on the exact `*_lc` columns keeps the answer exact.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from functools import lru_cache

import orjson

__all__ = [
    "escape",
    "escaped_json",
    "exact",
    "key_item",
    "keys_json",
    "texts_in",
    "texts_json",
    "TRIGRAM_FORM",
    "trigram_query",
]

_ESCAPE = "\x01"
_NUL = "\x00"


def escape(text: str) -> str:
    """`text` in the code `exact()` undoes: no NUL left, and U+0001 doubled up."""
    if _NUL not in text and _ESCAPE not in text:
        return text  # almost every text: nothing to do
    return text.replace(_ESCAPE, "\x01\x02").replace(_NUL, "\x01\x03")


def exact(expression: str) -> str:
    """SQL for the text `escape()` made of the text `expression` gives."""
    # U+0001 U+0003 first: every U+0001 starts a pair, so neither replace() splits one.
    return f"replace(replace({expression}, char(1, 3), char(0)), char(1, 2), char(1))"


def escaped_json(expression: str) -> str:
    """SQL for JSON text written by Python's `json.dumps` with its strings `escape()`d.

    Python writes NUL as `\\u0000` and U+0001 as `\\u0001`. An escaped backslash (two
    backslashes) is rewritten first as `\\u005c`, so the `\\u0000` inside `\\\\u0000` (a
    backslash, then the letters "u0000") is never mistaken for a NUL.
    """
    backslashes = f"replace({expression}, '\\\\', '\\u005c')"
    ones = f"replace({backslashes}, '\\u0001', '\\u0001\\u0002')"
    return f"replace({ones}, '\\u0000', '\\u0001\\u0003')"


def texts_json(texts: Iterable[str]) -> str:
    """A list of texts as one JSON parameter, escaped only if a text needs it; read it with `texts_in`."""
    # One parameter whatever the batch size: never SQLite's limit on bound parameters.
    texts = list(texts)
    plain = json.dumps(texts)
    # JSON writes NUL and U+0001 as \u0000 and \u0001: most lists need no escaping, and
    # their SQL no replace() (a third of a 20-name look-up's time).
    return plain if "\\u000" not in plain else json.dumps([escape(text) for text in texts])


def texts_in(texts: str, parameter: str = "?") -> str:
    """SQL selecting each text of the `texts_json` list `texts`, bound to `parameter`, exactly."""
    value = exact("value") if "\\u0001" in texts else "value"
    return f"SELECT {value} FROM json_each({parameter})"


def keys_json(keys: Iterable[Sequence[str | None]]) -> str:
    """A list of tuples of texts (relation keys, rows to insert) as one JSON parameter; read with `key_item`.

    None stays null, which `key_item` reads as NULL.
    """
    items = [list(key) for key in keys]
    try:
        # orjson writes it in C, a third of the time of the standard library's encoder
        # (a 100-entity batch's rows: about 1 ms less).
        plain = orjson.dumps(items).decode("utf-8")
    except TypeError:
        # A lone surrogate (orjson.JSONEncodeError is a TypeError). ensure_ascii=False: it
        # then fails when bound, as a text bound on its own does, instead of reaching
        # SQLite as an escape it would decode to garbage.
        plain = json.dumps(items, ensure_ascii=False)
    if "\\u000" not in plain:
        return plain
    return json.dumps([[None if text is None else escape(text) for text in key] for key in items], ensure_ascii=False)


def key_item(keys: str, index: int, item: str = "k.value") -> str:
    """SQL for text `index` of the `keys_json` item `item` of the list `keys`, exactly."""
    extracted = f"json_extract({item}, '$[{index}]')"
    return exact(extracted) if _escaped(keys) else extracted


@lru_cache(maxsize=4)
def _escaped(keys: str) -> bool:
    # A statement asks this of one list once an item (a batch's rows: 60 KB, scanned once;
    # the string keeps its hash).
    return "\\u0001" in keys


# What a trigram index holds of a text column (`{0}`): the text, or for a text with a
# NUL (where the tokenizer would stop) its JSON string, which spells NUL `\u0000`.
# replace() cannot do it: it treats a pattern starting with NUL as empty. Migration 0012
# repeats this expression in its triggers.
TRIGRAM_FORM = "CASE WHEN instr({0}, char(0)) THEN json_quote({0}) ELSE {0} END"


def trigram_query(needle: str) -> str:
    """The FTS5 query for the rows of a trigram index (`TRIGRAM_FORM`) that may contain `needle`.

    A text containing the needle holds it as it is, or (with a NUL) as JSON, where the
    needle is spelled as JSON too: SQLite's `json_quote` and Python's `json.dumps`
    spell every character alike. Only the JSON spelling of a needle with a NUL can match.
    """
    spelled = json.dumps(needle, ensure_ascii=False)[1:-1]
    if _NUL in needle or spelled == needle:
        return _phrase(spelled)
    return f"{_phrase(needle)} OR {_phrase(spelled)}"


def _phrase(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'
