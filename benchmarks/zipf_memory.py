"""A memory of N entities whose facts draw their words from a Zipf vocabulary, as official JSONL.

    python -m benchmarks.zipf_memory --entities 1000000 --out /tmp/zipf-1m.jsonl
    graphmem import --no-semantic -f /tmp/zipf-1m.db /tmp/zipf-1m.jsonl

Independent of `benchmarks.graphs` (the suite's own generators), so search is not tuned
to the memory it is measured on. Each entity has a name built from syllables plus a
number (a person, a project or a place), one of 30 types, 1 to 12 facts (5.5 on
average), each fact 6 to 16 words; about two relations leave each entity. The words
of the facts come from a vocabulary of 50,000 generated words and 60 English function
words, the word of rank r drawn with probability proportional to 1 / r^1.1: a few words
are in most entities, most in a few hundred of a million. Deterministic by seed.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np

__all__ = ["FUNCTION_WORDS", "TYPES", "Vocabulary", "lines", "vocabulary"]

FUNCTION_WORDS = (
    "the of and to a in is was for on with as by at from that it be this are which an or not but had "
    "has have were been their its they he she his her after before over into about than when who "
    "also more most some all one two new other then there while during between under"
).split()

TYPES = (
    "person project place organization event document meeting product team device city country "
    "book tool language concept task goal decision issue server dataset model paper course recipe "
    "vehicle building animal plant song"
).split()

_RELATION_TYPES = (
    "knows works_on located_in part_of owns leads uses depends_on mentions created attended "
    "reports_to member_of visited wrote likes funds replaces follows related_to"
).split()

_ONSETS = "b c d f g h j k l m n p r s t v w z br cr dr fl gr kr pl pr sk st tr th sh ch".split()
_VOWELS = "a e i o u ai ea io ou y".split()
_CODAS = ["", "", "", "n", "r", "l", "s", "m", "x", "nd", "rt", "st"]

_ZIPF_S = 1.1
_WORDS = 50_000
_MEAN_FACTS = 5.5


def _syllable(rng: random.Random) -> str:
    return rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS)


def _generated_words(rng: random.Random, count: int) -> list[str]:
    """`count` distinct lower-case pronounceable words of 2 to 4 syllables."""
    words: dict[str, None] = {}
    function = set(FUNCTION_WORDS)
    while len(words) < count:
        word = "".join(_syllable(rng) for _ in range(rng.choice((2, 2, 3, 3, 3, 4))))
        if word not in function:
            words[word] = None
    return list(words)


class Vocabulary:
    """Words ranked by frequency, and a sampler of that Zipf distribution."""

    def __init__(self, words: list[str], s: float = _ZIPF_S) -> None:
        self.words = words
        weights = 1.0 / np.arange(1, len(words) + 1, dtype=np.float64) ** s
        self.cumulative = np.cumsum(weights / weights.sum())
        self.probability = weights / weights.sum()

    def draw(self, generator: np.random.Generator, count: int) -> np.ndarray:
        """The ranks (0-based) of `count` words drawn independently."""
        ranks: np.ndarray = np.searchsorted(self.cumulative, generator.random(count), side="right")
        return np.minimum(ranks, len(self.words) - 1)


def vocabulary(seed: int = 7) -> Vocabulary:
    """The ranked vocabulary of a seed: function words among the most frequent, then generated words."""
    rng = random.Random(seed)
    generated = _generated_words(rng, _WORDS)
    # The function words take most of the top ranks, a few generated words among them.
    top = FUNCTION_WORDS + generated[:20]
    rng.shuffle(top)
    return Vocabulary(top + generated[20:])


def _name(rng: random.Random, entity_type: str, number: int) -> str:
    syllables = "".join(_syllable(rng) for _ in range(rng.choice((2, 3)))).capitalize()
    if entity_type == "person":
        last = "".join(_syllable(rng) for _ in range(2)).capitalize()
        return f"{syllables} {last} {number}"
    if entity_type == "project":
        return f"Project {syllables}-{number}"
    return f"{syllables} {entity_type.capitalize()} {number}"


def lines(entities: int, seed: int = 7) -> Iterator[str]:
    """The JSONL lines of the memory: every entity, then every relation."""
    rng = random.Random(seed)
    generator = np.random.default_rng(seed)
    words = vocabulary(seed)
    names: list[str] = []
    chunk = 10_000
    for start in range(0, entities, chunk):
        size = min(chunk, entities - start)
        facts = np.clip(generator.poisson(_MEAN_FACTS - 1, size) + 1, 1, 12)
        lengths = generator.integers(6, 17, int(facts.sum()))
        ranks = words.draw(generator, int(lengths.sum()))
        position = 0
        fact = 0
        for offset in range(size):
            entity_type = TYPES[min(int(generator.zipf(1.5)) - 1, len(TYPES) - 1)]
            name = _name(rng, entity_type, start + offset)
            names.append(name)
            observations = []
            for _ in range(int(facts[offset])):
                length = int(lengths[fact])
                fact += 1
                text = " ".join(words.words[rank] for rank in ranks[position : position + length])
                position += length
                observations.append(text[0].upper() + text[1:])
            yield json.dumps({"type": "entity", "name": name, "entityType": entity_type, "observations": observations})
    for index, name in enumerate(names):
        for _ in range(rng.choice((1, 2, 2, 3))):
            other = rng.randrange(len(names))
            if other != index:
                relation = rng.choice(_RELATION_TYPES)
                yield json.dumps({"type": "relation", "from": name, "to": names[other], "relationType": relation})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entities", type=int, default=40_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, required=True, help="the JSONL file to write")
    args = parser.parse_args()
    with args.out.open("w", encoding="utf-8") as out:
        for line in lines(args.entities, args.seed):
            out.write(line + "\n")
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.0f} MB)", file=sys.stderr)


if __name__ == "__main__":
    main()
