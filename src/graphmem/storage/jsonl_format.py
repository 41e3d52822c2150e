"""The official JSONL file format: one record per line, read and written byte for byte.

A line is `{"type":"entity","name":…,"entityType":…,"observations":[…]}` or
`{"type":"relation","from":…,"to":…,"relationType":…}`, written compactly with
non-ASCII kept raw, as JavaScript's `JSON.stringify` does. Keys the official
loader does not know (a fork's `createdAt`, graphmem's own metadata) travel in
`extra` and are written back after the official keys, so nothing is lost.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from graphmem.errors import ImportFormatError
from graphmem.models import Entity, Relation

__all__ = [
    "EntityRecord",
    "OtherRecord",
    "RelationRecord",
    "Record",
    "decode_line",
    "encode_entity",
    "encode_relation",
    "encode_value",
]

_ENTITY_KEYS = ("type", "name", "entityType", "observations")
_RELATION_KEYS = ("type", "from", "to", "relationType")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


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


Record = EntityRecord | RelationRecord | OtherRecord


def encode_value(value: Any) -> str:
    """Compact JSON exactly as `JSON.stringify` writes it.

    Python and JavaScript agree on every escape except lone surrogates, which a file
    written elsewhere may hold: JavaScript writes them as `\\udXXX` escapes.
    """
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if _LONE_SURROGATE.search(text):
        text = _LONE_SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)
    return text


def encode_entity(entity: Entity, extra: dict[str, Any] | None = None) -> str:
    """The entity's line: the official keys in the official order, then its extra keys."""
    extra = entity.extra if extra is None else extra
    record: dict[str, Any] = {"type": "entity", **entity.to_wire()}
    if extra:
        record.update((key, value) for key, value in extra.items() if key not in record)
    return encode_value(record)


def encode_relation(relation: Relation, extra: dict[str, Any] | None = None) -> str:
    """The relation's line: the official keys in the official order, then its extra keys."""
    extra = relation.extra if extra is None else extra
    record: dict[str, Any] = {"type": "relation", **relation.to_wire()}
    if extra:
        record.update((key, value) for key, value in extra.items() if key not in record)
    return encode_value(record)


def _string(value: Any, key: str, line_no: int) -> str:
    if not isinstance(value, str):
        raise ImportFormatError(line_no, f"{key!r} must be a string, not {type(value).__name__}.")
    return value


def decode_line(line: str, line_no: int) -> Record | None:
    """Parse one line; None for a blank one.

    Raises:
        ImportFormatError: the line is not JSON, or an entity/relation lacks a field.
    """
    if not line.strip():
        return None
    try:
        value = json.loads(line)
    except (ValueError, RecursionError) as exc:
        raise ImportFormatError(line_no, f"not valid JSON ({exc}).") from None
    if not isinstance(value, dict):
        raise ImportFormatError(line_no, "not a JSON object.")
    kind = value.get("type")
    if kind == "entity":
        observations = value.get("observations", [])
        if not isinstance(observations, list) or not all(isinstance(item, str) for item in observations):
            raise ImportFormatError(line_no, "'observations' must be a list of strings.")
        entity = Entity(
            _string(value.get("name"), "name", line_no),
            _string(value.get("entityType"), "entityType", line_no),
            tuple(observations),
        )
        extra = {k: v for k, v in value.items() if k not in _ENTITY_KEYS}
        return EntityRecord(Entity(entity.name, entity.entity_type, entity.observations, extra or None), extra)
    if kind == "relation":
        relation = Relation(
            _string(value.get("from"), "from", line_no),
            _string(value.get("to"), "to", line_no),
            _string(value.get("relationType"), "relationType", line_no),
        )
        extra = {k: v for k, v in value.items() if k not in _RELATION_KEYS}
        return RelationRecord(Relation(relation.from_, relation.to, relation.relation_type, extra or None), extra)
    return OtherRecord(line.rstrip("\r"))
