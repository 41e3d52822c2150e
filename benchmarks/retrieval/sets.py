"""Evaluation sets: memories, the questions asked of them, and the entities that answer each."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphmem.core.models import Entity, Relation

__all__ = ["FIXTURES", "EvalSet", "Memory", "Question", "load_fixture_set", "load_meaning", "load_quality"]

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "search"
"""Where the hand-written sets live: meaning.json (this evaluation's) and quality.json (the lexical one)."""


@dataclass(frozen=True, slots=True)
class Question:
    """One question, the names of the entities that hold its answer, and its category."""

    text: str
    answers: tuple[str, ...]
    category: str


@dataclass(frozen=True, slots=True)
class Memory:
    """One memory to load, and the questions asked of it."""

    entities: tuple[Entity, ...]
    relations: tuple[Relation, ...]
    questions: tuple[Question, ...]


@dataclass(frozen=True, slots=True)
class EvalSet:
    """A named evaluation: one or more memories (LoCoMo has one per conversation)."""

    name: str
    memories: tuple[Memory, ...]


def _entity(item: dict[str, Any]) -> Entity:
    extra = {"aliases": item["aliases"]} if item.get("aliases") else None
    return Entity(item["name"], item["entityType"], tuple(item["observations"]), extra)


def load_fixture_set(path: Path, name: str, category: str | None = None) -> EvalSet:
    """A set in the fixtures' format: entities, relations, and questions with their answers.

    Args:
        category: the category of every question, for a file whose questions have none.
    """
    document = json.loads(path.read_text(encoding="utf-8"))
    questions = tuple(
        Question(item["question"], tuple(item["answers"]), category or item["category"])
        for item in document["questions"]
    )
    memory = Memory(
        tuple(_entity(item) for item in document["entities"]),
        tuple(Relation(item["from"], item["to"], item["relationType"]) for item in document["relations"]),
        questions,
    )
    return EvalSet(name, (memory,))


def load_meaning(path: Path | None = None) -> EvalSet:
    """The hand-written set for search by meaning (categories paraphrase ... lexical)."""
    return load_fixture_set(path or FIXTURES / "meaning.json", "meaning")


def load_quality(path: Path | None = None) -> EvalSet:
    """The lexical retrieval-quality set of tests/test_search_quality.py, as category `quality`."""
    return load_fixture_set(path or FIXTURES / "quality.json", "quality", category="quality")
