"""How well graphmem names duplicates (core/names.py, domain/duplicates.py), and what it costs.

    python -m benchmarks.duplicates                   # the sets, and a 40,000-entity memory
    python -m benchmarks.duplicates --size 10000

- Precision and recall on tests/fixtures/clean/duplicates.json: pairs of real names with types,
  true (nicknames, initials, suffixes, accents, acronyms, typos) and false (namesakes, given
  names a letter apart, one name of different types, products of one maker, versions).
- Pairs named among the entities of the search quality and meaning sets, each one a distinct
  thing: every pair named is printed, to be read.
- On a copy of the memory `benchmarks.tools` builds (SQLite): building the name index once, and
  `create_entities` of one entity with the check and what the check alone costs, median / p95.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.retrieval.sets import load_meaning, load_quality
from benchmarks.tools import _memory
from graphmem.config import Settings
from graphmem.core.models import Entity
from graphmem.core.names import same_thing, types_agree
from graphmem.domain.duplicates import duplicates_of, find_duplicates, name_index
from graphmem.domain.graph import KnowledgeGraph
from graphmem.storage import open_store

PAIRS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "clean" / "duplicates.json"


def _pairs() -> None:
    pairs = json.loads(PAIRS.read_text(encoding="utf-8"))["pairs"]
    named = [
        (pair, same_thing(pair["name"], pair["existing"]) if types_agree(pair["type"], pair["existingType"]) else None)
        for pair in pairs
    ]
    right = sum(1 for pair, why in named if why and pair["same"])
    said = sum(1 for _, why in named if why)
    truly = sum(1 for pair in pairs if pair["same"])
    print(f"Name pairs: {len(pairs)} ({truly} the same thing): precision {right}/{said}, recall {right}/{truly}")
    for pair, why in named:
        if bool(why) != pair["same"]:
            print(f"  {'missed' if pair['same'] else 'wrongly named'}: {pair['name']!r} / {pair['existing']!r}")


def _sets() -> None:
    for load in (load_quality, load_meaning):
        evaluation = load()
        with tempfile.TemporaryDirectory() as folder:
            store = open_store(Settings(memory_path=Path(folder) / "memory.db", semantic=False))
            graph = KnowledgeGraph(store)
            entities = [entity for memory in evaluation.memories for entity in memory.entities]
            graph.import_graph(list({entity.name: entity for entity in entities}.values()), [])
            found = find_duplicates(graph)
            print(f"{evaluation.name} set: {len(found)} pairs named among {len(entities)} entities")
            for item in found:
                print(f"  {item.name!r} / {item.existing!r}: {item.why}")
            store.close()


def _cost(size: int, repeats: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "memory.db"
        shutil.copy(_memory(size), path)
        graph = KnowledgeGraph(open_store(Settings(memory_path=path, semantic=False)))
        started = time.perf_counter()
        name_index(graph).buckets(graph)  # built in the call (a create builds it on a thread of its own)
        built = (time.perf_counter() - started) * 1000
        checks, creates = [], []
        for i in range(repeats):
            entity = Entity(f"Roberta Quinn {i}", "person", ("fresh",))
            started = time.perf_counter()
            graph.create_entities([entity])
            between = time.perf_counter()
            duplicates_of(graph, [entity])
            ended = time.perf_counter()
            creates.append((ended - started) * 1000)
            checks.append((ended - between) * 1000)
        graph.store.close()

    def cell(values: list[float]) -> str:
        return f"{statistics.median(values):.3f} / {statistics.quantiles(values, n=20)[-1]:.3f}"

    print(f"\n{size:,} entities (SQLite): the name index built once in {built:.0f} ms")
    print(f"  create_entities of one entity with the check: {cell(creates)} ms; the check alone: {cell(checks)} ms")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.duplicates", description=__doc__)
    parser.add_argument("--size", type=int, default=40_000)
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args(argv)
    _pairs()
    _sets()
    _cost(args.size, args.repeats)


if __name__ == "__main__":
    main()
