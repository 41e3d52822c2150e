"""The limits and quality rules a graph call's arguments must meet before the store is touched."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager

from graphmem.core import validation
from graphmem.core.errors import InvalidInputError
from graphmem.core.limits import Limits
from graphmem.core.models import (
    Entity,
    Graph,
    ObservationAddition,
    Relation,
)
from graphmem.core.projects import Scope
from graphmem.core.validity import end_of, normalised, start_of
from graphmem.storage.base import Store


class Checks:
    """Refusals of arguments over the limits, which every `KnowledgeGraph` call starts with;
    and the transactions every call runs in, in the graph's scope."""

    store: Store
    strict: bool
    limits: Limits
    author: str | None
    scope: Scope

    def reading(self) -> AbstractContextManager[None]:
        """A read transaction of the store in the call's scope (graphmem.core.projects)."""
        return self.store.read(self.scope)

    def graph_of(self, entities: tuple[Entity, ...], relations: tuple[Relation, ...]) -> Graph:
        """A graph read in the call's scope: labelled with projects when read across every one."""
        return Graph(entities, relations, self.scope.every)

    def writing(self) -> AbstractContextManager[None]:
        """A write transaction of the store in the call's scope."""
        return self.store.write(self.scope)

    def _check_text(self, field: str, value: str, max_length: int) -> None:
        if len(value) > max_length:
            raise InvalidInputError(
                field, f"is {len(value)} characters long, over the limit of {max_length}; shorten it."
            )
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            # A lone surrogate (from a JSON escape like "\ud800") cannot be stored as UTF-8.
            raise InvalidInputError(
                field, "contains an unpaired surrogate code point, which is not valid text; remove it."
            ) from None

    def _check_batch(self, field: str, items: Sequence[object], limit: int | None = None) -> None:
        limit = limit or self.limits.max_batch_items
        if len(items) > limit:
            raise InvalidInputError(
                field,
                f"has {len(items)} items, over the limit of {limit} per call; split it into several calls.",
            )

    def _check_name(self, field: str, value: str) -> None:
        self._check_text(field, value, self.limits.max_name_length)

    def _check_observations(self, field: str, contents: Sequence[str]) -> None:
        self._check_batch(field, contents, self.limits.max_observations_per_item)
        for index, content in enumerate(contents):
            self._check_text(f"{field}[{index}]", content, self.limits.max_observation_length)
            if self.strict:
                # Strict mode holds the official tools to save_memory's rule: one atomic fact.
                found = validation.observation_problem(content)
                if found is not None:
                    raise InvalidInputError(f"{field}[{index}]", f"{found[0]} {found[1]}")

    def _check_attribute(self, field: str, addition: ObservationAddition) -> None:
        """An attribute names what one fact sets: a short name, and one content with it."""
        if addition.attribute is None:
            return
        self._check_name(f"{field}.attribute", addition.attribute)
        if len(addition.contents) != 1:
            raise InvalidInputError(
                f"{field}.attribute",
                f"goes with one content (the attribute's value) and this item has {len(addition.contents)}; "
                "give each value its own item.",
            )
        if addition.supersedes and addition.supersedes[0] is not None:
            raise InvalidInputError(
                f"{field}.attribute",
                "and supersedes both say which fact this one replaces; give one of them.",
            )

    def _check_validity(self, field: str, addition: ObservationAddition) -> tuple[str | None, str | None]:
        """The addition's valid time as kept (core/validity.py): dates or instants, in order."""
        kept: list[str | None] = []
        for name, value in (("validFrom", addition.valid_from), ("validUntil", addition.valid_until)):
            bound = None if value is None else normalised(value)
            if value is not None and bound is None:
                raise InvalidInputError(
                    f"{field}.{name}",
                    f"is {value[:40]!r}, not a date; give a day (2024-03-01), a month (2024-03), a year (2024) "
                    "or an ISO 8601 time (2024-03-01T09:00:00Z).",
                )
            kept.append(bound)
        start, end = kept
        if start is not None and end is not None and end_of(end) <= start_of(start):
            raise InvalidInputError(
                f"{field}.validUntil",
                f"is {end}, which ends before validFrom {start} begins; give an end after the start.",
            )
        return start, end

    def _check_entities(self, entities: Sequence[Entity]) -> None:
        self._check_batch("entities", entities)
        for index, entity in enumerate(entities):
            self._check_name(f"entities[{index}].name", entity.name)
            self._check_name(f"entities[{index}].entityType", entity.entity_type)
            self._check_observations(f"entities[{index}].observations", entity.observations)
            if self.strict:
                self._check_quality(f"entities[{index}].name", entity.name, validation.MAX_NAME_LENGTH)
                self._check_quality(
                    f"entities[{index}].entityType", entity.entity_type, validation.MAX_ENTITY_TYPE_LENGTH
                )

    def _check_quality(self, field: str, value: str, max_length: int) -> None:
        """In strict mode, the shorter limits of spec 001 for names and types."""
        if len(value) > max_length:
            raise InvalidInputError(
                field, f"is {len(value)} characters long; in strict mode the limit is {max_length}. Shorten it."
            )

    def _check_relations(self, field: str, relations: Sequence[Relation]) -> None:
        self._check_batch(field, relations)
        for index, relation in enumerate(relations):
            self._check_name(f"{field}[{index}].from", relation.from_)
            self._check_name(f"{field}[{index}].to", relation.to)
            self._check_name(f"{field}[{index}].relationType", relation.relation_type)
            if self.strict:
                self._check_quality(
                    f"{field}[{index}].relationType", relation.relation_type, validation.MAX_RELATION_TYPE_LENGTH
                )

    def check_names(self, field: str, names: Sequence[str]) -> None:
        """Refuse a list of names over the batch limit, or with a name too long or not valid text.

        Raises:
            InvalidInputError: naming the field (and the item) and the problem.
        """
        self._check_names(field, names)

    def check_entities(self, entities: Sequence[Entity]) -> None:
        """Refuse a batch of entities over the limits (count, name, type, observations).

        Raises:
            InvalidInputError: naming the field (and the item) and the problem.
        """
        self._check_entities(entities)

    def check_relations(self, field: str, relations: Sequence[Relation]) -> None:
        """Refuse a batch of relations over the limits (count, endpoint and type lengths).

        Raises:
            InvalidInputError: naming the field (and the item) and the problem.
        """
        self._check_relations(field, relations)

    def check_page(self, entity_type: str | None, offset: int, limit: int | None) -> None:
        """Refuse a page with a negative offset, a limit under 1 or a type that is too long.

        Raises:
            InvalidInputError: naming the argument and what to give instead.
        """
        self._check_page(entity_type, offset, limit)

    def _check_names(self, field: str, names: Sequence[str]) -> None:
        self._check_batch(field, names)
        for index, name in enumerate(names):
            self._check_name(f"{field}[{index}]", name)

    def _check_page(self, entity_type: str | None, offset: int, limit: int | None) -> None:
        if entity_type is not None:
            self._check_text("entityType", entity_type, self.limits.max_name_length)
        if not 0 <= offset <= self.limits.max_offset:
            raise InvalidInputError("offset", f"is {offset}; give a number from 0 to {self.limits.max_offset}.")
        if limit is not None and limit < 1:
            raise InvalidInputError("limit", f"is {limit}; give 1 or more, or leave it out for everything.")
