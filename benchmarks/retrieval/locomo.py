"""LoCoMo, the public long-conversation memory benchmark, as graphmem memories.

The data (snap-research/locomo, `data/locomo10.json`: ten conversations of 19 to 32
sessions, 1,986 questions) is CC BY-NC: it is read from a path given on the command line
and never copied into this repository. Both of its published layouts are read: the list
in `locomo10.json` (`{"conversation": {...}, "qa": [...]}` per sample) and the older
`locomo10_v2/*.json` files (one conversation per file, sessions and `qa` at the top).

How the judges load a conversation is not published, so three plausible ways are here:

- `sessions`: one entity per session ("session 3", type "conversation session"); its
  first observation is the session's date, then one observation per turn, "Caroline: <text>";
- `turns`: one entity per turn, named by its dialog id ("D1:3", type "dialog turn"), with
  the observation "Caroline: <text>" (and the session date as a second one);
- `few-turns`: one entity per run of N consecutive turns of one session (3 unless told,
  the last run of a session shorter), named by the session and the turns' places in it
  ("session 3, turns 4-6", "session 3, turn 7"; type "conversation excerpt"): one
  observation per turn, "Caroline: <text>", then "Date: <session date>". This is how an
  outside harness loading LoCoMo through the official tools fills a memory (issue 28),
  between the other two in size.

Each question's evidence dialog ids become the entities that hold them; a question with
no evidence left (the adversarial category 5 sometimes, a few typos) is skipped.

Halves (`half`): "first" keeps the first half of the conversations in the order they are
read (file names in a folder, list order in a file; the first five of LoCoMo's ten),
"second" the rest, so a change can be tuned on one half and reported on the other.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.retrieval.sets import EvalSet, Memory, Question
from graphmem.core.models import Entity

__all__ = ["CATEGORIES", "HALVES", "LOADINGS", "TURNS_PER_ENTITY", "load_locomo"]

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
"""LoCoMo's category numbers, as its evaluation code and the papers that use it read them."""

LOADINGS = ("sessions", "turns", "few-turns")

TURNS_PER_ENTITY = 3
"""How many consecutive turns a `few-turns` entity holds, unless told otherwise."""

HALVES = ("all", "first", "second")

_DialogKey = tuple[int, int]
"""A dialog id read as (session, turn)."""

# Evidence ids are "D<session>:<turn>", with a few typos in the data ("D:11:26", "D30:05").
_DIALOG_ID = re.compile(r"D:?(\d+):(\d+)")


def _conversations(path: Path) -> Iterator[dict[str, Any]]:
    """Each conversation as {"conversation": sessions and speakers, "qa": questions}."""
    files = sorted(path.glob("*.json"), key=lambda file: file.name) if path.is_dir() else [path]
    for file in files:
        document = json.loads(file.read_text(encoding="utf-8"))
        for sample in document if isinstance(document, list) else [document]:
            yield sample if "conversation" in sample else {"conversation": sample, "qa": sample["qa"]}


def _sessions(conversation: dict[str, Any]) -> Iterator[tuple[int, str, list[dict[str, Any]]]]:
    """(number, date, turns) of each session, in order."""
    numbers = sorted(int(key.split("_")[1]) for key in conversation if re.fullmatch(r"session_\d+", key))
    for number in numbers:
        turns = conversation[f"session_{number}"]
        if turns:
            yield number, conversation.get(f"session_{number}_date_time", ""), turns


def _dialog_id(raw: str) -> _DialogKey | None:
    match = _DIALOG_ID.fullmatch(raw.strip())
    return (int(match[1]), int(match[2])) if match else None


def _excerpt_name(session: int, first: int, last: int) -> str:
    return f"session {session}, turn {first}" if first == last else f"session {session}, turns {first}-{last}"


