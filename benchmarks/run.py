"""Side-by-side benchmark: graphmem against the official memory server, over real stdio.

    python -m benchmarks.run                    # 1,000 and 10,000 entities
    python -m benchmarks.run --sizes 40000 --repeats 20
    python -m benchmarks.run --no-official      # graphmem only

For each size it generates a graph (3 relations per entity, 3 observations each),
writes it as the official JSONL file, loads the same data into a graphmem SQLite
memory, starts both servers as subprocesses and times each official tool with a
raw JSON-RPC pipe client (no SDK in the measuring path), alternating between the
servers. It prints median and p95 per operation and the ratio, and writes the
figures as JSON to benchmarks/results/.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphmem.config import Settings
from graphmem.graph import KnowledgeGraph
from graphmem.models import Entity, Relation
from graphmem.storage import open_store
from graphmem.storage.jsonl_format import encode_entity, encode_relation

OFFICIAL_VERSION = "2026.8.31"
OFFICIAL_CACHE = Path.home() / ".cache" / "graphmem-bench" / "official"
RESULTS = Path(__file__).resolve().parent / "results"

_WORDS = (
    "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa "
    "quebec romeo sierra tango uniform victor whiskey xray yankee zulu project meeting design server "
    "database python coffee berlin paris tokyo engineer manager customer invoice release"
).split()
_TYPES = ("person", "organization", "project", "place", "concept")
_RELATIONS = ("knows", "works_at", "depends_on", "located_in", "manages")


def generate(size: int, seed: int = 7) -> tuple[list[Entity], list[Relation]]:
    """A graph of `size` entities with three observations and three outgoing relations each."""
    rng = random.Random(seed)
    entities = [
        Entity(
            f"entity-{index}",
            _TYPES[index % len(_TYPES)],
            tuple(" ".join(rng.choices(_WORDS, k=6)) + f" #{index}-{n}" for n in range(3)),
        )
        for index in range(size)
    ]
    relations = list(
        {
            (f"entity-{index}", f"entity-{rng.randrange(size)}", _RELATIONS[n]): None
            for index in range(size)
            for n in range(3)
        }
    )
    return entities, [Relation(*key) for key in relations]


class PipeClient:
    """A minimal MCP client over a subprocess's stdin/stdout, to time calls precisely."""

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        started = time.perf_counter()
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
        )
        self._ids = itertools.count(1)
        self.request(
            "initialize",
            {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
        )
        self.cold_start = time.perf_counter() - started
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode("utf-8") + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        request_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)
        assert self.process.stdout is not None
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError(f"server closed the connection during {method}")
            answer: dict[str, Any] = json.loads(line)
            if answer.get("id") == request_id:
                if "error" in answer:
                    raise RuntimeError(f"{method} failed: {answer['error']}")
                return answer

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = self.request("tools/call", {"name": tool, "arguments": arguments})["result"]
        if result.get("isError"):
            raise RuntimeError(f"{tool} failed: {result['content'][0]['text']}")
        return result

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


