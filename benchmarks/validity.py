"""What facts that hold for a time cost, on a large SQLite memory.

    python -m benchmarks.validity                      # 40,000 entities, 1,000 of them timed
    python -m benchmarks.validity --size 10000 --timed 100

On a copy of the memory `benchmarks.tools` builds (and caches), `--timed` entities get a fact
that holds for a time (a `validFrom` and a `validUntil` an hour away). Then, median and p95 of:

- the check every call makes (`end_lapsed_facts` when no fact has ended: a row read at most
  once a second, so most calls read nothing);
- an `open_nodes` of one entity, plain and with `validAt`;
- a `search_nodes` by words, plain and with `validAt`;
- moving ended facts to the history: a fact of each timed entity ends, then one sweep.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.tools import _memory
from graphmem.config import Settings
from graphmem.core.models import ObservationAddition
from graphmem.domain.as_of import as_of
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.validity import end_lapsed_facts
from graphmem.storage import open_store


def _timed(repeats: int, call: Callable[[], object]) -> tuple[float, float]:
    took = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        took.append((time.perf_counter() - start) * 1000)
    took.sort()
    return statistics.median(took), took[int(len(took) * 0.95) - 1]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.validity", description=__doc__)
    parser.add_argument("--size", type=int, default=40_000)
    parser.add_argument("--timed", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args(argv)
    source = _memory(args.size)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "memory.db"
        shutil.copy(source, path)
        graph = KnowledgeGraph(open_store(Settings(memory_path=path, semantic=False)))
        with graph.store.read():
            names = [entity.name for _, entity in zip(range(args.timed), graph.store.iter_entities(), strict=False)]
        until = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
        graph.add_observations(
            [ObservationAddition(name, ("On a project until later",), (), None, "2020", until) for name in names]
        )
        one = names[0]

        def at(read: Callable[[], object]) -> Callable[[], object]:
            return lambda: as_of(graph, None, read, valid_at="2021-06")

        rows = [
            ("the check each call makes", _timed(args.repeats * 20, lambda: end_lapsed_facts(graph))),
            ("open_nodes of one entity", _timed(args.repeats, lambda: graph.open_nodes([one]))),
            ("the same with validAt", _timed(args.repeats, at(lambda: graph.open_nodes([one])))),
            ("search_nodes by words", _timed(args.repeats, lambda: graph.search_nodes("project later"))),
            ("the same with validAt", _timed(args.repeats, at(lambda: graph.search_nodes("project later")))),
        ]
        # A second fact on each timed entity ends in two seconds: the next check moves them all.
        soon = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 2))
        graph.add_observations([ObservationAddition(name, ("In a meeting",), (), None, None, soon) for name in names])
        time.sleep(3.1)  # past the end, and past the second a read of the next end is trusted
        moved_at = time.perf_counter()
        moved = end_lapsed_facts(graph)
        sweep = (time.perf_counter() - moved_at) * 1000
        graph.store.close()
    print(f"{args.size:,} entities, {args.timed:,} with a fact that holds for a time (SQLite)\n")
    print("| what | median ms | p95 ms |\n|---|---|---|")
    for what, (median, p95) in rows:
        print(f"| {what} | {median:.3f} | {p95:.3f} |")
    print(f"\nOne sweep that found {args.timed:,} timed entities and moved {moved:,} facts: {sweep:.0f} ms")


if __name__ == "__main__":
    main()
