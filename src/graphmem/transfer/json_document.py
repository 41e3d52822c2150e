"""Reading a JSON document {"entities": […], "relations": […]} item by item, with line numbers."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, NoReturn

from graphmem.core.errors import InvalidInputError
from graphmem.storage.jsonl.format import finite_float, reject_json_constant

__all__ = ["DECODER", "SECTIONS", "document_items", "looks_like_document"]

_JSON_WHITESPACE = re.compile(r"[ \t\n\r]*")
# The start of a JSON document rather than a JSONL record: a lone "{" (pretty printed)
# or an object whose first key is one of the document's lists.
_DOCUMENT_START = re.compile(r'\{\s*(?:$|"(?:entities|relations|observations)"\s*:)')
# The lists of a JSON document and the record type of their items.
SECTIONS = {"entities": "entity", "relations": "relation", "observations": "observation"}


# The same strictness as the JSONL reader: only what JavaScript's JSON.parse accepts, so
# nothing is imported that the official server could not load back.
DECODER = json.JSONDecoder(parse_constant=reject_json_constant, parse_float=finite_float)


class _Positions:
    """Line numbers of offsets into a text, for offsets that only grow."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.offset = 0
        self.line = 1

    def line_of(self, offset: int) -> int:
        if offset < self.offset:
            # Rare (an error reported at an earlier offset): count from the start.
            self.offset, self.line = 0, 1
        self.line += self.text.count("\n", self.offset, offset)
        self.offset = offset
        return self.line


def document_items(text: str) -> Iterator[tuple[str, int, int, Any]]:
    """Each item of the document's lists: (key, offset, line number, value).

    Walks the top-level object by hand, not with one `json.loads`, so an item that is not a
    record can be reported with its line and skipped. A key that is not a list yields the
    key's value once. A syntax error ends the walk, since nothing after it can be trusted.

    Raises:
        InvalidInputError: the text is not one JSON object.
    """
    positions = _Positions(text)

    def skip(offset: int) -> int:
        match = _JSON_WHITESPACE.match(text, offset)
        return match.end() if match else offset

    def fail(offset: int, reason: str) -> NoReturn:
        raise InvalidInputError(
            "FILE",
            f"Line {positions.line_of(offset)}: {reason} A JSON document cannot be read past a syntax error; "
            "nothing was imported.",
        )

    def value_at(offset: int) -> tuple[Any, int]:
        try:
            return DECODER.raw_decode(text, offset)
        except json.JSONDecodeError as exc:
            fail(exc.pos, f"not valid JSON ({exc.msg}).")
        except (ValueError, RecursionError) as exc:
            fail(offset, f"not valid JSON ({exc}).")

    def expect(offset: int, chars: str, what: str) -> int:
        char = text[offset : offset + 1]
        if not char or char not in chars:
            fail(offset, f"expected {what}.")
        return offset

    pos = expect(skip(0), "{", "a JSON object")
    pos = skip(pos + 1)
    if text[pos : pos + 1] == "}":
        pos += 1
    else:
        while True:
            key, pos = value_at(expect(pos, '"', "a key in double quotes"))
            pos = skip(expect(skip(pos), ":", "':'") + 1)
            if key in SECTIONS and text[pos : pos + 1] == "[":
                pos = skip(pos + 1)
                if text[pos : pos + 1] == "]":
                    pos += 1
                else:
                    while True:
                        start = pos
                        value, pos = value_at(pos)
                        yield key, start, positions.line_of(start), value
                        pos = expect(skip(pos), ",]", "',' or ']'")
                        closing = text[pos] == "]"
                        pos = skip(pos + 1)
                        if closing:
                            break
            else:
                start = pos
                value, pos = value_at(pos)
                if key in SECTIONS:
                    fail(start, f"{key!r} must be a list.")
                yield key, start, positions.line_of(start), value
            pos = expect(skip(pos), ",}", "',' or '}'")
            closing = text[pos] == "}"
            pos = skip(pos + 1)
            if closing:
                break
    if skip(pos) != len(text):
        fail(skip(pos), "extra data after the JSON document.")


def looks_like_document(first_line: str) -> bool:
    text = first_line.strip()
    try:
        value = DECODER.decode(text)
    except (ValueError, RecursionError):
        return _DOCUMENT_START.match(text) is not None
    return isinstance(value, dict) and "type" not in value and any(key in value for key in SECTIONS)