def official_command() -> list[str] | None:
    """The official server's command line, installing it from npm on first use."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        return None
    entry = OFFICIAL_CACHE / "node_modules" / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"
    if not entry.exists():
        OFFICIAL_CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                "npm",
                "install",
                "--silent",
                "--prefix",
                str(OFFICIAL_CACHE),
                f"@modelcontextprotocol/server-memory@{OFFICIAL_VERSION}",
            ],
            check=True,
        )
    return ["node", str(entry)]


@dataclass
class Operation:
    name: str
    run: Callable[[PipeClient, int], Any]


def operations(size: int) -> list[Operation]:
    """The timed calls; `i` makes each repeat touch different data."""
    return [
        Operation("ping", lambda c, i: c.request("ping")),
        Operation("open_nodes (1)", lambda c, i: c.call("open_nodes", {"names": [f"entity-{i * 37 % size}"]})),
        Operation(
            "open_nodes (10)",
            lambda c, i: c.call("open_nodes", {"names": [f"entity-{(i * 37 + k) % size}" for k in range(10)]}),
        ),
        Operation("search_nodes (word)", lambda c, i: c.call("search_nodes", {"query": f"#{i * 37 % size}-1"})),
        Operation(
            "create_entities (1)",
            lambda c, i: c.call(
                "create_entities", {"entities": [{"name": f"new-{i}", "entityType": "t", "observations": ["fresh"]}]}
            ),
        ),
        Operation(
            "create_relations (1)",
            lambda c, i: c.call(
                "create_relations", {"relations": [{"from": f"new-{i}", "to": "entity-0", "relationType": "bench"}]}
            ),
        ),
        Operation(
            "add_observations (1)",
            lambda c, i: c.call(
                "add_observations",
                {"observations": [{"entityName": f"entity-{i * 37 % size}", "contents": [f"bench {i}"]}]},
            ),
        ),
        Operation(
            "delete_observations (1)",
            lambda c, i: c.call(
                "delete_observations",
                {"deletions": [{"entityName": f"entity-{i * 37 % size}", "observations": [f"bench {i}"]}]},
            ),
        ),
        Operation(
            "delete_relations (1)",
            lambda c, i: c.call(
                "delete_relations", {"relations": [{"from": f"new-{i}", "to": "entity-0", "relationType": "bench"}]}
            ),
        ),
        Operation("delete_entities (1)", lambda c, i: c.call("delete_entities", {"entityNames": [f"new-{i}"]})),
    ]


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def bench_size(size: int, repeats: int, official: list[str] | None, workdir: Path) -> dict[str, Any]:
    entities, relations = generate(size)
    jsonl = workdir / f"official-{size}.jsonl"
    with jsonl.open("w", encoding="utf-8") as out:
        out.write("\n".join([*(encode_entity(e) for e in entities), *(encode_relation(r) for r in relations)]))
    db = workdir / f"graphmem-{size}.db"
    started = time.perf_counter()
    store = open_store(Settings(memory_path=db))
    KnowledgeGraph(store).import_graph(entities, relations)
    store.close()
    import_seconds = time.perf_counter() - started

    base_env = {key: os.environ[key] for key in ("PATH", "HOME") if key in os.environ}
    servers = {"graphmem": PipeClient([sys.executable, "-m", "graphmem"], {**base_env, "MEMORY_FILE_PATH": str(db)})}
    if official:
        servers["official"] = PipeClient(official, {**base_env, "MEMORY_FILE_PATH": str(jsonl)})
    timings: dict[str, dict[str, list[float]]] = {name: {} for name in servers}
    for operation in operations(size):
        for client in servers.values():
            operation.run(client, 10_000)  # warm-up
        # Alternate between the servers in short batches: call by call, the official
        # server's garbage collection after each answer would land in graphmem's timing.
        for batch in range(0, repeats, 5):
            for name, client in servers.items():
                for i in range(batch, min(batch + 5, repeats)):
                    started = time.perf_counter()
                    operation.run(client, i)
                    timings[name].setdefault(operation.name, []).append(time.perf_counter() - started)
    report: dict[str, Any] = {
        "size": size,
        "relations": len(relations),
        "graphmem_import_seconds": import_seconds,
        "bytes_on_disk": {"graphmem": db.stat().st_size, "official": jsonl.stat().st_size},
        "cold_start_seconds": {name: client.cold_start for name, client in servers.items()},
        "operations": {},
    }
    for operation in operations(size):
        row = {}
        for name in servers:
            values = timings[name][operation.name]
            row[name] = {"median_ms": statistics.median(values) * 1000, "p95_ms": _percentile(values, 0.95) * 1000}
        report["operations"][operation.name] = row
    for client in servers.values():
        client.close()
    return report


def print_report(report: dict[str, Any]) -> None:
    print(f"\n{report['size']:,} entities, {report['relations']:,} relations")
    print(
        f"  graphmem bulk import: {report['graphmem_import_seconds']:.2f} s; cold start: "
        + ", ".join(f"{k} {v:.2f} s" for k, v in report["cold_start_seconds"].items())
    )
    print(f"  {'operation':<26}{'graphmem median/p95 ms':>24}{'official median/p95 ms':>26}{'ratio':>9}")
    for name, row in report["operations"].items():
        ours = row["graphmem"]
        line = f"  {name:<26}{ours['median_ms']:>12.2f} /{ours['p95_ms']:>8.2f}"
        if "official" in row:
            theirs = row["official"]
            ratio = theirs["median_ms"] / ours["median_ms"]
            line += f"{theirs['median_ms']:>15.2f} /{theirs['p95_ms']:>8.2f}{ratio:>8.1f}x"
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--no-official", action="store_true", help="time graphmem alone")
    args = parser.parse_args()
    official = None if args.no_official else official_command()
    if official is None and not args.no_official:
        print("node/npm not found: timing graphmem alone", file=sys.stderr)
    reports = []
    with tempfile.TemporaryDirectory(prefix="graphmem-bench-") as folder:
        for size in args.sizes:
            report = bench_size(size, args.repeats, official, Path(folder))
            print_report(report)
            reports.append(report)
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"bench-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(reports, indent=2), encoding="utf-8")
    print(f"\nfigures written to {out}")


if __name__ == "__main__":
    main()
