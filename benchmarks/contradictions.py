"""How well graphmem names contradictions at write time (core/contradictions.py).

    python -m benchmarks.contradictions
    python -m benchmarks.contradictions --locomo /path/to/locomo10.json     # or its locomo10_v2 folder

- Precision and recall on the hand-written pairs of tests/fixtures/clean/contradictions.json
  (facts of one entity: true contradictions of each rule, and pairs that share words, numbers
  or an attribute's start without contradicting).
- Flags on real memories, where one entity's facts were written to be true together: every
  ordered pair of facts of each entity of the search quality and meaning sets, and, when given,
  of each LoCoMo session (its turns as the facts of one entity). Each flag is printed, to be read:
  most are false positives.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path

from benchmarks.retrieval.locomo import load_locomo
from benchmarks.retrieval.sets import EvalSet, load_meaning, load_quality
from graphmem.core.contradictions import contradiction

PAIRS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "clean" / "contradictions.json"


def _entities(evaluation: EvalSet) -> list[tuple[str, ...]]:
    return [entity.observations for memory in evaluation.memories for entity in memory.entities]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.contradictions", description=__doc__)
    parser.add_argument("--locomo", type=Path, help="LoCoMo's locomo10.json (not in the repository)")
    args = parser.parse_args(argv)
    pairs = json.loads(PAIRS.read_text(encoding="utf-8"))["pairs"]
    found = [(pair, contradiction(pair["new"], pair["current"])) for pair in pairs]
    true_positives = sum(1 for pair, why in found if why and pair["contradicts"])
    flagged = sum(1 for _, why in found if why)
    truly = sum(1 for pair in pairs if pair["contradicts"])
    print(f"Hand-written pairs: {len(pairs)} ({truly} contradictions)")
    print(f"  precision {true_positives}/{flagged}, recall {true_positives}/{truly}")
    for pair, why in found:
        if bool(why) != pair["contradicts"]:
            print(f"  {'missed' if pair['contradicts'] else 'wrongly named'}: {pair['new']!r} / {pair['current']!r}")

    sets = {"quality set": _entities(load_quality()), "meaning set": _entities(load_meaning())}
    if args.locomo is not None:
        sets["LoCoMo sessions"] = _entities(load_locomo(args.locomo, "sessions"))
    print("\nFlags among facts written to be true together (every ordered pair of one entity's facts):")
    took = 0.0
    checked = 0
    for name, entities in sets.items():
        count = 0
        shown = []
        for facts in entities:
            for new, current in itertools.permutations(facts, 2):
                start = time.perf_counter()
                why = contradiction(new, current)
                took += time.perf_counter() - start
                checked += 1
                count += 1
                if why:
                    shown.append((why, new, current))
        print(f"  {name}: {len(shown)} of {count:,} pairs")
        for why, new, current in shown:
            print(f"    {why.rule} ({why.about}): {new[:70]!r} / {current[:70]!r}")
    print(f"\nCost: {took / checked * 1e6:.1f} us a pair (mean of {checked:,})")
    # A write's cost: one new fact against an entity's 100 current facts, as plan_observations
    # checks it, the new fact's words read for the first time.
    facts = [fact for facts in sets["quality set"] for fact in facts][:100]
    timings = []
    for index in range(200):
        new = f"Works at company number {index} in town"
        start = time.perf_counter()
        for current in facts:
            contradiction(new, current)
        timings.append((time.perf_counter() - start) * 1000)
    timings.sort()
    print(f"A new fact against 100 current facts: {timings[len(timings) // 2]:.3f} ms median, {timings[189]:.3f} p95")


if __name__ == "__main__":
    main()
