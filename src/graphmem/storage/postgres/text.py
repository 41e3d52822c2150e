"""How texts are stored in PostgreSQL: escaped past U+0000, lower-cased by Python, and the
values derived from an entity that graphmem writes beside it (word document, extra-key copies).

PostgreSQL's `text` cannot hold U+0000, nor a lone UTF-16 surrogate (which JSON, and so a
client, may send, and the other backends keep). Every stored text goes through `escape`: U+0000
becomes U+0001 U+0002, U+0001 becomes U+0001 U+0003, and a lone surrogate U+D800 + n becomes
U+0001 U+0004 followed by the private-use character U+F0000 + n. The escape
keeps code-point order (so ORDER BY ... COLLATE "C" sorts as Python does) and keeps substring
matches, but for one case: a needle starting with U+0002 or U+0003 can match the second half
of an escape; `like_condition` rules that out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from graphmem.core.models import Entity
from graphmem.storage.entity_query import importance_of, instant, thread_of
from graphmem.storage.words import PROJECT_WORDS, WordDocument, index_words

_ESCAPES = {"\x00": "\x01\x02", "\x01": "\x01\x03"}
_ESCAPED = re.compile("[\x00\x01\ud800-\udfff]")
_UNESCAPED = re.compile("\x01(?:[\x02\x03]|\x04[\U000f0000-\U000f07ff])")
_SURROGATES = 0xD800
_STAND_INS = 0xF0000
"""Where the stand-ins for lone surrogates start: plane 15's private use area."""


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    return _ESCAPES.get(char) or f"\x01\x04{chr(_STAND_INS + ord(char) - _SURROGATES)}"


def _unescaped(match: re.Match[str]) -> str:
    code = match.group()
    if code == "\x01\x02":
        return "\x00"
    if code == "\x01\x03":
        return "\x01"
    return chr(_SURROGATES + ord(code[2]) - _STAND_INS)


def _needs_escape(text: str) -> bool:
    if "\x00" in text or "\x01" in text:
        return True
    # A lone surrogate is the only thing UTF-8 cannot encode; the check costs little for ASCII.
    return not text.isascii() and _ESCAPED.search(text) is not None


def escape(text: str) -> str:
    """`text` as PostgreSQL can store it (see the module docstring)."""
    if not _needs_escape(text):
        return text
    return _ESCAPED.sub(_escaped, text)


def unescape(text: str) -> str:
    """The text `escape` was given."""
    if "\x01" not in text:
        return text
    return _UNESCAPED.sub(_unescaped, text)


def lowered(text: str) -> str:
    """The stored lower-cased copy: Python's str.lower(), which is JavaScript's toLowerCase()."""
    return escape(text.lower())


def like_pattern(needle: str) -> str:
    """A LIKE pattern for texts containing `needle` (already escaped), with %, _ and \\ taken literally."""
    return "%" + needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def mid_escape_regex(needle: str) -> str | None:
    """For a needle that could match the second half of an escape: a regular expression that
    matches only where it does not (not right after U+0001); None for every other needle."""
    if not needle:
        return None
    if needle[0] in "\x02\x03\x04":
        after = "(^|[^\x01])"
    elif _STAND_INS <= ord(needle[0]) < _STAND_INS + 0x800:
        after = "(?<!\x01\x04)"  # a lone surrogate's stand-in is the third character of its escape
    else:
        return None
    # Every character outside [A-Za-z0-9] is escaped: in PostgreSQL's regular expressions a
    # backslash before anything else is taken literally.
    body = "".join(char if char.isascii() and char.isalnum() else "\\" + char for char in needle)
    return after + body


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def extra_json(extra: dict[str, Any] | None) -> str | None:
    """The stored form of an entity's or relation's extra keys (JSON text: json.dumps spells
    U+0000 as \\u0000, which jsonb would refuse, and a lone surrogate is spelled \\udxxx, as
    UTF-8 cannot carry it)."""
    if not extra:
        return None
    text = json.dumps(extra, ensure_ascii=False)
    if text.isascii() or _LONE_SURROGATE.search(text) is None:
        return text
    return _LONE_SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def extra_of(value: str | None) -> dict[str, Any] | None:
    """The extra keys back from their stored form."""
    return json.loads(value) if value else None


def document_columns(entity: Entity) -> list[str]:
    """The entity's word-index columns (name, aliases, type, observations), words space-separated."""
    return [
        " ".join(index_words(entity.name)),
        " ".join(word for alias in entity.aliases for word in index_words(alias)),
        " ".join(index_words(entity.entity_type)),
        " ".join(word for observation in entity.observations for word in index_words(observation)),
    ]


def words_blob(columns: Sequence[str]) -> str:
    """Every word of the columns with a space on each side: what the trigram index searches."""
    return " " + " ".join(column for column in columns if column) + " "


def word_count(columns: Sequence[str]) -> int:
    """How many index words the columns hold (the document's BM25 length)."""
    return sum(len(column.split()) for column in columns)


class StoredDocument(WordDocument):
    """A `WordDocument` rebuilt from its stored columns, without tokenizing the texts again."""

    def __init__(self, columns: Sequence[str]) -> None:
        self.columns = tuple(tuple(column.split()) for column in columns)
        # With the word that stands for the project in SQLite's index, as `WordDocument` counts it.
        self.length = sum(len(column) for column in self.columns) + PROJECT_WORDS
        self._blob = " " + " ".join(word for column in self.columns for word in column) + " "


def derived_columns(extra: dict[str, Any] | None) -> tuple[Any, ...]:
    """created_at, updated_at, created_instant, updated_instant, importance, version, thread_id."""
    values = extra or {}
    created, updated, version = values.get("createdAt"), values.get("updatedAt"), values.get("version")
    thread = thread_of(extra)
    return (
        escape(created) if isinstance(created, str) else None,
        escape(updated) if isinstance(updated, str) else None,
        instant(created),
        instant(updated),
        importance_of(extra),
        version if isinstance(version, int) and not isinstance(version, bool) and abs(version) < 2**63 else None,
        escape(thread) if thread is not None else None,
    )
