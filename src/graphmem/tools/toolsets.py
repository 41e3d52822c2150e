"""Which tools a server lists.

Models choose worse among many tools, so a server lists a lean set by default: the
nine official tools and the few an agent reaches for every day. `official` is the
official server's list exactly; `all` is everything graphmem has; `--tools` names an
exact list.
"""

from __future__ import annotations

from collections.abc import Sequence

from graphmem.core.errors import ConfigError
from graphmem.tools.base import ToolSpec
from graphmem.tools.official import OFFICIAL_TOOLS

__all__ = ["DEFAULT_TOOLSET", "TOOLSETS", "select_tools"]

_OFFICIAL_NAMES = tuple(spec.name for spec in OFFICIAL_TOOLS)

# At most 20 tools, and at most 24 KB of listing (tests/test_listing_cost.py): every byte is
# in the model's context on every call. Beyond the official nine, the tools an agent reaches
# for in an ordinary session: save_memory (one validated write instead of two calls);
# get_context_info, describe_entity and get_neighbors (read around what it can name, the
# commonest read after search); find_path and search_relations (how things connect, who
# relates to whom); the two type lists (reuse a type instead of inventing a near-duplicate);
# update_entities, update_relations and merge_entities (fix a mistake or a duplicate in place
# rather than delete and re-create, which loses history). Lookups by metadata, history,
# analytics, export and compaction are rarer and stay in `all`.
_DEFAULT_NAMES = (
    *_OFFICIAL_NAMES,
    "save_memory",
    "get_context_info",
    "describe_entity",
    "get_neighbors",
    "find_path",
    "search_relations",
    "list_entity_types",
    "list_relation_types",
    "update_entities",
    "update_relations",
    "merge_entities",
)

TOOLSETS: dict[str, tuple[str, ...] | None] = {
    "official": _OFFICIAL_NAMES,
    "default": _DEFAULT_NAMES,
    "all": None,
}
"""Toolset name to the tool names it lists (None: every tool)."""

DEFAULT_TOOLSET = "default"


def select_tools(
    available: Sequence[ToolSpec], toolset: str, names: Sequence[str] | None = None
) -> tuple[ToolSpec, ...]:
    """The tools to list, in the order of `available`.

    Args:
        available: every tool graphmem has.
        toolset: `official`, `default` or `all`.
        names: an exact list of tool names, which wins over the toolset.

    Raises:
        ConfigError: an unknown toolset or tool name, with the valid ones.
    """
    by_name = {spec.name: spec for spec in available}
    if names is not None:
        unknown = [name for name in names if name not in by_name]
        if unknown:
            raise ConfigError(
                "--tools", ",".join(names), f"No tool named {', '.join(unknown)}; the tools are: {', '.join(by_name)}."
            )
        if not names:
            raise ConfigError("--tools", "", "Name at least one tool, or leave it out to use a toolset.")
        wanted = set(names)
        return tuple(spec for spec in available if spec.name in wanted)
    if toolset not in TOOLSETS:
        raise ConfigError("--toolset", toolset, f"Choose one of: {', '.join(TOOLSETS)}.")
    members = TOOLSETS[toolset]
    if members is None:
        return tuple(available)
    chosen = set(members)
    return tuple(spec for spec in available if spec.name in chosen)
