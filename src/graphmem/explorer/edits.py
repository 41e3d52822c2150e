"""The explorer's corrections, each the tool call an agent would make for it.

A route's JSON body becomes the arguments of one of graphmem's own tools (fixing a fact is
`add_observations` with `supersedes`, renaming is `update_entities` with `newName`, moving
to another project is `move_entities`, undoing a change of an entity's timeline is
`undo_changes`), so
the browser gets no rule of its own: the tool checks the arguments, refuses a read-only
token, records the author and tells subscribed MCP clients, as it does for any client.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from graphmem.core.errors import InvalidInputError

__all__ = ["EDITS", "Edit"]


@dataclass(frozen=True, slots=True)
class Edit:
    """One kind of correction: the tool it calls, how its body becomes the tool's arguments,
    and which entity to show afterwards."""

    tool: str
    arguments: Callable[[Mapping[str, Any]], dict[str, Any]]
    shown: Callable[[Mapping[str, Any]], str]
    """The entity the answer shows after the edit (for a relation, its source)."""
    target: Callable[[Mapping[str, Any]], str] | None = None
    """For a move, the project the entity goes to: the answer shows it there, not where it was."""


def _text(body: Mapping[str, Any], key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value:
        raise InvalidInputError(key, "is missing or not a text; send it as a non-empty JSON string.")
    return value


def _texts(body: Mapping[str, Any], key: str) -> list[str]:
    value = body.get(key)
    if not isinstance(value, list) or not value or not all(isinstance(item, str) and item for item in value):
        raise InvalidInputError(key, "must be a non-empty list of non-empty texts.")
    return value


def _optional_text(body: Mapping[str, Any], key: str) -> str:
    value = body.get(key)
    return value if isinstance(value, str) else ""


def _change(body: Mapping[str, Any]) -> int:
    value = body.get("seq")
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise InvalidInputError("seq", "is missing or not the number of a change; send it as a JSON number.")
    return value


def _relation(body: Mapping[str, Any]) -> dict[str, str]:
    return {"from": _text(body, "from"), "to": _text(body, "to"), "relationType": _text(body, "relationType")}


EDITS: dict[str, Edit] = {
    "facts/add": Edit(
        "add_observations",
        lambda body: {"observations": [{"entityName": _text(body, "name"), "contents": _texts(body, "texts")}]},
        lambda body: _text(body, "name"),
    ),
    "facts/edit": Edit(
        "add_observations",
        lambda body: {
            "observations": [
                {
                    "entityName": _text(body, "name"),
                    "contents": [_text(body, "text")],
                    "supersedes": [_text(body, "id")],
                }
            ]
        },
        lambda body: _text(body, "name"),
    ),
    "facts/delete": Edit(
        "delete_observations",
        lambda body: {"deletions": [{"entityName": _text(body, "name"), "observations": _texts(body, "texts")}]},
        lambda body: _text(body, "name"),
    ),
    "relations/add": Edit(
        "create_relations", lambda body: {"relations": [_relation(body)]}, lambda body: _text(body, "from")
    ),
    "relations/delete": Edit(
        "delete_relations", lambda body: {"relations": [_relation(body)]}, lambda body: _text(body, "from")
    ),
    "entities/add": Edit(
        "create_entities",
        lambda body: {
            "entities": [
                {
                    "name": _text(body, "name"),
                    "entityType": _text(body, "type"),
                    "observations": _texts(body, "texts") if body.get("texts") else [],
                }
            ]
        },
        lambda body: _text(body, "name"),
    ),
    "entities/rename": Edit(
        "update_entities",
        lambda body: {"entities": [{"name": _text(body, "name"), "newName": _text(body, "newName")}]},
        lambda body: _text(body, "newName"),
    ),
    "entities/merge": Edit(
        "merge_entities",
        lambda body: {"source": _text(body, "source"), "target": _text(body, "target")},
        lambda body: _text(body, "target"),
    ),
    "changes/undo": Edit(
        "undo_changes",
        lambda body: {"changes": [_change(body)]},
        # The entity the timeline was open on (none for the last import); after undoing its
        # creation or a rename there may be none to show.
        lambda body: _optional_text(body, "name"),
    ),
    "entities/move": Edit(
        "move_entities",
        lambda body: {"names": [_text(body, "name")], "to": _text(body, "to")},
        lambda body: _text(body, "name"),
        target=lambda body: _text(body, "to"),
    ),
}
"""Each edit route (after `/api/`) and what it does."""
