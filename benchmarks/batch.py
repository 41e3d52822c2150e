"""Batch-write benchmark: writes of 100 items on a 40,000-entity memory, in process and over stdio.

    python -m benchmarks.batch                       # 40,000 entities, 30 calls per case
    python -m benchmarks.batch --size 10000 --repeats 50

It builds (once, cached under ~/.cache/graphmem-bench) a SQLite memory from the
generator of `benchmarks.run`, and times on a copy of it, after a few warm-up calls:

- in process, the graph's own calls (`KnowledgeGraph` on a `SQLiteStore`, no tool layer,
  no protocol): what the store and the domain cost, the commit's fsync included;
- over stdio, the same writes as tool calls to a real `graphmem` process (the graphmem on
  PYTHONPATH) through a raw JSON-RPC pipe: what a client waits for.

The difference between the two is the server's share: parsing and validating the
request, the answer's JSON, the SDK and the pipe. Every call writes something new (new
names, new facts, new relation types), so no call is a no-op; the deletes come last and
delete entities of the generated graph, each with its observations and relations.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

from benchmarks.client import PipeClient
from benchmarks.graphs import VOCABULARY, generate
from graphmem.config import Settings
from graphmem.core.models import Entity, ObservationAddition, Relation
from graphmem.domain.graph import KnowledgeGraph
from graphmem.storage import open_store
from graphmem.storage.sqlite.checkpoints import merge_text_indexes
from graphmem.storage.sqlite.schema import SCHEMA_VERSION, _migrations

CACHE = Path.home() / ".cache" / "graphmem-bench"
BATCH = 100


def _existing(j: int, size: int) -> str:
    # 7919 is prime and does not divide the sizes used: j -> name is one to one below `size`.
    return f"entity-{(j * 7919) % size}"


def _facts(i: int, k: int) -> list[str]:
    words = [VOCABULARY[(i * 7 + k * 3 + n) % len(VOCABULARY)] for n in range(6)]
    return [" ".join(words) + f" #batch-{i}-{k}-{n}" for n in range(3)]


# Each case: (label, arguments of the tool call number i, the same call on the graph).
Case = tuple[str, str, Callable[[int, int], dict[str, Any]], Callable[[KnowledgeGraph, int, int], object]]


def _cases(only: str | None = None) -> list[Case]:
    def new_entities(i: int, size: int) -> dict[str, Any]:
        return {
            "entities": [
                {"name": f"batch-{i}-{k}", "entityType": ("person", "project")[k % 2], "observations": _facts(i, k)}
                for k in range(BATCH)
            ]
        }

    def one_entity(i: int, size: int) -> dict[str, Any]:
        return {"entities": [{"name": f"single-{i}", "entityType": "person", "observations": ["fresh"]}]}

    def observations(i: int, size: int) -> dict[str, Any]:
        return {
            "observations": [
                {"entityName": _existing(i * BATCH + k, size), "contents": [f"added in call {i} #{k}"]}
                for k in range(BATCH)
            ]
        }

    def one_observation(i: int, size: int) -> dict[str, Any]:
        return {"observations": [{"entityName": _existing(i, size), "contents": [f"single fact {i}"]}]}

    def relations(i: int, size: int) -> dict[str, Any]:
        return {
            "relations": [
                {
                    "from": _existing(i * BATCH + k, size),
                    "to": _existing(i * BATCH + k + 1, size),
                    "relationType": f"b{i}",
                }
                for k in range(BATCH)
            ]
        }

    def deletions(i: int, size: int) -> dict[str, Any]:
        # Far from the entities the other cases touch (they use j below 100 * calls).
        return {"entityNames": [_existing(size // 2 + i * BATCH + k, size) for k in range(BATCH)]}

    def entities_of(arguments: dict[str, Any]) -> list[Entity]:
        return [Entity(e["name"], e["entityType"], tuple(e["observations"])) for e in arguments["entities"]]

    def additions_of(arguments: dict[str, Any]) -> list[ObservationAddition]:
        return [ObservationAddition(o["entityName"], tuple(o["contents"])) for o in arguments["observations"]]

    def relations_of(arguments: dict[str, Any]) -> list[Relation]:
        return [Relation(r["from"], r["to"], r["relationType"]) for r in arguments["relations"]]

    cases: list[Case] = [
        (
            "create_entities (100 new)",
            "create_entities",
            new_entities,
            lambda g, i, s: g.create_entities(entities_of(new_entities(i, s))),
        ),
        (
            "create_entities (1)",
            "create_entities",
            one_entity,
            lambda g, i, s: g.create_entities(entities_of(one_entity(i, s))),
        ),
        (
            "add_observations (100)",
            "add_observations",
            observations,
            lambda g, i, s: g.add_observations(additions_of(observations(i, s))),
        ),
        (
            "add_observations (1)",
            "add_observations",
            one_observation,
            lambda g, i, s: g.add_observations(additions_of(one_observation(i, s))),
        ),
        (
            "create_relations (100)",
            "create_relations",
            relations,
            lambda g, i, s: g.create_relations(relations_of(relations(i, s))),
        ),
        (
            "delete_entities (100)",
            "delete_entities",
            deletions,
            lambda g, i, s: g.delete_entities(deletions(i, s)["entityNames"]),
        ),
    ]
    return [case for case in cases if only is None or only in case[0]]


def _memory(size: int) -> Path:
    """The generated memory as a SQLite file, built once per size and schema (its migrations' digest)."""
    # The digest, not only the version: two branches may each have had a migration of the
    # same number, and a memory built by one is not the other's.
    digest = hashlib.sha256("".join(sql for _, sql in _migrations()).encode("utf-8")).hexdigest()[:8]
    path = CACHE / f"batch-{size}-v{SCHEMA_VERSION}-{digest}.db"
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        entities, relations = generate(size)
        building = path.with_suffix(f".building-{os.getpid()}")
        store = open_store(Settings(memory_path=building))
        KnowledgeGraph(store).import_graph(entities, relations)
        store.close()
        # As a server leaves it once the writes settle: its text indexes merged (the
        # import's many segments would otherwise be merged during the timed calls).
        with closing(sqlite3.connect(building, isolation_level=None)) as conn:
            while merge_text_indexes(conn):
                pass
        building.rename(path)
    return path


def _summary(seconds: list[float]) -> str:
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"{statistics.median(ordered) * 1000:>9.2f}{p95 * 1000:>9.2f}"


def in_process(db: Path, size: int, repeats: int, warm_up: int, only: str | None) -> dict[str, list[float]]:
    """Each case's seconds per call, `KnowledgeGraph` on a `SQLiteStore` of the file `db`."""
    store = open_store(Settings(memory_path=db))
    graph = KnowledgeGraph(store)
    timings: dict[str, list[float]] = {}
    for label, _, _, call in _cases(only):
        for i in range(repeats, repeats + warm_up):
            call(graph, i, size)
        for i in range(repeats):
            started = time.perf_counter()
            call(graph, i, size)
            timings.setdefault(label, []).append(time.perf_counter() - started)
    store.close()
    return timings


def over_stdio(db: Path, size: int, repeats: int, warm_up: int, only: str | None) -> dict[str, list[float]]:
    """Each case's seconds per tool call to a `graphmem` process serving the file `db`."""
    env = {key: os.environ[key] for key in ("PATH", "HOME", "PYTHONPATH") if key in os.environ}
    client = PipeClient([sys.executable, "-m", "graphmem"], {**env, "MEMORY_FILE_PATH": str(db)})
    timings: dict[str, list[float]] = {}
    try:
        for label, tool, arguments, _ in _cases(only):
            for i in range(repeats, repeats + warm_up):
                client.call(tool, arguments(i, size))
            for i in range(repeats):
                payload = arguments(i, size)
                started = time.perf_counter()
                client.call(tool, payload)
                timings.setdefault(label, []).append(client.answered_at - started)
    finally:
        client.close()
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=40_000)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--warm-up", type=int, default=3)
    parser.add_argument("--only", help="time only the cases whose label contains this text")
    options = parser.parse_args()
    source = _memory(options.size)
    print(f"{options.size:,} entities, {options.size * 3:,} relations; median and p95 of {options.repeats} calls (ms)")
    print(f"  {'':<28}{'in process':>18}{'over stdio':>18}")
    results = {}
    with tempfile.TemporaryDirectory(prefix="graphmem-batch-") as folder:
        # A fresh copy for each way of calling: both make the same changes.
        for where, run in (("process", in_process), ("stdio", over_stdio)):
            work = Path(folder) / f"{where}.db"
            shutil.copyfile(source, work)
            results[where] = run(work, options.size, options.repeats, options.warm_up, options.only)
    for label, _, _, _ in _cases(options.only):
        print(f"  {label:<28}{_summary(results['process'][label])}{_summary(results['stdio'][label])}")


if __name__ == "__main__":
    main()
