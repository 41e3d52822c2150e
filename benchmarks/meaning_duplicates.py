"""Whether the meaning of names and facts (the embedding model's vectors) could name duplicates
that spelling cannot, at the precision the name rules keep (docs/clean-memory.md).

    python -m benchmarks.meaning_duplicates

The set, tests/fixtures/clean/meaning_duplicates.json, is 100 pairs of entities with their facts,
as an agent writes them in two conversations: 50 one thing under names no spelling rule links
("Postgres" / "PostgreSQL", "Köln" / "Cologne", "my manager Sarah" / "Sarah Chen"), 50 two things
alike in name or facts (competitors, versions, colleagues on one team, two cities of one name).
It was written for this measure by a helper that had not seen the rules.

Each entity is embedded as graphmem embeds it (its name; each fact), and each pair scored by:

- name: the cosine of the two names' vectors;
- facts: how well each fact finds a match among the other's (the mean of the best cosines, both ways);
- whole: the cosine of "name: fact; fact" embedded as one text.

A rule names a pair when every score is at or above its threshold, and never when the names hold
different numbers (versions). Thresholds are chosen on the even-numbered pairs (the most true pairs
named with none false; a tie goes to the higher thresholds) and the figures reported on the odd
ones, which the choice never saw. The name rules' own result on the set is printed beside.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass
from pathlib import Path

PAIRS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "clean" / "meaning_duplicates.json"
_STEPS = [step / 20 for step in range(20)]
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


@dataclass(frozen=True)
class _Scored:
    existing: str
    new: str
    same: bool
    name: float
    facts: float
    whole: float

    def numbers_differ(self) -> bool:
        one, other = set(_NUMBER.findall(self.existing)), set(_NUMBER.findall(self.new))
        return bool(one and other and one != other)


def _scored() -> list[_Scored]:
    from graphmem.embedding import load_embedder

    model = load_embedder()
    scored = []
    for pair in json.loads(PAIRS.read_text(encoding="utf-8"))["pairs"]:
        one, other = pair["existing"], pair["new"]
        names = model.embed([one["name"], other["name"]])
        facts_one, facts_other = model.embed(one["facts"]), model.embed(other["facts"])
        cross = facts_one @ facts_other.T
        wholes = model.embed([f"{side['name']}: {'; '.join(side['facts'])}" for side in (one, other)])
        scored.append(
            _Scored(
                one["name"],
                other["name"],
                bool(pair["same"]),
                float(names[0] @ names[1]),
                float((cross.max(axis=1).mean() + cross.max(axis=0).mean()) / 2),
                float(wholes[0] @ wholes[1]),
            )
        )
    return scored


def _named(pairs: list[_Scored], thresholds: tuple[float, float, float]) -> list[_Scored]:
    name, facts, whole = thresholds
    return [
        pair
        for pair in pairs
        if pair.name >= name and pair.facts >= facts and pair.whole >= whole and not pair.numbers_differ()
    ]


def _tuned(pairs: list[_Scored]) -> tuple[float, float, float]:
    def merit(thresholds: tuple[float, float, float]) -> tuple[bool, int, tuple[float, float, float]]:
        named = _named(pairs, thresholds)
        return (all(pair.same for pair in named), sum(pair.same for pair in named), thresholds)

    return max(itertools.product(_STEPS, _STEPS, _STEPS), key=merit)


def _name_rules() -> None:
    from graphmem.core.names import same_thing, types_agree

    pairs = json.loads(PAIRS.read_text(encoding="utf-8"))["pairs"]
    named = [
        pair
        for pair in pairs
        if types_agree(pair["new"]["type"], pair["existing"]["type"])
        and same_thing(pair["new"]["name"], pair["existing"]["name"])
    ]
    right = sum(pair["same"] for pair in named)
    print(f"the name rules on the set: {len(named)} named, {right} of them one thing (of 50)")


def main() -> None:
    _name_rules()
    scored = _scored()
    tune, held_out = scored[0::2], scored[1::2]
    thresholds = _tuned(tune)
    print("thresholds chosen on the even pairs: name >= {:.2f}, facts >= {:.2f}, whole >= {:.2f}".format(*thresholds))
    for label, pairs in (("even (tuned on)", tune), ("odd (held out)", held_out)):
        named = _named(pairs, thresholds)
        right = sum(pair.same for pair in named)
        truly = sum(pair.same for pair in pairs)
        print(f"{label}: named {len(named)}, {right} of them one thing; recall {right}/{truly}")
        for pair in named:
            print(f"    {'one thing' if pair.same else 'TWO THINGS'}: {pair.existing!r} / {pair.new!r}")
    print("the highest-scoring pairs of two things, by each score:")
    for score in ("name", "facts", "whole"):
        worst = max((pair for pair in scored if not pair.same), key=lambda pair: getattr(pair, score))
        above = sum(1 for pair in scored if pair.same and getattr(pair, score) > getattr(worst, score))
        print(
            f"    {score}: {worst.existing!r} / {worst.new!r} at {getattr(worst, score):.2f};"
            f" {above} of 50 true pairs score above it"
        )


if __name__ == "__main__":
    main()
