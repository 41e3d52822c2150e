"""Keeping read answers within what a client can take.

A read tool on a large memory could answer with megabytes of JSON, which a client
either rejects or pays for in context. Every graph-shaped answer goes through
`fit_graph`: when its text would exceed the response budget, the answer keeps the
longest run of entities that fits (never half an entity), the relations touching
them, and says how many entities were left out and how to get the rest.

Sizes are counted in characters of the pretty JSON text, at about four characters
per token, which is close for English and JSON and errs on the safe side.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring as _quote  # the C quoting json.dumps uses
from typing import Any

from graphmem.core.models import Entity, Graph, Relation
from graphmem.tools.base import dump_json

__all__ = [
    "CHARS_PER_TOKEN",
    "SMALLEST_ENTITY",
    "SMALLEST_OUTLINE",
    "Fitted",
    "fit_graph",
    "cut_note",
    "first_read_size",
    "fit_items",
    "most_that_fit",
    "next_read_size",
    "truncation_note",
]

CHARS_PER_TOKEN = 4

# The JSON text around the lists, `{"entities": [...], "relations": [...]}` pretty printed.
_FRAME = 40


@dataclass(frozen=True, slots=True)
class Fitted:
    """A graph cut to the budget, with what was left out."""

    graph: Graph
    total_entities: int
    omitted_entities: int

    @property
    def cut(self) -> bool:
        return self.omitted_entities > 0

    def truncation(self, next_offset: int) -> dict[str, Any]:
        """The `truncated` part of a structured answer."""
        return {"omittedEntities": self.omitted_entities, "nextOffset": next_offset}


def _text_size(wire: dict[str, Any]) -> int:
    # Inside the answer each object sits two levels deep: every line of it gets four
    # more spaces of indent, and a comma and newline separate it from the next.
    if wire and all(type(value) in _SCALARS for value in wire.values()):
        return _flat_size(wire)
    text = dump_json(wire)
    return len(text) + 4 * (text.count("\n") + 1) + 2


_SCALARS = {str, int, bool, type(None)}


def _flat_size(wire: dict[str, Any]) -> int:
    """`_text_size` of an object whose values are strings, integers, booleans or null.

    Counted, not serialised: json.dumps with an indent runs in pure Python, which is
    slow for the thousands of items a hub can bring.
    """
    # "{\n", then "  key: value" per item joined by ",\n", then "\n}"; one line per item plus two.
    characters = 2 + 2 * len(wire)
    for key, value in wire.items():
        characters += 4 + len(_quote(key)) + len(_scalar_json(value))
    return characters + 4 * (len(wire) + 2) + 2


def _scalar_json(value: str | int | bool | None) -> str:
    if isinstance(value, str):
        return str(_quote(value))
    return json.dumps(value)


# The pretty JSON of an entity or a relation without its strings: what `_text_size` adds
# to the quoted strings. json.dumps with an indent runs in pure Python, which is slow for
# thousands of items, while the quoting below runs in C.
_RELATION_FRAME = _text_size({"from": "", "to": "", "relationType": ""}) - 6
_ENTITY_FRAME = _text_size({"name": "", "entityType": "", "observations": []}) - 4
# Observations open the empty list onto lines of their own: each adds its quoted text, a
# line (indent, newline and the answer's extra indent) and a comma; the list adds a line.
_OBSERVATIONS_OPENED = 6
_PER_OBSERVATION = 10


def _relation_size(relation: Relation) -> int:
    """`_text_size(relation.to_wire())`, computed without serialising the relation."""
    return (
        _RELATION_FRAME + len(_quote(relation.from_)) + len(_quote(relation.to)) + len(_quote(relation.relation_type))
    )


def _entity_size(entity: Entity) -> int:
    """`_text_size(entity.to_wire())`, computed without serialising the entity."""
    size = _ENTITY_FRAME + len(_quote(entity.name)) + len(_quote(entity.entity_type))
    if entity.observations:
        observations = entity.observations
        size += _OBSERVATIONS_OPENED + _PER_OBSERVATION * len(observations) + sum(map(len, map(_quote, observations)))
    return size


# The smallest an entity can be in an answer: no budget holds more entities than its
# size over this, so a read need never fetch more than that many from the store.
SMALLEST_ENTITY = _text_size({"name": "", "entityType": "", "observations": []})
SMALLEST_OUTLINE = _text_size({"name": "", "entityType": ""})


def most_that_fit(budget_tokens: int, smallest: int) -> int | None:
    """An upper bound on how many items of at least `smallest` characters fit; None when unlimited."""
    if budget_tokens <= 0:
        return None
    return budget_tokens * CHARS_PER_TOKEN // smallest + 1


def fit_graph(graph: Graph, budget_tokens: int) -> Fitted:
    """The longest prefix of the graph's entities whose answer fits the budget.

    Relations are kept when they touch a kept entity. At least one entity is always
    kept, so a single huge entity is still readable. A budget of 0 keeps everything.
    """
    total = len(graph.entities)
    if budget_tokens <= 0:
        return Fitted(graph, total, 0)
    budget = budget_tokens * CHARS_PER_TOKEN - _FRAME
    touching: dict[str, list[int]] = {}
    for index, relation in enumerate(graph.relations):
        touching.setdefault(relation.from_, []).append(index)
        if relation.to != relation.from_:
            touching.setdefault(relation.to, []).append(index)
    # Walk the entities in order, paying for each one and for the relations it brings
    # in, until the next one would not fit. Only this prefix is ever measured, so a
    # huge graph costs no more than the budget's worth of work.
    kept_relations: set[int] = set()
    used = 0
    kept = 0
    for entity in graph.entities:
        brought = [index for index in touching.get(entity.name, ()) if index not in kept_relations]
        cost = _entity_size(entity) + sum(_relation_size(graph.relations[index]) for index in brought)
        if kept and used + cost > budget:
            break
        used += cost
        kept += 1
        kept_relations.update(brought)
    if kept == total:
        # Everything fits (relations between entities that do not exist, which only a
        # whole-graph read holds, come along unmeasured).
        return Fitted(graph, total, 0)
    relations = tuple(graph.relations[index] for index in sorted(kept_relations))
    return Fitted(Graph(graph.entities[:kept], relations, graph.labelled), total, total - kept)


# Rough sizes in an answer's text, for a first guess only: an entity's frame and name, an
# observation, a relation. Each relation is shown once, but a run of entities from a large
# graph brings about two per relation an entity has on average (its own and its neighbours').
_GUESS_ENTITY, _GUESS_OBSERVATION, _GUESS_RELATION = 80, 70, 90
# A read sized by an estimate takes this much more, so that it usually reaches the cut.
_SPARE = 1.25


def first_read_size(entities: int, relations: int, observations: int, budget_tokens: int) -> int:
    """How many entities a first read should load to fill the budget, guessed from the
    memory's counts with a quarter to spare; the reads after it measure instead of guess."""
    per_entity = (
        _GUESS_ENTITY
        + _GUESS_OBSERVATION * observations / max(1, entities)
        + _GUESS_RELATION * 2 * relations / max(1, entities)
    )
    return int(budget_tokens * CHARS_PER_TOKEN * _SPARE / per_entity) + 1


