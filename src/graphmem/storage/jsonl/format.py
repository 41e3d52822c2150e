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

Projects (design/projects-and-time.md): an entity or relation of a project carries
`"project":"<key>"` right after the official keys, before any extra key:

    {"type":"entity","name":"README","entityType":"file","observations":[],"project":"github.com/acme/api"}

The shared space's lines carry no `project` key, so a memory without projects is written
byte for byte as before, and a file without the key (the official server's) opens with
everything shared. The key is `Entity.project` / `Relation.project`, never an `extra` key:
`"project":""` reads as the shared space (and is written back without the key), and a
`project` that is not a string makes the line unreadable, as a `name` that is not one does.
The official server reads every line and ignores the key, so it sees every project as one
memory (one name in two projects is, to it, a name written twice, and its point operations
act on the first). A rewrite by it may drop the key (its current releases write only the
keys they know): those entities and relations then fall back to the shared space, which
graphmem reads as it reads any duplicate names of a file, and nothing is lost.
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
from graphmem.core.projects import SHARED

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
_PROJECT_KEY = "project"
# The keys a line's record reads itself; everything else on the line is extra.
_ENTITY_FIELDS = (*_ENTITY_KEYS, _PROJECT_KEY)
_RELATION_FIELDS = (*_RELATION_KEYS, _PROJECT_KEY)
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


def _project_member(project: str) -> str:
    """The `,"project":…` a line of a project carries before its closing brace; nothing for the shared space."""
    return f',"project":{_quote(project)}' if project else ""


def _with_extra(record: dict[str, Any], project: str, extra: dict[str, Any]) -> str:
    if project:
        record[_PROJECT_KEY] = project
    # An extra `project` (no reader puts one there) is never written: on the line the key
    # says where the record lives, and reading it back would move the record there.
    record.update((key, value) for key, value in extra.items() if key not in record and key != _PROJECT_KEY)
    return encode_value(record)


def encode_entity(entity: Entity, extra: dict[str, Any] | None = None) -> str:
    """The entity's line: the official keys in the official order, its project, then its extra keys."""
    extra = entity.extra if extra is None else extra
    if not extra:
        # The common case built from quoted strings: the same bytes as encoding the dict,
        # in half the time, which is most of a rewrite of a large file.
        observations = ",".join(map(_quote, entity.observations))
        return _escape_lone_surrogates(
            f'{{"type":"entity","name":{_quote(entity.name)},"entityType":{_quote(entity.entity_type)},'
            f'"observations":[{observations}]{_project_member(entity.project)}}}'
        )
    return _with_extra({"type": "entity", **entity.to_wire()}, entity.project, extra)


def encode_relation(relation: Relation, extra: dict[str, Any] | None = None) -> str:
    """The relation's line: the official keys in the official order, its project, then its extra keys."""
    extra = relation.extra if extra is None else extra
    if not extra:
        return _escape_lone_surrogates(
            f'{{"type":"relation","from":{_quote(relation.from_)},"to":{_quote(relation.to)},'
            f'"relationType":{_quote(relation.relation_type)}{_project_member(relation.project)}}}'
        )
    return _with_extra({"type": "relation", **relation.to_wire()}, relation.project, extra)


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


def _project(value: dict[str, Any], line_no: int) -> str:
    """The line's project: its `project` key, or the shared space when it has none."""
    project = value.get(_PROJECT_KEY, SHARED)
    return _string(project, _PROJECT_KEY, line_no)


def decode_line(line: str, line_no: int) -> Record | None:
    """Parse one line; None for a blank one.

    Raises:
        ImportFormatError: the line is not JSON, or an entity/relation lacks a field or has
            one (its `project` included) of the wrong type.
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
        # Only look for the project and extra keys when there are more keys than the official
        # ones present: most lines of most files have neither.
        has_more = len(value) > 3 + ("observations" in value)
        project = _project(value, line_no) if has_more else SHARED
        extra = {k: v for k, v in value.items() if k not in _ENTITY_FIELDS} if has_more else {}
        return EntityRecord(Entity(name, entity_type, tuple(observations), extra or None, project), extra)
    if kind == "relation":
        from_ = _string(value.get("from"), "from", line_no)
        to = _string(value.get("to"), "to", line_no)
        relation_type = _string(value.get("relationType"), "relationType", line_no)
        has_more = len(value) > 4
        project = _project(value, line_no) if has_more else SHARED
        extra = {k: v for k, v in value.items() if k not in _RELATION_FIELDS} if has_more else {}
        return RelationRecord(Relation(from_, to, relation_type, extra or None, project), extra)
    return OtherRecord(line.rstrip("\r"), kind)
