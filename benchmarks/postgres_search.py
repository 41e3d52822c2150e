"""Reads, searches and the explorer's reads on PostgreSQL beside SQLite, on one 40,000-entity memory, in process.

    python -m benchmarks.postgres_search                  # 40,000 entities, 30 calls each
    python -m benchmarks.postgres_search --size 10000 --repeats 50
    python -m benchmarks.postgres_search --database postgresql://me@host/empty_db

The memory is `benchmarks.graphs.generate` (entities `entity-N`, three facts of six words
from a 46-word vocabulary each, so every word is in about a third of the entities, and a
tag `#N-k`). It is loaded into a throw-away PostgreSQL server (tests/helpers_postgres.py;
`--database` names an empty database instead) and into a SQLite file, both with the
store's bulk insert, and the same calls are timed on each through `KnowledgeGraph`, search
by meaning off. Each call names another entity or letter case, so no answer kept from an
earlier call is reused. Prints the median and p95 of each, in milliseconds.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks.graphs import generate
from graphmem.config import Settings
from graphmem.domain.graph import KnowledgeGraph
from graphmem.explorer.views import neighbours, overview
from graphmem.storage import open_store


def _cases(size: int) -> list[tuple[str, Callable[[KnowledgeGraph, int], Any]]]:
    """(label, call(graph, i)) of every timed case; `i` varies the call."""

    def entity(i: int) -> str:
        return f"entity-{(i * 7919) % size}"

    def cased(text: str, i: int) -> str:
        return "".join(c.upper() if (i >> n) & 1 else c for n, c in enumerate(text))

    return [
        ("open_nodes 1", lambda g, i: g.open_nodes([entity(i)])),
        ("search name", lambda g, i: g.search_page(entity(i), load_at_most=200)),
        ("search tag, limit 10", lambda g, i: g.search_page(f"#{(i * 7919) % size}-1", limit=10)),
        ("search 'coffee engineer'", lambda g, i: g.search_page(cased("coffee engineer", i), load_at_most=200)),
        ("common word, limit 10", lambda g, i: g.search_page(cased("berlin", i), limit=10)),
        ("common word, no limit", lambda g, i: g.search_page(cased("berlin", i), load_at_most=200)),
        (
            "question, limit 10",
            lambda g, i: g.search_page(f"What does {entity(i)} know about coffee in berlin?", limit=10),
        ),
        (
            "question, limit 100",
            lambda g, i: g.search_page(f"What does {entity(i)} know about coffee in berlin?", limit=100),
        ),
        # What the explorer asks first on every visit (the memory's counts, types and hubs).
        ("explorer overview", lambda g, i: overview(g)),
        ("explorer neighbours", lambda g, i: neighbours(g, entity(i), None, 0, 25)),
    ]


def _time(call: Callable[[int], Any], repeats: int) -> tuple[float, float]:
    call(-1)  # warm up: statistics, caches, plans
    samples = []
    for i in range(repeats):
        started = time.perf_counter()
        call(i)
        samples.append((time.perf_counter() - started) * 1000)
    ordered = sorted(samples)
    return statistics.median(samples), ordered[round(0.95 * (len(ordered) - 1))]


def _load(settings: Settings, size: int) -> float:
    entities, relations = generate(size)
    store = open_store(settings)
    started = time.perf_counter()
    with store.write(), store.bulk_insert():
        store.insert_entities(entities)
        store.insert_relations(relations)
    seconds = time.perf_counter() - started
    store.close()
    return seconds


@contextmanager
def _database(url: str | None) -> Iterator[str]:
    if url is not None:
        yield url
        return
    from tests.helpers_postgres import running_postgres

    with running_postgres() as server:
        yield server.create_database("pgsearch")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=40_000)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--database", metavar="URL", help="an empty PostgreSQL database instead of a throw-away server")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="graphmem-pgsearch-") as folder, _database(args.database) as url:
        backends = {
            "SQLite": Settings(memory_path=Path(folder) / "memory.db", semantic=False),
            "PostgreSQL": Settings(database_url=url, semantic=False),
        }
        figures: dict[str, dict[str, tuple[float, float]]] = {}
        for label, settings in backends.items():
            seconds = _load(settings, args.size)
            print(f"{label}: {args.size:,} entities loaded in {seconds:.1f} s", flush=True)
            store = open_store(settings)
            graph = KnowledgeGraph(store)
            figures[label] = {
                name: _time(lambda i, c=call, g=graph: c(g, i), args.repeats) for name, call in _cases(args.size)
            }
            store.close()
    print(f"\n{args.size:,} entities, {args.repeats} calls each, in process (ms, median / p95)")
    print(f"{'':<28}" + "".join(f"{label:>22}" for label in backends))
    for name, _ in _cases(args.size):
        cells = "".join(f"{figures[label][name][0]:>12.2f} / {figures[label][name][1]:<7.2f}" for label in backends)
        print(f"{name:<28}{cells}")


if __name__ == "__main__":
    main()