def next_read_size(graph: Graph, read: int, budget_tokens: int) -> int:
    """How many entities to read next, when the first `read` (all of `graph`) did not fill the budget.

    Enough, at their average size, to fill it with a quarter to spare, and at least twice
    as many: usually one more read reaches the cut, and a run of tiny entities still
    grows quickly.
    """
    used = max(1, len(dump_json(graph.to_wire())))
    return max(2 * read, int(read * budget_tokens * CHARS_PER_TOKEN * _SPARE / used) + 1)


def fit_items(items: Sequence[dict[str, Any]], budget_tokens: int) -> int:
    """How many of the items, from the first, fit the budget (at least one; all when 0)."""
    if budget_tokens <= 0:
        return len(items)
    budget = budget_tokens * CHARS_PER_TOKEN - _FRAME
    used = 0
    for kept, item in enumerate(items):
        used += _text_size(item)
        if kept and used > budget:
            return kept
    return len(items)


def truncation_note(fitted: Fitted, budget_tokens: int, how_to_continue: str) -> str:
    """The text that tells the model a graph answer was cut and how to get the rest."""
    return cut_note(
        fitted.total_entities - fitted.omitted_entities, fitted.omitted_entities, budget_tokens, how_to_continue
    )


def cut_note(shown: int, omitted: int, budget_tokens: int, how_to_continue: str) -> str:
    """The text that tells the model an answer of entities was cut and how to get the rest."""
    return (
        f"Showing {shown} of {shown + omitted} entities: the other {omitted} were left out to keep this "
        f"answer within the response budget of about {budget_tokens:,} tokens. {how_to_continue}"
    )
