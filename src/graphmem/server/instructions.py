"""The server instructions: how a model uses this memory well, naming only the tools it has.

A client hands these to the model at the start of every session, so they are short
and concrete. They are built from the tools the server lists (`--toolset`, `--tools`):
advice about a tool the model cannot call would only send it looking for one.
"""

from __future__ import annotations

from collections.abc import Collection

__all__ = ["build_instructions", "name_tools"]


def name_tools(listed: Collection[str], *names: str, joiner: str = "or") -> str:
    """`names` that are listed, in the given order, as `a`, `a or b`, `a, b or c`; "" if none is."""
    present = [name for name in names if name in listed]
    if len(present) <= 1:
        return "".join(present)
    return f"{', '.join(present[:-1])} {joiner} {present[-1]}"


def build_instructions(listed: Collection[str], project: str | None = None) -> str:
    """The instructions for a server that lists the tools named in `listed`.

    Args:
        listed: the names of the tools the server lists.
        project: the name of the project the server works in, when it was resolved at start.
    """
    lines = [
        "This server is a persistent memory that outlives the conversation: a knowledge graph of "
        "entities (a name and a type), relations between them (directed, in active voice, such as "
        "works_at) and observations (short facts about one entity)."
    ]
    if project is not None:
        # Said once, so that a model never guesses a project argument: the server chose it.
        lines.append(f"- It is scoped to project {project} automatically; never pass a project.")
    hints = {
        "search_nodes": "search_nodes (a plain question works)",
        "open_nodes": "open_nodes (exact names or aliases)",
    }
    lookup = [hint for name, hint in hints.items() if name in listed]
    if lookup:
        lines.append(f"- Look before you write: {' or '.join(lookup)}. Never create an entity that is already there.")
    if "query_nodes" in listed:
        lines.append(
            "- List entities by type, importance, creation or update time, thread or relation with query_nodes."
        )
    if "save_memory" in listed:
        lines.append(
            "- Save with save_memory: one fact per observation, and relate every new entity to an "
            "existing or new one in the same call."
        )
    else:
        saving = [
            phrase
            for name, phrase in (
                ("create_entities", "new entities with create_entities"),
                ("add_observations", "new facts about an entity with add_observations"),
            )
            if name in listed
        ]
        if saving:
            relate = "; relate every new entity with create_relations" if "create_relations" in listed else ""
            lines.append(f"- Save {' and '.join(saving)}, one fact per observation{relate}.")
    types_tools = name_tools(listed, "list_entity_types", "list_relation_types", joiner="and")
    if types_tools:
        lines.append(f"- Reuse the entity and relation types already in use ({types_tools}); do not invent synonyms.")
    corrections = []
    if "add_observations" in listed:
        corrections.append("add_observations with supersedes replaces a wrong fact and keeps its history")
    if "update_entities" in listed:
        corrections.append("update_entities renames or retypes an entity")
    if "update_relations" in listed:
        corrections.append("update_relations fixes a relation")
    if "merge_entities" in listed:
        corrections.append("merge_entities joins two entities that are one")
    if corrections:
        lines.append(f"- Correct instead of duplicating: {'; '.join(corrections)}.")
    if "create_entities" in listed or "save_memory" in listed:
        # The answers' notes (docs/clean-memory.md) are worth a call only if the model reads them.
        lines.append(
            "- Read a write's notes: they name a probable duplicate or contradiction and the call that "
            "settles it. Never store secrets: they are redacted."
        )
    paged = name_tools(listed, "read_graph", "search_nodes", "query_nodes", joiner="and")
    if paged:
        lines.append(
            f"- Read large memories in pages: {paged} take limit and offset; an answer with `truncated` "
            "says which offset gets the rest."
        )
    return "\n".join(lines)
