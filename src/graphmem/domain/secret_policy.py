"""What graphmem does with a secret written to it (core/secrets.py finds them): `redact` (the
default) replaces it by its marker before anything is stored, embedded or recorded; `refuse`
refuses the write, naming where the secret is; `allow` keeps it, for those who mean it.

Two places apply it, so that no path is missed:

- a tool call's arguments (`clean_arguments`), before the tool reads them: the answer then
  shows what was kept, and says what was redacted and where;
- every entity and relation the store is given (`clean_entity`, `clean_relation`, applied by
  domain/change_log.py's RecordingStore): imports, migrations and anything else that writes.
  What a tool call cleaned passes there unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from graphmem.core.errors import InvalidInputError
from graphmem.core.models import Entity, Relation
from graphmem.core.secrets import find_secrets, redact

__all__ = [
    "POLICIES",
    "NamesWithSecrets",
    "Policy",
    "Redaction",
    "clean_arguments",
    "clean_entity",
    "clean_extra",
    "clean_facts",
    "clean_relation",
    "holds_secret",
    "numbered",
    "redaction_note",
]

Policy = Literal["redact", "refuse", "allow"]
POLICIES: tuple[Policy, ...] = ("redact", "refuse", "allow")


@dataclass(frozen=True, slots=True)
class Redaction:
    """A secret taken out of a text: where (a path into the arguments, or an entity's field)
    and what it was."""

    where: str
    kind: str


def _shown(name: str, at_most: int = 60) -> str:
    """A name as a place names it: its secrets redacted (a place is shown), cut short."""
    return redact(name)[0][:at_most]


def _refused(where: str, kind: str) -> InvalidInputError:
    return InvalidInputError(
        where,
        f"holds a secret ({kind}); this memory refuses secrets (--secrets refuse), and nothing was saved. "
        "Take it out (say what it is for, not what it is) and call again.",
    )


def _clean_text(text: str, where: str, policy: Policy, found: list[Redaction]) -> str:
    cleaned, kinds = redact(text)
    if kinds and policy == "refuse":
        raise _refused(where, kinds[0])
    found.extend(Redaction(where, kind) for kind in kinds)
    return cleaned


def clean_arguments(arguments: Any, policy: Policy) -> tuple[Any, list[Redaction]]:
    """A tool call's wire arguments with every secret in their texts redacted, and where.

    Raises:
        InvalidInputError: `policy` is refuse and a text holds a secret.
    """
    found: list[Redaction] = []
    if policy == "allow" or not holds_secret(arguments):
        return arguments, found  # most calls: one look at each text, nothing rebuilt

    def walk(value: Any, where: str) -> Any:
        if isinstance(value, str):
            return _clean_text(value, where or "arguments", policy, found)
        if isinstance(value, dict):
            return {key: walk(item, f"{where}.{key}" if where else str(key)) for key, item in value.items()}
        if isinstance(value, list):
            return [walk(item, f"{where}[{index}]") for index, item in enumerate(value)]
        return value

    return walk(arguments, ""), found


def holds_secret(value: Any) -> bool:
    """Whether any text in a JSON value holds a secret."""
    if isinstance(value, str):
        return bool(find_secrets(value))
    if isinstance(value, dict):
        return any(holds_secret(item) for item in value.values())
    if isinstance(value, list):
        return any(holds_secret(item) for item in value)
    return False


def _clean_texts(texts: Sequence[str], where: str, policy: Policy, found: list[Redaction]) -> list[str]:
    return [_clean_text(text, f"{where}[{index}]", policy, found) for index, text in enumerate(texts)]


def clean_facts(name: str, facts: Sequence[str], policy: Policy, found: list[Redaction]) -> tuple[str, ...]:
    """Facts about to be added to entity `name`, their secrets redacted (each added to `found`)."""
    if policy == "allow":
        return tuple(facts)
    return tuple(_clean_texts(facts, f"entity {_shown(name)!r}.observations", policy, found))


def clean_extra(
    name: str, extra: dict[str, Any] | None, policy: Policy, found: list[Redaction]
) -> dict[str, Any] | None:
    """An entity's extra keys with the secrets of its aliases and past versions redacted."""
    if policy == "allow" or not extra:
        return extra
    where = f"entity {_shown(name)!r}"
    before = len(found)
    cleaned = dict(extra)
    aliases = cleaned.get("aliases")
    if isinstance(aliases, str):
        cleaned["aliases"] = _clean_text(aliases, f"{where}.aliases", policy, found)
    elif isinstance(aliases, list):
        cleaned["aliases"] = [
            _clean_text(alias, f"{where}.aliases[{index}]", policy, found) if isinstance(alias, str) else alias
            for index, alias in enumerate(aliases)
        ]
    history = cleaned.get("observationHistory")
    if isinstance(history, list):
        cleaned["observationHistory"] = [
            {**item, "content": _clean_text(item["content"], f"{where}.history[{index}]", policy, found)}
            if isinstance(item, dict) and isinstance(item.get("content"), str)
            else item
            for index, item in enumerate(history)
        ]
    return extra if len(found) == before else cleaned


def clean_entity(entity: Entity, policy: Policy, found: list[Redaction]) -> Entity:
    """The entity with the secrets of its name, type, facts, aliases and past versions redacted
    (each added to `found`); the same object when it holds none."""
    if policy == "allow":
        return entity
    before = len(found)
    where = f"entity {_shown(entity.name)!r}"
    name = _clean_text(entity.name, f"{where}.name", policy, found)
    entity_type = _clean_text(entity.entity_type, f"{where}.entityType", policy, found)
    observations = clean_facts(entity.name, entity.observations, policy, found)
    extra = clean_extra(entity.name, entity.extra, policy, found)
    if len(found) == before:
        return entity
    return replace(entity, name=name, entity_type=entity_type, observations=observations, extra=extra)


def clean_relation(relation: Relation, policy: Policy, found: list[Redaction]) -> Relation:
    """The relation with the secrets of its ends' names and its type redacted."""
    if policy == "allow":
        return relation
    before = len(found)
    where = f"relation {_shown(relation.from_, 40)!r} -> {_shown(relation.to, 40)!r}"
    from_ = _clean_text(relation.from_, f"{where}.from", policy, found)
    to = _clean_text(relation.to, f"{where}.to", policy, found)
    relation_type = _clean_text(relation.relation_type, f"{where}.relationType", policy, found)
    if len(found) == before:
        return relation
    return replace(relation, from_=from_, to=to, relation_type=relation_type)


class NamesWithSecrets:
    """The name each entity name holding a secret is written under, the same each time it is
    asked for within one import or migration: the name redacted, numbered past every name that
    is taken ("db [redacted: GitHub token]", then "db [redacted: GitHub token] (2)").

    Once redacted, a name no longer says which entity it was: two that differed only by their
    secrets would become one (a unique-name error, or two entities of one name in a JSONL file),
    and one could be merged into an entity of the memory that merely bears the redacted name.
    So it never meets another: it is numbered past the names made in this run, the names
    written as they are that bear a marker, and the names `exists` says are taken (the memory's,
    or the source's). The relations and facts naming it follow it. A name written as it is that
    a redacted one took first in this run is numbered too.

    `redacted` lists what was taken out. Under `refuse` or `allow` names pass as they are (the
    store refuses, or keeps them).
    """

    def __init__(self, policy: Policy, exists: Callable[[str], bool] | None = None) -> None:
        self._policy = policy
        self._exists = exists or (lambda name: False)
        self._given: dict[str, str] = {}  # held in memory only, for the run
        self._made: set[str] = set()  # the names given to names that held a secret
        self._marked: set[str] = set()  # names written as they are that bear a marker
        self.redacted: list[Redaction] = []

    def __call__(self, name: str) -> str:
        given = self._given.get(name)
        if given is not None or self._policy != "redact":
            return given or name
        cleaned, kinds = redact(name)
        if kinds:
            stored = self._numbered(cleaned)
            self.redacted += [Redaction(f"entity {stored[:60]!r}.name", kind) for kind in kinds]
        elif name in self._made:
            stored = self._numbered(name)  # another entity took this name, redacted, in this run
        else:
            if "[redacted: " in name:
                self._marked.add(name)
            return name
        self._given[name] = stored
        return stored

    def _numbered(self, base: str) -> str:
        stored = numbered(base, lambda name: name in self._made or name in self._marked or self._exists(name))
        self._made.add(stored)
        return stored


def numbered(base: str, taken: Callable[[str], bool]) -> str:
    """`base`, or the first of "base (2)", "base (3)"... that is not taken: where a redacted name
    would meet another's."""
    name, number = base, 1
    while taken(name):
        number += 1
        name = f"{base} ({number})"
    return name


_SHOWN = 5
"""Redactions a note names one by one; past them it counts."""


def redaction_note(found: Sequence[Redaction]) -> str:
    """What an answer says of the secrets it took out."""
    named = "; ".join(f"{item.kind} in {item.where}" for item in found[:_SHOWN])
    more = f"; and {len(found) - _SHOWN} more" if len(found) > _SHOWN else ""
    count = "a secret" if len(found) == 1 else f"{len(found)} secrets"
    return (
        f"Redacted {count} before saving ({named}{more}): graphmem keeps no secrets, and the marker "
        "stands where each was. Keep them in a secret store; remember what they are for."
    )
