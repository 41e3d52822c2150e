"""How well graphmem finds secrets: what it misses of real formats, what it flags in ordinary
text, and what a check costs.

    python -m benchmarks.secrets                            # the sets in the repository
    python -m benchmarks.secrets --locomo /path/to/locomo10.json      # or its locomo10_v2 folder

- Recall: each text of `benchmarks.secret_samples.positives` (every format, three of each)
  must give exactly one secret of its kind.
- False positives: every text of the near misses (hashes, UUIDs, images, prose about keys),
  of the search evaluation sets (tests/fixtures/search: quality.json and meaning.json: names,
  types and facts) and, when given, of LoCoMo (every turn and question of its ten conversations) must give
  none. Each one found is printed.
- Cost: microseconds a text, median over the ordinary texts, and over the texts with a secret.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import Counter
from pathlib import Path

from benchmarks.retrieval.locomo import load_locomo
from benchmarks.retrieval.sets import EvalSet, load_meaning, load_quality
from benchmarks.secret_samples import near_misses, positives
from graphmem.core.secrets import find_secrets


def _texts(evaluation: EvalSet) -> list[str]:
    """Every name, type, fact and question of an evaluation set."""
    texts: list[str] = []
    for memory in evaluation.memories:
        for entity in memory.entities:
            texts += [entity.name, entity.entity_type, *entity.observations]
        texts += [question.text for question in memory.questions]
    return texts


def _microseconds(texts: list[str]) -> float:
    took = []
    for text in texts:
        start = time.perf_counter()
        find_secrets(text)
        took.append((time.perf_counter() - start) * 1e6)
    return statistics.median(took)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.secrets", description=__doc__)
    parser.add_argument("--locomo", type=Path, help="LoCoMo's locomo10.json (not in the repository)")
    args = parser.parse_args(argv)

    found_kinds: Counter[str] = Counter()
    missed: list[tuple[str, str, list[str]]] = []
    samples = list(positives())
    for kind, text in samples:
        kinds = [secret.kind for secret in find_secrets(text)]
        if kinds == [kind]:
            found_kinds[kind] += 1
        else:
            missed.append((kind, text, kinds))
    found = len(samples) - len(missed)
    print(f"Recall: {found} of {len(samples)} secrets found as their kind, {len(found_kinds)} kinds")
    for kind, text, kinds in missed:
        print(f"  missed {kind}: {text[:80]!r} -> {kinds}")

    ordinary: dict[str, list[str]] = {
        "near misses": list(near_misses()),
        "quality set": _texts(load_quality()),
        "meaning set": _texts(load_meaning()),
    }
    if args.locomo is not None:
        ordinary["LoCoMo"] = _texts(load_locomo(args.locomo, "turns", adversarial=True))
    print("\nFalse positives:")
    for name, texts in ordinary.items():
        flagged = [(text, find_secrets(text)) for text in texts]
        flagged = [(text, secrets) for text, secrets in flagged if secrets]
        print(f"  {name}: {len(flagged)} of {len(texts):,} texts")
        for text, secrets in flagged:
            print(f"    {[(s.kind, text[s.start : s.end]) for s in secrets]} in {text[:100]!r}")

    every = [text for texts in ordinary.values() for text in texts]
    print(f"\nCost: {_microseconds(every):.1f} us a text without a secret (median of {len(every):,}), ", end="")
    print(f"{_microseconds([text for _, text in samples]):.1f} us a text with one (median of {len(samples)})")


if __name__ == "__main__":
    main()
