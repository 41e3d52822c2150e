"""What an answer says when an entity just created probably names one the memory holds
(domain/duplicates.py): it was created, and the note gives the merge call that folds it in.
Bounded: a few named, the rest counted."""

from __future__ import annotations

import json
from collections.abc import Sequence

from graphmem.domain.duplicates import Duplicate

__all__ = ["duplicate_note", "merge_call"]

_NAMED = 3


def _quoted(name: str) -> str:
    return json.dumps(name, ensure_ascii=False)


def merge_call(duplicate: Duplicate) -> dict[str, str]:
    """The merge_entities arguments that fold the newer entity into the older; the other way
    when the newer is shared and the older in a project (a merge keeps the target's project,
    and a shared entity folds into no project's)."""
    if duplicate.new_project == "" and duplicate.project != "":
        return {"source": duplicate.existing, "target": duplicate.name}
    return {"source": duplicate.name, "target": duplicate.existing}


def duplicate_note(duplicates: Sequence[Duplicate]) -> str | None:
    if not duplicates:
        return None
    lines = [
        f"{_quoted(item.name)} is probably {_quoted(item.existing)} ({item.entity_type}; {item.why}): "
        f"merge_entities {json.dumps(merge_call(item), ensure_ascii=False)} folds it in."
        for item in duplicates[:_NAMED]
    ]
    more = len(duplicates) - _NAMED
    if more > 0:
        lines.append(f"And {more} more; find_duplicates lists them.")
    return "Created, but may already be here: " + " ".join(lines) + " If they are different, nothing needs doing."
