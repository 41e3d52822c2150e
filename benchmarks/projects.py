"""A search in one project of a large memory, beside the same search in a memory of that project alone.

    python -m benchmarks.projects --entities 1000000 --project-entities 2000 --folder /tmp/bench-projects

Two SQLite memories from `benchmarks.zipf_memory` (a generator apart from the test suite's):
`large` holds N entities, the first `--project-entities` of them in project `mine` and the rest
spread over 20 other projects; `alone` holds only `mine`'s entities (and their relations).
Each query is asked in project `mine` of both, by words (`mode: lexical`: embedding a million
entities takes days here), through `KnowledgeGraph.search_nodes` in process: kinds of query
drawn from `mine`'s own facts (a rare word, a common word, two words, a question of four),
each asked `--repeats` times, median and p95 per kind. The memories are kept in the folder and
reused when the command runs again with the same sizes.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from benchmarks.zipf_memory import FUNCTION_WORDS, lines
from graphmem.core.models import Entity, Relation
from graphmem.core.projects import Scope
from graphmem.domain.graph import KnowledgeGraph
from graphmem.storage.sqlite import SQLiteStore

MINE = Scope("github.com/acme/mine")
CHUNK = 20_000
OTHER_PROJECTS = 20


def _records(entities: int, mine: int, alone: bool) -> Iterator[Entity | Relation]:
    """The generator's entities and relations, each in its project (or only `mine`'s, `alone`)."""
    project_of: dict[str, str] = {}
    for line in lines(entities):
        record = json.loads(line)
        if record["type"] == "entity":
            index = len(project_of)
            project = MINE.home if index < mine else f"other-{index % OTHER_PROJECTS}"
            project_of[record["name"]] = project
            if alone and project != MINE.home:
                continue
            yield Entity(record["name"], record["entityType"], tuple(record["observations"]), project=project)
        else:
            project = project_of.get(record["from"], "other-0")
            if alone and project != MINE.home:
                continue
            yield Relation(record["from"], record["to"], record["relationType"], project=project)


def build(path: Path, entities: int, mine: int, alone: bool) -> None:
    """Write the memory at `path` in bulk (nothing embedded)."""
    store = SQLiteStore(path)
    started = time.monotonic()
    try:
        batch_entities: list[Entity] = []
        batch_relations: list[Relation] = []

        def flush() -> None:
            with store.write(), store.bulk_insert():
                store.insert_entities(batch_entities)
                store.insert_relations(batch_relations)
            batch_entities.clear()
            batch_relations.clear()

        for record in _records(entities, mine, alone):
            (batch_entities if isinstance(record, Entity) else batch_relations).append(record)
            if len(batch_entities) + len(batch_relations) >= CHUNK:
                flush()
        flush()
    finally:
        store.close()
    print(f"  built {path.name} in {time.monotonic() - started:.0f} s", file=sys.stderr)


def queries(graph: KnowledgeGraph, rng: random.Random, per_kind: int) -> dict[str, list[str]]:
    """Queries drawn from `mine`'s facts, by kind."""
    with graph.working_in(MINE):
        facts = [fact for entity in graph.read_graph().entities for fact in entity.observations]
    words = Counter(word for fact in facts for word in fact.split() if word not in FUNCTION_WORDS)
    ranked = [word for word, _ in words.most_common()]
    common, rare = ranked[:50], [word for word, count in words.items() if count == 1]
    content = [[word for word in fact.split() if word not in FUNCTION_WORDS] for fact in facts]
    content = [words_of for words_of in content if len(words_of) >= 4]
    return {
        "rare word": rng.sample(rare, per_kind),
        "common word": rng.sample(common, per_kind),
        "two words": [" ".join(rng.sample(rng.choice(content), 2)) for _ in range(per_kind)],
        "question of four": [f"who {' '.join(rng.sample(rng.choice(content), 4))}?" for _ in range(per_kind)],
    }


def timed(graph: KnowledgeGraph, asked: list[str], repeats: int) -> list[float]:
    """Milliseconds of each search (every query, `repeats` times), in project `mine`."""
    took = []
    with graph.working_in(MINE):
        for _ in range(repeats):
            for query in asked:
                started = time.perf_counter()
                graph.search_nodes(query, limit=10, mode="lexical")
                took.append((time.perf_counter() - started) * 1000)
    return took


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.projects", description=__doc__)
    parser.add_argument("--entities", type=int, default=1_000_000)
    parser.add_argument("--project-entities", type=int, default=2_000)
    parser.add_argument("--folder", type=Path, default=Path("/tmp/bench-projects"))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--per-kind", type=int, default=20)
    args = parser.parse_args(argv)
    args.folder.mkdir(parents=True, exist_ok=True)
    paths = {
        "large": args.folder / f"large-{args.entities}-{args.project_entities}.db",
        "alone": args.folder / f"alone-{args.entities}-{args.project_entities}.db",
    }
    for name, path in paths.items():
        if not path.exists():
            build(path, args.entities, args.project_entities, alone=name == "alone")
    graphs = {name: KnowledgeGraph(SQLiteStore(path)) for name, path in paths.items()}
    try:
        asked = queries(graphs["alone"], random.Random(5), args.per_kind)
        for graph in graphs.values():
            timed(graph, [query for kind in asked.values() for query in kind], 1)  # warm the caches
        print(f"search_nodes (lexical, limit 10) in project mine ({args.project_entities:,} entities), ms")
        print(f"{'kind':<18} {'alone: median':>14} {'p95':>7}   {'in ' + f'{args.entities:,}':>14} {'p95':>7}")
        for kind, kind_queries in asked.items():
            row = []
            for name in ("alone", "large"):
                took = timed(graphs[name], kind_queries, args.repeats)
                row += [statistics.median(took), statistics.quantiles(took, n=20)[-1]]
            print(f"{kind:<18} {row[0]:>14.2f} {row[1]:>7.2f}   {row[2]:>14.2f} {row[3]:>7.2f}")
    finally:
        for graph in graphs.values():
            graph.store.close()


if __name__ == "__main__":
    main()