def _entities(
    sample: dict[str, Any], loading: str, turns_per_entity: int
) -> tuple[list[Entity], dict[_DialogKey, str]]:
    """The conversation's entities, and the entity holding each dialog id."""
    entities: list[Entity] = []
    holder: dict[_DialogKey, str] = {}
    for number, date, turns in _sessions(sample["conversation"]):
        if loading == "sessions":
            name = f"session {number}"
            lines = [f"Date: {date}"] + [f"{turn['speaker']}: {turn['text']}" for turn in turns]
            entities.append(Entity(name, "conversation session", tuple(dict.fromkeys(lines))))
            holder.update({key: name for turn in turns if (key := _dialog_id(turn["dia_id"]))})
        elif loading == "few-turns":
            # Named by the turns' places in the session, not their dialog ids: a mistyped id
            # must not misname its neighbours (the ids still map the evidence).
            for start in range(0, len(turns), turns_per_entity):
                run = turns[start : start + turns_per_entity]
                name = _excerpt_name(number, start + 1, start + len(run))
                lines = [f"{turn['speaker']}: {turn['text']}" for turn in run] + [f"Date: {date}"]
                entities.append(Entity(name, "conversation excerpt", tuple(dict.fromkeys(lines))))
                holder.update({key: name for turn in run if (key := _dialog_id(turn["dia_id"])) and key not in holder})
        else:
            for turn in turns:
                key = _dialog_id(turn["dia_id"])
                if key is None or key in holder:
                    continue
                name = f"D{key[0]}:{key[1]}"
                holder[key] = name
                entities.append(Entity(name, "dialog turn", (f"{turn['speaker']}: {turn['text']}", f"Date: {date}")))
    return entities, holder


def _memory(sample: dict[str, Any], loading: str, turns_per_entity: int) -> Memory:
    entities, holder = _entities(sample, loading, turns_per_entity)
    questions = []
    for item in sample["qa"]:
        evidence = [holder[key] for raw in item.get("evidence", []) if (key := _dialog_id(raw)) and key in holder]
        if evidence:
            category = CATEGORIES.get(item["category"], str(item["category"]))
            questions.append(Question(item["question"], tuple(dict.fromkeys(evidence)), category))
    return Memory(tuple(entities), (), tuple(questions))


def _half(samples: list[dict[str, Any]], half: str) -> list[dict[str, Any]]:
    middle = (len(samples) + 1) // 2
    return samples[:middle] if half == "first" else samples[middle:] if half == "second" else samples


def load_locomo(
    path: Path,
    loading: str = "sessions",
    *,
    adversarial: bool = False,
    turns_per_entity: int = TURNS_PER_ENTITY,
    half: str = "all",
) -> EvalSet:
    """Every conversation of the file (or folder) at `path` as a memory, loaded the given way.

    Args:
        loading: "sessions", "turns" or "few-turns" (see the module docstring).
        adversarial: keep category 5, whose questions ask about things never said.
        turns_per_entity: how many consecutive turns a "few-turns" entity holds.
        half: "all", or "first" / "second" for the first or second half of the conversations.

    Raises:
        ValueError: an unknown loading or half, or fewer than one turn per entity.
    """
    if loading not in LOADINGS:
        raise ValueError(f"unknown loading {loading!r}; use one of {', '.join(LOADINGS)}")
    if half not in HALVES:
        raise ValueError(f"unknown half {half!r}; use one of {', '.join(HALVES)}")
    if turns_per_entity < 1:
        raise ValueError(f"turns per entity is {turns_per_entity}; give 1 or more")
    memories = []
    for sample in _half(list(_conversations(path)), half):
        memory = _memory(sample, loading, turns_per_entity)
        if not adversarial:
            kept = tuple(question for question in memory.questions if question.category != CATEGORIES[5])
            memory = Memory(memory.entities, memory.relations, kept)
        memories.append(memory)
    described = [loading]
    if loading == "few-turns":
        described.append(f"{turns_per_entity} turns per entity")
    if half != "all":
        described.append(f"{half} half")
    return EvalSet(f"locomo ({', '.join(described)})", tuple(memories))
