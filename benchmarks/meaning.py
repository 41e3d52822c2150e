"""What search by meaning costs a server, over stdio: search latency by mode, memory, writes, start-up.

    python -m benchmarks.meaning --memory /tmp/zipf-40k.db            # a memory made by benchmarks.zipf_memory
    python -m benchmarks.meaning --memory /tmp/zipf-40k.db --repeats 50

On the memory given (copied first with its approximate index, if it has one, so it is left as it
was), with search by meaning on and off:

- `search_nodes` median and p95 per kind of query (those of benchmarks.search_scale) in
  `hybrid` and `lexical` mode, query embedding included, with how many texts were embedded;
- the server's resident memory after those searches, split into its own pages and the
  file-backed ones (the model's weights are mapped: several processes share those);
- a single `create_entities` and `add_observations` (each with its fsync), and how long a fact
  written takes to be found by a `semantic` search (the worker's delay plus one batch);
- the cold start (process start to the `initialize` answer) on and off.

A memory that is not embedded yet is measured as it is: hybrid then searches the vectors that
exist, and the worker embeds in the background meanwhile (say so when quoting the figures).
"""

from __future__ import annotations

import argparse
import json
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
from benchmarks.vector_index import copy_index

_PLAIN = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "search" / "meaning.json"

_KINDS = (
    ("plain question, limit 10", "plain question", 10),
    ("rare word, limit 10", "rare word", 10),
    ("common word, limit 10", "common word", 10),
    ("two-word phrase, limit 10", "phrase", 10),
    ("question, limit 10", "question", 10),
    ("question, no limit", "question", None),
)


def _server(memory: Path, semantic: bool) -> PipeClient:
    env = {key: os.environ[key] for key in ("PATH", "HOME", "PYTHONPATH") if key in os.environ}
    env |= {"MEMORY_FILE_PATH": str(memory), "GRAPHMEM_SEMANTIC": "on" if semantic else "off"}
    return PipeClient([sys.executable, "-m", "graphmem"], env)


def _median_p95(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(samples), ordered[round(0.95 * (len(ordered) - 1))]


def _memory_mb(pid: int) -> dict[str, float]:
    """Resident memory of a live process (Linux): in all, its own (anonymous) and file-backed pages."""
    fields = {"VmRSS": "resident", "RssAnon": "own", "RssFile": "file-backed", "VmHWM": "peak"}
    found: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines():
        key = line.split(":", 1)[0]
        if key in fields:
            found[fields[key]] = int(line.split()[1]) / 1024
    return found


def _embedded(memory: Path) -> tuple[int, int]:
    with sqlite3.connect(f"file:{memory}?mode=ro", uri=True) as conn:
        done = conn.execute("SELECT count(*) FROM vectors").fetchone()[0]
        waiting = conn.execute("SELECT count(*) FROM vectors_stale").fetchone()[0]
    return int(done), int(waiting)


def _searches(client: PipeClient, queries: dict[str, list[str]], mode: str) -> None:
    for label, kind, limit in _KINDS:
        texts = queries[kind]
        arguments: dict[str, Any] = {"mode": mode} | ({} if limit is None else {"limit": limit})
        client.call("search_nodes", {"query": texts[-1], **arguments})  # warm: the model loads on first need
        samples = []
        for text in texts[:-1]:
            started = time.perf_counter()
            client.call("search_nodes", {"query": text, **arguments})
            samples.append((time.perf_counter() - started) * 1000)
        median, p95 = _median_p95(samples)
        print(f"  {mode:<8} {label:<26} {median:8.1f} ms median {p95:8.1f} ms p95", flush=True)


def _writes(client: PipeClient, repeats: int, tag: str) -> tuple[float, float]:
    creates, additions = [], []
    for number in range(repeats):
        name = f"bench-{tag}-{number}"
        started = time.perf_counter()
        client.call("create_entities", {"entities": [{"name": name, "entityType": "bench", "observations": ["x"]}]})
        creates.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        client.call("add_observations", {"observations": [{"entityName": name, "contents": [f"fact {number}"]}]})
        additions.append((time.perf_counter() - started) * 1000)
    return statistics.median(creates), statistics.median(additions)


def _found_by_meaning(client: PipeClient) -> float:
    """Seconds from a write's answer until a semantic search's best answer is the new entity."""
    client.call(
        "create_entities",
        {
            "entities": [
                {"name": "Wanderer", "entityType": "person", "observations": ["relocated to Lisbon last spring"]}
            ]
        },
    )
    written = time.perf_counter()
    while True:
        answer = client.call("search_nodes", {"query": "Who moved abroad?", "mode": "semantic", "limit": 1})
        if (
            answer["structuredContent"]["entities"][:1]
            and answer["structuredContent"]["entities"][0]["name"] == "Wanderer"
        ):
            return time.perf_counter() - written
        if time.perf_counter() - written > 120:
            return float("inf")
        time.sleep(0.02)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memory", type=Path, required=True, help="a SQLite memory (see benchmarks.zipf_memory)")
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="graphmem-meaning-") as folder:
        memory = Path(folder) / "memory.db"
        shutil.copyfile(args.memory, memory)
        copy_index(args.memory, memory)  # an approximate index, if the memory has one
        queries = draw_queries(memory, args.repeats + 1)
        # Questions in plain English (the evaluation set's): made-up words of the drawn ones
        # split into many word pieces, which the model takes longer to embed.
        queries["plain question"] = [
            item["question"] for item in json.loads(_PLAIN.read_text(encoding="utf-8"))["questions"]
        ][: args.repeats + 1]
        done, waiting = _embedded(memory)
        print(f"{args.memory}: {done:,} texts embedded, {waiting:,} waiting; {args.repeats} queries of each kind")
        for semantic in (True, False):
            client = _server(memory, semantic)
            print(f"search by meaning {'on' if semantic else 'off'}: cold start {client.cold_start * 1000:.0f} ms")
            for mode in ("hybrid", "lexical") if semantic else ("lexical",):
                _searches(client, queries, mode)
            sizes = _memory_mb(client.process.pid)
            print("  memory: " + ", ".join(f"{name} {value:.0f} MB" for name, value in sizes.items()))
            create, add = _writes(client, args.repeats, "on" if semantic else "off")
            print(f"  create_entities (1) {create:.1f} ms, add_observations (1) {add:.1f} ms (medians)")
            if semantic:
                print(f"  a new fact found by meaning {_found_by_meaning(client):.2f} s after its write")
            client.close()


if __name__ == "__main__":
    main()
