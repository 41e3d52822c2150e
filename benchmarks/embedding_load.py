"""What the embedding worker costs a server's reads, and how fast it embeds while they come (issue 27, item 13).

    python -m benchmarks.zipf_memory --entities 20000 --out /tmp/zipf-20k.jsonl
    graphmem import --no-semantic -f /tmp/zipf-20k.db /tmp/zipf-20k.jsonl      # 129,801 texts waiting
    python -m benchmarks.embedding_load --memory /tmp/zipf-20k.db

One server over stdio with search by meaning on, on a copy of the memory. Its queue of
texts waiting to be embedded is set aside (the worker idles) and put back (the worker
embeds), in turns, so that the two states are measured alternately under the same load of
the machine; each turn asks its own queries, so no query's vector is reused. Calls come
`--gap` seconds apart, as an agent's do; with `--repeat N`, the same N queries of each kind
are asked again and again (an agent repeats its searches: then the server's kept answers
and query vectors count). It prints, per kind of search, the median and p90
of the idle turns and of the busy turns and their ratio, the worker's rate during the
busy turns (texts a second, while the calls come), how long a fact written with the backlog
waiting takes to be found by meaning, and the worker's rate alone (no calls) over `--alone`
seconds. The load average is printed too: on a shared 2-core machine it moves
every figure.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.client import PipeClient
from benchmarks.search_scale import draw_queries

# (label, kind of query drawn by search_scale, search mode)
_KINDS = (
    ("word search (rare word)", "rare word", "lexical"),
    ("word search (question)", "question", "lexical"),
    ("hybrid question", "question", "hybrid"),
)


def _server(memory: Path) -> PipeClient:
    env = {key: os.environ[key] for key in ("PATH", "HOME", "PYTHONPATH") if key in os.environ}
    env |= {"MEMORY_FILE_PATH": str(memory), "GRAPHMEM_SEMANTIC": "on"}
    return PipeClient([sys.executable, "-m", "graphmem"], env)


def _connect(memory: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(memory, timeout=60, isolation_level=None)
    conn.execute("CREATE TABLE IF NOT EXISTS bench_queue_aside (kind INTEGER, row_id INTEGER)")
    return conn


def _set_queue_aside(conn: sqlite3.Connection) -> None:
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO bench_queue_aside SELECT kind, row_id FROM vectors_stale")
    conn.execute("DELETE FROM vectors_stale")
    conn.execute("COMMIT")


def _put_queue_back(conn: sqlite3.Connection) -> None:
    conn.execute("BEGIN IMMEDIATE")
    conn.execute(
        "INSERT OR IGNORE INTO vectors_stale (kind, row_id, claimed_until)"
        " SELECT a.kind, a.row_id, 0 FROM bench_queue_aside AS a"
        " WHERE NOT EXISTS (SELECT 1 FROM vectors AS v WHERE v.kind = a.kind AND v.row_id = a.row_id)"
    )
    conn.execute("DELETE FROM bench_queue_aside")
    conn.execute("COMMIT")


def _embedded(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM vectors").fetchone()[0])


def _wait_until(predicate: Any, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def _settle(conn: sqlite3.Connection) -> None:
    """Wait until the worker has saved what it had claimed: no new vector for half a second."""
    last = -1
    while (now := _embedded(conn)) != last:
        last = now
        time.sleep(0.5)


def _turn(
    client: PipeClient, queries: dict[str, list[str]], turn: int, per_turn: int, gap: float, repeat: int
) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {label: [] for label, _, _ in _KINDS}
    for step in range(turn * per_turn, (turn + 1) * per_turn):
        # With --repeat, the same few queries again and again, as an agent asks them.
        index = step % repeat if repeat else step
        for label, kind, mode in _KINDS:
            time.sleep(gap)
            started = time.perf_counter()
            client.call("search_nodes", {"query": queries[kind][index], "mode": mode, "limit": 10})
            samples[label].append((time.perf_counter() - started) * 1000)
    return samples


def _found_by_meaning(client: PipeClient) -> float:
    """Seconds from a write's answer until a semantic search finds it, with the backlog waiting."""
    client.call(
        "create_entities",
        {
            "entities": [
                {"name": "Wanderer", "entityType": "person", "observations": ["relocated to Lisbon last spring"]}
            ]
        },
    )
    written = time.perf_counter()
    while time.perf_counter() - written < 120:
        answer = client.call("search_nodes", {"query": "Who moved abroad?", "mode": "semantic", "limit": 1})
        if [entity["name"] for entity in answer["structuredContent"]["entities"]] == ["Wanderer"]:
            return time.perf_counter() - written
        time.sleep(0.05)
    return float("inf")


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[round(0.9 * (len(ordered) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memory", type=Path, required=True, help="a SQLite memory with texts waiting")
    parser.add_argument("--turns", type=int, default=4, help="idle and busy turns, each")
    parser.add_argument("--per-turn", type=int, default=15, help="queries of each kind per turn")
    parser.add_argument("--gap", type=float, default=0.1, help="seconds between calls")
    parser.add_argument(
        "--repeat", type=int, default=0, help="ask only this many queries of each kind, over and over (0: all new)"
    )
    parser.add_argument("--alone", type=float, default=20.0, help="seconds the worker embeds with no calls")
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}", flush=True)
    with tempfile.TemporaryDirectory(prefix="graphmem-embedding-load-") as folder:
        memory = Path(folder) / "memory.db"
        shutil.copyfile(args.memory, memory)
        queries = draw_queries(memory, 2 * args.turns * args.per_turn + 1)
        conn = _connect(memory)
        waiting = int(conn.execute("SELECT count(*) FROM vectors_stale").fetchone()[0])
        print(f"{args.memory}: {waiting:,} texts waiting, {_embedded(conn):,} embedded", flush=True)
        _set_queue_aside(conn)
        client = _server(memory)
        # The model loads on the first hybrid search; the worker starts a second after the first call.
        client.call("search_nodes", {"query": queries["question"][-1], "mode": "hybrid", "limit": 10})
        time.sleep(2)
        idle: dict[str, list[float]] = {label: [] for label, _, _ in _KINDS}
        busy: dict[str, list[float]] = {label: [] for label, _, _ in _KINDS}
        busy_texts, busy_seconds = 0, 0.0
        for turn in range(args.turns):
            _settle(conn)
            for label, values in _turn(client, queries, 2 * turn, args.per_turn, args.gap, args.repeat).items():
                idle[label].extend(values)
            _put_queue_back(conn)
            before = _embedded(conn)
            _wait_until(lambda before=before: _embedded(conn) > before, 30)
            started, before = time.perf_counter(), _embedded(conn)
            for label, values in _turn(client, queries, 2 * turn + 1, args.per_turn, args.gap, args.repeat).items():
                busy[label].extend(values)
            busy_texts += _embedded(conn) - before
            busy_seconds += time.perf_counter() - started
            _set_queue_aside(conn)
        print(
            f"{args.turns} idle and {args.turns} busy turns, {args.per_turn} queries of each kind a turn, "
            f"{args.gap * 1000:.0f} ms between calls",
            flush=True,
        )
        for label, _, _ in _KINDS:
            idle_median, busy_median = statistics.median(idle[label]), statistics.median(busy[label])
            print(
                f"  {label:<26} idle {idle_median:6.1f} ms median {_p90(idle[label]):6.1f} p90 | "
                f"embedding {busy_median:6.1f} ms median {_p90(busy[label]):6.1f} p90 | "
                f"x{busy_median / idle_median:.2f}",
                flush=True,
            )
        print(f"  worker while the calls came: {busy_texts / busy_seconds:.0f} texts a second", flush=True)
        _put_queue_back(conn)
        _wait_until(lambda: False, 3)
        print(f"  a new fact found by meaning {_found_by_meaning(client):.2f} s after its write", flush=True)
        _wait_until(lambda: False, 2)
        before = _embedded(conn)
        time.sleep(args.alone)
        print(f"  worker alone: {(_embedded(conn) - before) / args.alone:.0f} texts a second", flush=True)
        client.close()
        conn.close()
    print(f"load average at end: {os.getloadavg()[0]:.2f}", flush=True)


if __name__ == "__main__":
    main()
