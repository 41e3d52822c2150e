"""The prompts graphmem offers: the specs' memory-usage system prompts, with their arguments.

Spec 000 recommends a system prompt for using the memory tools (retrieval, storage,
maintenance); spec 003 gives one for chat personalization (identify the user,
remember, watch five kinds of facts, update). Both are offered here as MCP prompts,
in clearer words but with the specs' steps. Like the instructions, they name only the
tools the server lists. `prompt_handlers.py` turns them into MCP types.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from graphmem.core.errors import InvalidInputError
from graphmem.server.instructions import name_tools

__all__ = ["PROMPTS", "DEFAULT_USER", "Prompt", "PromptArgument", "render_prompt"]

DEFAULT_USER = "default_user"
"""The user's entity when none is named: spec 003's prompt uses it, so memories saved under it keep matching."""

# A user's name becomes an entity name; the graph's default limit for names.
_MAX_USER_NAME = 1000


@dataclass(frozen=True, slots=True)
class PromptArgument:
    """One argument a prompt takes (every value is a string, as MCP sends them)."""

    name: str
    description: str
    required: bool = False


@dataclass(frozen=True, slots=True)
class Prompt:
    """A prompt as `prompts/list` shows it."""

    name: str
    title: str
    description: str
    arguments: tuple[PromptArgument, ...] = ()


MEMORY_USAGE = Prompt(
    name="memory-usage",
    title="Use the memory well",
    description=(
        "A system prompt for any assistant with this memory: look things up first, save what the "
        "conversation taught, keep the memory correct."
    ),
)

CHAT_PERSONALIZATION = Prompt(
    name="chat-personalization",
    title="Remember the user",
    description=(
        "A system prompt for personal chats: identify the user, recall what memory knows about them, "
        "notice identity, behaviours, preferences, goals and relationships, and save them."
    ),
    arguments=(
        PromptArgument(
            "user",
            f"The entity name of the user in memory, such as their name; {DEFAULT_USER} if not given.",
        ),
    ),
)

PROMPTS: dict[str, Prompt] = {prompt.name: prompt for prompt in (MEMORY_USAGE, CHAT_PERSONALIZATION)}
"""Every prompt, by name, in the order `prompts/list` shows them."""


def render_prompt(name: str, arguments: Mapping[str, str] | None, listed: Collection[str]) -> str:
    """The text of prompt `name` with `arguments`, for a server that lists the tools in `listed`.

    Raises:
        InvalidInputError: no prompt has that name, an argument is unknown, or a value is unusable.
    """
    prompt = PROMPTS.get(name)
    if prompt is None:
        raise InvalidInputError(
            "name", f"no prompt is named {name!r}; the prompts are {', '.join(PROMPTS)} (see prompts/list)."
        )
    arguments = arguments or {}
    known = {argument.name for argument in prompt.arguments}
    unknown = sorted(set(arguments) - known)
    if unknown:
        takes = f"its arguments are: {', '.join(sorted(known))}" if known else "it takes no arguments"
        raise InvalidInputError(f"arguments.{unknown[0]}", f"prompt {name} has no argument {unknown[0]!r}; {takes}.")
    if prompt is CHAT_PERSONALIZATION:
        return _chat_personalization(_user(arguments.get("user")), listed)
    return _memory_usage(listed)


def _user(value: str | None) -> str:
    if value is None or not value.strip():
        # An empty field in a client's prompt form means "not given".
        return DEFAULT_USER
    user = value.strip()
    if len(user) > _MAX_USER_NAME or any(char in user for char in "\r\n"):
        raise InvalidInputError(
            "arguments.user", f"a user name is one line of at most {_MAX_USER_NAME} characters; send the name alone."
        )
    return user


def _bullets(*lines: str) -> list[str]:
    # A line whose tools are all unlisted was given as "" and is left out.
    return [f"   - {line}" for line in lines if line]


def _with(tools: str, text: str, end: str = ".") -> str:
    """`text`, then the tools that do it in brackets when there are any, then `end`."""
    return f"{text} ({tools}){end}" if tools else f"{text}{end}"


def _memory_usage(listed: Collection[str]) -> str:
    lookup = name_tools(listed, "search_nodes", "open_nodes")
    writers = name_tools(listed, "create_entities", "create_relations", "add_observations", joiner="and")
    if "save_memory" in listed:
        save = "Save with save_memory: entities, their observations and their relations in one call."
    else:
        save = f"Save with {writers}." if writers else ""
    correct = (
        "When information changes, correct the old observation instead of adding a contradicting one "
        "(add_observations with supersedes)."
        if "add_observations" in listed
        else "When information changes, replace the old observation instead of adding a contradicting one."
    )
    lines = [
        "Follow these steps for each interaction:",
        "",
        "1. Memory retrieval",
        *_bullets(
            _with(lookup, "Always begin by retrieving what memory holds about the topic"),
            _with(
                name_tools(listed, "list_entity_types", "list_relation_types", joiner="and"),
                "Note the entity and relation types already in use, and reuse them",
            )
            if "list_entity_types" in listed or "list_relation_types" in listed
            else "",
            "Use read_graph for the whole picture when needed, a page at a time (limit and offset)."
            if "read_graph" in listed
            else "",
        ),
        "",
        "2. Memory storage",
        *_bullets(
            "After each interaction, identify the key facts, preferences and relationships.",
            "Create entities for people, organisations, concepts and events; look each one up first, "
            "so nothing is saved twice.",
            "Connect entities with relations in active voice (works_at, not employed_by); every new entity "
            "gets at least one.",
            "Add observations for specific facts and details: one fact per observation.",
            save,
            correct,
        ),
        "",
        "3. Memory maintenance",
        *_bullets(
            _with(
                name_tools(listed, "delete_observations", "delete_relations", "delete_entities"),
                "Remove outdated or incorrect information",
            ),
            _with(
                name_tools(listed, "merge_entities"),
                "Merge entities that turn out to be the same thing",
            )
            if "merge_entities" in listed
            else "",
            "Consolidate related observations when an entity grows large.",
        ),
    ]
    return "\n".join(lines)


def _chat_personalization(user: str, listed: Collection[str]) -> str:
    lookup = name_tools(listed, "open_nodes", "search_nodes")
    save = name_tools(listed, "save_memory") or name_tools(
        listed, "create_entities", "create_relations", "add_observations", joiner="and"
    )
    lines = [
        "Follow these steps for each interaction:",
        "",
        "1. User identification",
        *_bullets(
            f"Assume you are talking with {user}.",
            f"If you have not identified {user} yet, proactively try to do so.",
        ),
        "",
        "2. Memory retrieval",
        *_bullets(
            _with(
                lookup,
                f'Always begin your chat by saying only "Remembering..." and retrieve all relevant '
                f"information about {user} from your knowledge graph",
            ),
            'Always refer to your knowledge graph as your "memory".',
        ),
        "",
        "3. Memory",
        *_bullets(
            "While conversing with the user, be attentive to any new information that falls into these categories:"
        ),
        "     a) Basic identity (age, gender, location, job title, education level, etc.)",
        "     b) Behaviours (interests, habits, etc.)",
        "     c) Preferences (communication style, preferred language, etc.)",
        "     d) Goals (goals, targets, aspirations, etc.)",
        "     e) Relationships (personal and professional relationships up to 3 degrees of separation)",
        "",
        "4. Memory update",
        *_bullets(_with(save, "If any new information was gathered during the interaction, update your memory", ":")),
        "     a) Create entities for recurring organisations, people and significant events.",
        f"     b) Connect them to {user} and the other current entities with relations.",
        "     c) Store facts about them as observations, one fact per observation.",
    ]
    return "\n".join(lines)
