"""What the change log costs: each write tool's latency with the log and without, and the log's
bytes per change, on a large SQLite memory.

    python -m benchmarks.change_log                    # 40,000 entities, 120,000 relations
    python -m benchmarks.change_log --size 10000 --repeats 100

Two copies of the memory `benchmarks.tools` builds (and caches); each write tool is called
through its ToolSpec on both, in alternating batches, one copy writing through the change
log's recorder as graphmem always does, the other straight to the store as graphmem did before
the log. Median and p95 per tool, then the log's bytes a change by tool, and the size of the
import that made the memory (one change) beside the memory's (SQLite's dbstat).
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import statistics
import tempfile
from pathlib import Path

from benchmarks.tools import SAMPLES, _call, _memory
from graphmem.config import Settings
from graphmem.domain.graph import KnowledgeGraph
from graphmem.storage import open_store
from graphmem.tools import ALL_TOOLS, ToolContext

WRITES = (
    "create_entities",
    "create_relations",
    "add_observations",
    "delete_observations",
    "update_entities",
    "delete_relations",
    "delete_entities",
    "save_memory",
)
BATCH = 10
_LOG_TABLES = ("changes", "change_entities", "changes_by_time", "change_entities_by_change")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.change_log", description=__doc__)
    parser.add_argument("--size", type=int, default=40_000)
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args(argv)
    source = _memory(args.size)
    specs = {spec.name: spec for spec in ALL_TOOLS}
    with tempfile.TemporaryDirectory() as folder:
        graphs = {}
        for name in ("with the log", "without"):
            path = Path(folder) / f"{name.replace(' ', '-')}.db"
            shutil.copy(source, path)
            graph = KnowledgeGraph(open_store(Settings(memory_path=path)))
            if name == "without":
                graph.store = graph.store.inner  # type: ignore[attr-defined]  # the recorder bypassed
            graphs[name] = graph
        took: dict[tuple[str, str], list[float]] = {}
        for tool in WRITES:
            spec = specs[tool]
            for start in range(0, args.repeats, BATCH):
                for name, graph in graphs.items():
                    ctx = ToolContext(graph)
                    with graph.through(tool):
                        for i in range(start, min(args.repeats, start + BATCH)):
                            took.setdefault((tool, name), []).append(
                                _call(spec, ctx, SAMPLES[tool](i, args.size)) * 1000
                            )
        print(f"write tools in process on {args.size:,} entities, ms (median / p95 of {args.repeats})")
        print(f"{'tool':<22} {'with the log':>16} {'without':>16}")
        for tool in WRITES:
            cells = []
            for name in graphs:
                values = took[tool, name]
                cells.append(f"{statistics.median(values):.2f} / {statistics.quantiles(values, n=20)[-1]:.2f}")
            print(f"{tool:<22} {cells[0]:>16} {cells[1]:>16}")
        for graph in graphs.values():
            graph.store.close()
        conn = sqlite3.connect(Path(folder) / "with-the-log.db")
        # The memory's own import is the first change; the tools' follow it.
        (first,) = conn.execute("SELECT min(seq) FROM changes").fetchone()
        rows = conn.execute(
            "SELECT via, count(*), avg(length(ops) + length(at) + length(via)),"
            " avg((SELECT count(*) FROM change_entities AS n WHERE n.seq = c.seq))"
            " FROM changes AS c WHERE seq > ? GROUP BY via ORDER BY via",
            (first,),
        ).fetchall()
        (imported, named) = conn.execute(
            "SELECT length(ops), (SELECT count(*) FROM change_entities WHERE seq = ?) FROM changes WHERE seq = ?",
            (first, first),
        ).fetchone()
        marks = ", ".join("?" * len(_LOG_TABLES))
        (size,) = conn.execute(f"SELECT sum(pgsize) FROM dbstat WHERE name IN ({marks})", _LOG_TABLES).fetchone()
        (whole,) = conn.execute("SELECT sum(pgsize) FROM dbstat").fetchone()
        conn.close()
        print("the change log: bytes a change (its JSON and time) and entities it names, by tool")
        for via, count, average, entities in rows:
            print(f"  {via:<22} {count:>5} changes  {average:>7.0f} bytes  {entities:.1f} entities named")
        print(
            f"  the import of the memory: one change of {imported:,} bytes naming {named:,} entities;"
            f" the whole log {size:,} bytes on disk of the memory's {whole:,}"
        )


if __name__ == "__main__":
    main()
