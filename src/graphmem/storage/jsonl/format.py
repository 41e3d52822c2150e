"""The official JSONL file format: one record per line, read and written byte for byte.

A line is `{"type":"entity","name":…,"entityType":…,"observations":[…]}` or
`{"type":"relation","from":…,"to":…,"relationType":…}`, written compactly with
non-ASCII kept raw, as JavaScript's `JSON.stringify` does. Keys the official
loader does not know (a fork's `createdAt`, graphmem's own metadata) travel in
`extra` and are written back after the official keys, so nothing is lost.

Only JSON that JavaScript's `JSON.parse` also accepts is read: Python alone would
take `NaN`/`Infinity` (and turn `1e400` into an infinity it then writes as
`Infinity`), and a file holding such a line would stop the official server from
loading anything.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from json.encoder import encode_basestring as _quote  # the C quoting that dumps uses with ensure_ascii=False
from typing import Any, NoReturn

from graphmem.core.errors import ImportFormatError
from graphmem.core.models import Entity, Relation

__all__ = [
    "EntityRecord",
    "OtherRecord",
    "RelationRecord",
    "Record",
    "decode_line",
    "encode_entity",
    "encode_graph",
    "encode_relation",
    "encode_value",
    "finite_float",
    "reject_json_constant",
]

_ENTITY_KEYS = ("type", "name", "entityType", "observations")
_RELATION_KEYS = ("type", "from", "to", "relationType")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_JSON_WHITESPACE = " \t\r\n"


def reject_json_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


def finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text} is out of range")
    return value


# One encoder and one decoder for every line: building them per call costs more than
# the encoding of a typical line.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_DECODER = json.JSONDecoder(parse_constant=reject_json_constant, parse_float=finite_float)


@dataclass(frozen=True, slots=True)
class EntityRecord:
    entity: Entity
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RelationRecord:
    relation: Relation
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class OtherRecord:
    """A line of another type (a fork's marker line, say): kept verbatim, never interpreted."""

    line: str
    kind: object = None
    """The line's "type" value, for messages about what was kept."""


Record = EntityRecord | RelationRecord | OtherRecord


def encode_value(value: Any) -> str:
    """Compact JSON exactly as `JSON.stringify` writes it.

    Python and JavaScript agree on every escape except lone surrogates, which a file
    written elsewhere may hold: JavaScript writes them as `\\udXXX` escapes.
    """
    return _escape_lone_surrogates(_ENCODER.encode(value))


def _escape_lone_surrogates(text: str) -> str:
    if not text.isascii() and _LONE_SURROGATE.search(text):
        text = _LONE_SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)
    return text


def encode_entity(entity: Entity, extra: dict[str, Any] | None = None) -> str:
    """The entity's line: the official keys in the official order, then its extra keys."""
    extra = entity.extra if extra is None else extra
    if not extra:
        # The common case built from quoted strings: the same bytes as encoding the dict,
        # in half the time, which is most of a rewrite of a large file.
        observations = ",".join(map(_quote, entity.observations))
        return _escape_lone_surrogates(
            f'{{"type":"entity","name":{_quote(entity.name)},"entityType":{_quote(entity.entity_type)},'
            f'"observations":[{observations}]}}'
        )
    record: dict[str, Any] = {"type": "entity", **entity.to_wire()}
    record.update((key, value) for key, value in extra.items() if key not in record)
    return encode_value(record)


def encode_relation(relation: Relation, extra: dict[str, Any] | None = None) -> str:
    """The relation's line: the official keys in the official order, then its extra keys."""
    extra = relation.extra if extra is None else extra
    if not extra:
        return _escape_lone_surrogates(
            f'{{"type":"relation","from":{_quote(relation.from_)},"to":{_quote(relation.to)},'
            f'"relationType":{_quote(relation.relation_type)}}}'
        )
    record: dict[str, Any] = {"type": "relation", **relation.to_wire()}
    record.update((key, value) for key, value in extra.items() if key not in record)
    return encode_value(record)


def encode_graph(entities: Iterable[Entity], relations: Iterable[Relation]) -> Iterator[str]:
    """Every line of a memory file, each ending in `\\n`: all entities, then all relations.

    Joined, they are the file the official server writes (with the trailing newline of
    upstream `main`); an empty graph gives no lines, that is an empty file.
    """
    for entity in entities:
        yield encode_entity(entity) + "\n"
    for relation in relations:
        yield encode_relation(relation) + "\n"


def _string(value: Any, key: str, line_no: int) -> str:
    if not isinstance(value, str):
        raise ImportFormatError(line_no, f"{key!r} must be a string, not {type(value).__name__}.")
    return value


def decode_line(line: str, line_no: int) -> Record | None:
    """Parse one line; None for a blank one.

    Raises:
        ImportFormatError: the line is not JSON, or an entity/relation lacks a field.
    """
    # JSON's own whitespace only: JSON.parse rejects a no-break space around a record.
    text = line.strip(_JSON_WHITESPACE)
    if not text or text.isspace():
        return None
    try:
        # raw_decode skips the two whitespace regexes decode() runs, a fifth of load time.
        value, end = _DECODER.raw_decode(text)
        if end != len(text):
            raise ValueError(f"extra data at column {end + 1}")
    except (ValueError, RecursionError) as exc:
        raise ImportFormatError(line_no, f"not valid JSON ({exc}).") from None
    if not isinstance(value, dict):
        raise ImportFormatError(line_no, "not a JSON object.")
    kind = value.get("type")
    if kind == "entity":
        observations = value.get("observations", [])
        if not isinstance(observations, list) or not all(isinstance(item, str) for item in observations):
            raise ImportFormatError(line_no, "'observations' must be a list of strings.")
        name = _string(value.get("name"), "name", line_no)
        entity_type = _string(value.get("entityType"), "entityType", line_no)
        # Only look for extra keys when there are more keys than the official ones present.
        has_extra = len(value) > 3 + ("observations" in value)
        extra = {k: v for k, v in value.items() if k not in _ENTITY_KEYS} if has_extra else {}
        return EntityRecord(Entity(name, entity_type, tuple(observations), extra or None), extra)
    if kind == "relation":
        from_ = _string(value.get("from"), "from", line_no)
        to = _string(value.get("to"), "to", line_no)
        relation_type = _string(value.get("relationType"), "relationType", line_no)
        extra = {k: v for k, v in value.items() if k not in _RELATION_KEYS} if len(value) > 4 else {}
        return RelationRecord(Relation(from_, to, relation_type, extra or None), extra)
    return OtherRecord(line.rstrip("\r"), kind)
