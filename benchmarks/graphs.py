"""The generated graphs every benchmark runs on.

Each entity has a type, three observations of six words from a small vocabulary plus
a tag unique to it (`#1234-0`), and three outgoing relations of three different types
to random entities, so no relation repeats. The same seed gives the same graph.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from itertools import chain
from pathlib import Path

from graphmem.core.models import Entity, Relation
from graphmem.storage.jsonl.format import encode_entity, encode_relation

__all__ = ["VOCABULARY", "generate", "write_official_jsonl"]

VOCABULARY = (
    "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa "
    "quebec romeo sierra tango uniform victor whiskey xray yankee zulu project meeting design server "
    "database python coffee berlin paris tokyo engineer manager customer invoice release"
).split()
_TYPES = ("person", "organization", "project", "place", "concept")
_RELATIONS = ("knows", "works_at", "depends_on", "located_in", "manages")


def _entities(size: int, rng: random.Random) -> Iterator[Entity]:
    for index in range(size):
        yield Entity(
            f"entity-{index}",
            _TYPES[index % len(_TYPES)],
            tuple(" ".join(rng.choices(VOCABULARY, k=6)) + f" #{index}-{n}" for n in range(3)),
        )


def _relations(size: int, rng: random.Random) -> Iterator[Relation]:
    for index in range(size):
        for n in range(3):
            yield Relation(f"entity-{index}", f"entity-{rng.randrange(size)}", _RELATIONS[n])


def generate(size: int, seed: int = 7) -> tuple[list[Entity], list[Relation]]:
    """A graph of `size` entities with three observations and three outgoing relations each."""
    rng = random.Random(seed)
    entities = list(_entities(size, rng))
    return entities, list(_relations(size, rng))


def write_official_jsonl(path: Path, size: int, seed: int = 7) -> None:
    """Write `generate(size, seed)` as the official server's memory file, one item at a time.

    Streaming keeps a million-entity graph from holding gigabytes in the benchmark itself.
    """
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as out:
        first = True
        # Entities first, then relations, drawing on one random stream as generate() does.
        for line in chain(map(encode_entity, _entities(size, rng)), map(encode_relation, _relations(size, rng))):
            out.write(line if first else "\n" + line)
            first = False
