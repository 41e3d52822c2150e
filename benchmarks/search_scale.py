"""Search latency on a large memory, by kind of query, over stdio and in process.

    python -m benchmarks.zipf_memory --entities 1000000 --out /tmp/zipf-1m.jsonl
    graphmem import --no-semantic -f /tmp/zipf-1m.db /tmp/zipf-1m.jsonl
    python -m benchmarks.search_scale --memory /tmp/zipf-1m.db

Each kind of query is asked `--repeats` times, each time another query drawn from the
memory's own facts (so no answer is served from the answers graphmem keeps):

- rare word: a word of a fact found in at most 1 entity in 1,000;
- common word: a word found in 5% to 50% of the entities (with limit 10, and without limit);
- phrase: two words that follow each other in a fact;
- question: "What about <name> and <word> <word>?" with words of one of that entity's facts,
  with limit 10 and with limit 100 (the window the hybrid search asks the word search for).

It prints the median and p95 of each, first through a real `graphmem` process over stdio
(search by meaning off: the word search alone), then in process (`KnowledgeGraph.search_page`,
search_nodes bounded as the server bounds it), which leaves out the server's share (protocol, JSON, the stdio hops).
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.client import PipeClient
from graphmem.config import Settings
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.search import query_terms
from graphmem.storage import open_store

# Without a limit, a common word matches thousands of entities: the server names and
# loads only what its answer can show (a few hundred), so the in-process figure does too.
_LOADED = 200

_KINDS = ("rare word", "common word", "phrase", "question")


def _count(conn: sqlite3.Connection, word: str, at_most: int) -> int:
    """How many entities hold `word` in the word index, counting no further than `at_most`."""
    (found,) = conn.execute(
        "SELECT count(*) FROM (SELECT 1 FROM entity_words WHERE entity_words MATCH ? LIMIT ?)",
        ('"' + word + '"', at_most),
    ).fetchone()
    return int(found)


def draw_queries(memory: Path, per_kind: int, seed: int = 3) -> dict[str, list[str]]:
    """`per_kind` queries of each kind, from the facts of random entities of the memory."""
    rng = random.Random(seed)
    conn = sqlite3.connect(f"file:{memory}?mode=ro", uri=True)
    (rows,) = conn.execute("SELECT max(id) FROM entities").fetchone()
    (observations,) = conn.execute("SELECT max(id) FROM observations").fetchone()
    queries: dict[str, list[str]] = {kind: [] for kind in _KINDS}
    counts: dict[str, int] = {}

    def count(word: str) -> int:
        if word not in counts:
            counts[word] = _count(conn, word, rows // 2 + 1)
        return counts[word]

    while any(len(found) < per_kind for found in queries.values()):
        row = conn.execute(
            "SELECT e.name, o.content FROM observations AS o JOIN entities AS e ON e.id = o.entity_id WHERE o.id = ?",
            (rng.randint(1, observations),),
        ).fetchone()
        if row is None:
            continue
        name, fact = row
        words = [word for word in fact.lower().split() if query_terms(word)]
        if len(words) < 3:
            continue
        word = rng.choice(words)
        frequency = count(word)
        if frequency * 1000 <= rows and len(queries["rare word"]) < per_kind:
            queries["rare word"].append(word)
        elif rows <= frequency * 20 and frequency * 2 < rows and len(queries["common word"]) < per_kind:
            queries["common word"].append(word)
        start = rng.randrange(len(fact.split()) - 1)
        if len(queries["phrase"]) < per_kind:
            queries["phrase"].append(" ".join(fact.lower().split()[start : start + 2]))
        if len(queries["question"]) < per_kind:
            first, second = rng.sample(words, 2)
            queries["question"].append(f"What about {name.split()[0]} and {first} {second}?")
    conn.close()
    return queries


def _time(fn: Callable[[str], Any], queries: list[str]) -> tuple[float, float]:
    """Median and p95 in ms of `fn` over the queries, after one call to warm up."""
    fn(queries[-1])
    samples = []
    for query in queries[:-1]:
        started = time.perf_counter()
        fn(query)
        samples.append((time.perf_counter() - started) * 1000)
    ordered = sorted(samples)
    return statistics.median(samples), ordered[round(0.95 * (len(ordered) - 1))]


def _cases(queries: dict[str, list[str]]) -> list[tuple[str, list[str], int | None]]:
    """(label, queries, limit) of every measured case."""
    return [
        ("rare word, limit 10", queries["rare word"], 10),
        ("common word, limit 10", queries["common word"], 10),
        ("two-word phrase, limit 10", queries["phrase"], 10),
        ("question, limit 10", queries["question"], 10),
        ("question, limit 100", queries["question"], 100),
        ("common word, no limit", queries["common word"], None),
    ]


def _row(label: str, figures: tuple[float, float]) -> str:
    return f"  {label:<28} {figures[0]:8.1f} ms median {figures[1]:8.1f} ms p95"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memory", type=Path, required=True, help="a SQLite memory (see benchmarks.zipf_memory)")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--no-stdio", action="store_true", help="only measure in process")
    args = parser.parse_args()
    queries = draw_queries(args.memory, args.repeats + 1)
    (entities,) = (
        sqlite3.connect(f"file:{args.memory}?mode=ro", uri=True).execute("SELECT count(*) FROM entities").fetchone()
    )
    print(
        f"{args.memory}: {entities:,} entities, {args.memory.stat().st_size / 1e6:,.0f} MB; {args.repeats} queries each"
    )
    if not args.no_stdio:
        env = {key: os.environ[key] for key in ("PATH", "HOME", "PYTHONPATH") if key in os.environ}
        env |= {"MEMORY_FILE_PATH": str(args.memory), "GRAPHMEM_SEMANTIC": "off"}
        client = PipeClient([sys.executable, "-m", "graphmem"], env)
        print("over stdio, search_nodes:")
        for label, texts, limit in _cases(queries):

            def call(query: str, limit: int | None = limit) -> Any:
                arguments: dict[str, Any] = {"query": query} | ({} if limit is None else {"limit": limit})
                return client.call("search_nodes", arguments)

            print(_row(label, _time(call, texts)), flush=True)
        client.close()
    store = open_store(Settings(memory_path=args.memory, semantic=False))
    graph = KnowledgeGraph(store)
    print(f"in process, KnowledgeGraph.search_nodes (loading at most {_LOADED} entities, as the server bounds it):")
    for label, texts, limit in _cases(queries):

        def search(query: str, limit: int | None = limit) -> Any:
            return graph.search_page(query, limit=limit, load_at_most=_LOADED)

        print(_row(label, _time(search, texts)), flush=True)
    store.close()


if __name__ == "__main__":
    main()
