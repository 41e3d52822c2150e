"""What the checks made at write time cost (docs/clean-memory.md): each write with them and
without, on a large SQLite memory.

    python -m benchmarks.clean_writes                   # 40,000 entities, 120,000 relations
    python -m benchmarks.clean_writes --size 10000 --repeats 100

Two copies of the memory `benchmarks.tools` builds (and caches). Each write is made as a tool
call makes it (the arguments cleaned of secrets, then the tool run) on one copy with the checks
(`--secrets redact`, the default) and on the other without (`--secrets allow`), in alternating
batches. The facts are ordinary sentences of the search quality set, so the checks read what
an agent writes, not a word. Median and p95 in ms of:

- `add_observations` of one fact to one entity;
- `create_entities` of one entity with three facts;
- `create_entities` of a batch of 100 entities with three facts each.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.retrieval.sets import load_quality
from benchmarks.tools import _memory, _name
from graphmem.config import Settings
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.secret_policy import clean_arguments
from graphmem.storage import open_store
from graphmem.tools import ALL_TOOLS, ToolContext

BATCH = 10
ARMS = ("with the checks", "without")


def _facts() -> list[str]:
    return [fact for memory in load_quality().memories for entity in memory.entities for fact in entity.observations]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.clean_writes", description=__doc__)
    parser.add_argument("--size", type=int, default=40_000)
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args(argv)
    facts = _facts()
    source = _memory(args.size)
    specs = {spec.name: spec for spec in ALL_TOOLS}

    def fact(i: int) -> str:
        return f"{facts[i % len(facts)]} ({i})"

    writes: dict[str, tuple[str, Callable[[int], dict[str, Any]], int]] = {
        "add_observations, one fact": (
            "add_observations",
            lambda i: {"observations": [{"entityName": _name(i, args.size), "contents": [fact(i)]}]},
            args.repeats,
        ),
        "create_entities, one entity": (
            "create_entities",
            lambda i: {
                "entities": [
                    {"name": f"clean-{i}", "entityType": "person", "observations": [fact(i + k) for k in range(3)]}
                ]
            },
            args.repeats,
        ),
        "create_entities, 100 entities": (
            "create_entities",
            lambda i: {
                "entities": [
                    {
                        "name": f"batch-{i}-{j}",
                        "entityType": "person",
                        "observations": [fact(i + j + k) for k in range(3)],
                    }
                    for j in range(100)
                ]
            },
            max(10, args.repeats // 10),
        ),
    }
    with tempfile.TemporaryDirectory() as folder:
        graphs: dict[str, KnowledgeGraph] = {}
        for arm in ARMS:
            path = Path(folder) / f"{arm.replace(' ', '-')}.db"
            shutil.copy(source, path)
            graphs[arm] = KnowledgeGraph(open_store(Settings(memory_path=path, semantic=False)))
            graphs[arm].secrets = "redact" if arm == ARMS[0] else "allow"
        took: dict[tuple[str, str], list[float]] = {}
        for what, (tool, sample, repeats) in writes.items():
            spec = specs[tool]
            for start in range(0, repeats, BATCH):
                for arm, graph in graphs.items():
                    ctx = ToolContext(graph)
                    for i in range(start, min(repeats, start + BATCH)):
                        began = time.perf_counter()
                        # As server/tool_calls.py runs a call: the arguments cleaned, then the
                        # tool run without looking at its texts again.
                        arguments, _ = clean_arguments(sample(i), graph.secrets)
                        with graph.texts_checked():
                            spec.run(ctx, spec.arguments.model_validate(arguments))
                        took.setdefault((what, arm), []).append((time.perf_counter() - began) * 1000)
        for graph in graphs.values():
            graph.store.close()
    print(f"writes on {args.size:,} entities (SQLite), ms: median / p95")
    print(f"| write | {ARMS[0]} | {ARMS[1]} |\n|---|---|---|")
    for what in writes:
        cells = []
        for arm in ARMS:
            values = took[what, arm]
            cells.append(f"{statistics.median(values):.2f} / {statistics.quantiles(values, n=20)[-1]:.2f}")
        print(f"| {what} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
