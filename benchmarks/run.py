"""Side-by-side benchmark: graphmem against the official memory server, over real stdio.

    ./scripts/bench                             # 1,000, 10,000 and 40,000 entities, and the chart
    python -m benchmarks.run --sizes 1000000    # graphmem alone past 100,000 entities
    python -m benchmarks.run --no-official      # graphmem only

For each size it generates a graph (3 relations per entity, 3 observations each) and
writes it as the official JSONL file; graphmem imports that file with `graphmem
import` (timed), then both servers start as subprocesses and a raw JSON-RPC pipe
client (no SDK in the measuring path) times each official tool, and graphmem's
search, traversal and save_memory, alternating between the servers in short
batches. It prints median and p95 per operation and the ratio, the cold start
(process start to the `initialize` answer, beside the time Python takes just to
import the MCP SDK), each server's peak memory and the bytes on disk, writes the
figures as JSON to benchmarks/results/ and draws latency against size
(benchmarks/latency.png) when matplotlib is installed.
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

from benchmarks.chart import draw_chart
from graphmem.models import Entity, Relation
from graphmem.storage.jsonl_format import encode_entity, encode_relation

OFFICIAL_VERSION = "2026.8.31"
OFFICIAL_CACHE = Path.home() / ".cache" / "graphmem-bench" / "official"
RESULTS = Path(__file__).resolve().parent / "results"
CHART = Path(__file__).resolve().parent / "latency.png"

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
    official: bool = True
    """Whether the official server has this tool too."""


# Past this many entities the official server (which reads and rewrites its whole file on
# every call) would take hours: graphmem runs alone.
OFFICIAL_MAX_SIZE = 100_000


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
        Operation(
            "search_nodes (question)",
            lambda c, i: c.call(
                "search_nodes",
                {"query": f"Which project did entity-{i * 37 % size} manage in berlin?", "limit": 10},
            ),
            official=False,
        ),
        Operation(
            "read_graph (page of 20)",
            lambda c, i: c.call("read_graph", {"offset": i * 97 % size, "limit": 20}),
            official=False,
        ),
        Operation(
            "get_neighbors (depth 2)",
            lambda c, i: c.call("get_neighbors", {"name": f"entity-{i * 37 % size}", "depth": 2}),
            official=False,
        ),
        Operation(
            "find_path",
            lambda c, i: c.call(
                "find_path", {"from": f"entity-{i * 37 % size}", "to": f"entity-{(i * 37 + size // 2) % size}"}
            ),
            official=False,
        ),
        Operation(
            "save_memory (1 entity)",
            lambda c, i: c.call(
                "save_memory",
                {
                    "entities": [
                        {
                            "name": f"saved-{i}",
                            "entityType": "Person",
                            "observations": ["Lives in Berlin", "Works on the release"],
                            "relations": [{"targetEntity": f"entity-{i * 37 % size}", "relationType": "knows"}],
                        }
                    ],
                    "threadId": "bench",
                },
            ),
            official=False,
        ),
    ]


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def _peak_memory_mb(process: subprocess.Popen[bytes]) -> float | None:
    """The process's peak resident memory so far (Linux), in MB."""
    try:
        status = Path(f"/proc/{process.pid}/status").read_text(encoding="utf-8")
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return None


def sdk_import_seconds() -> float:
    """How long a fresh Python takes to import the MCP SDK's server, the floor of graphmem's cold start."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import mcp.server.lowlevel"], check=True)
    return time.perf_counter() - started


def bench_size(size: int, repeats: int, official: list[str] | None, workdir: Path) -> dict[str, Any]:
    entities, relations = generate(size)
    jsonl = workdir / f"official-{size}.jsonl"
    with jsonl.open("w", encoding="utf-8") as out:
        out.write("\n".join([*(encode_entity(e) for e in entities), *(encode_relation(r) for r in relations)]))
    del entities, relations
    db = workdir / f"graphmem-{size}.db"
    base_env = {key: os.environ[key] for key in ("PATH", "HOME", "PYTHONPATH") if key in os.environ}
    # The user's path: `graphmem import` of the official file.
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "graphmem", "import", str(jsonl), "-f", str(db), "--no-progress"],
        check=True,
        env=base_env,
        stdout=subprocess.DEVNULL,
    )
    import_seconds = time.perf_counter() - started

    servers = {"graphmem": PipeClient([sys.executable, "-m", "graphmem"], {**base_env, "MEMORY_FILE_PATH": str(db)})}
    if official and size <= OFFICIAL_MAX_SIZE:
        servers["official"] = PipeClient(official, {**base_env, "MEMORY_FILE_PATH": str(jsonl)})
    timings: dict[str, dict[str, list[float]]] = {name: {} for name in servers}
    for operation in operations(size):
        runners = {name: client for name, client in servers.items() if name == "graphmem" or operation.official}
        for client in runners.values():
            operation.run(client, 10_000)  # warm-up
        # Alternate between the servers in short batches: call by call, the official
        # server's garbage collection after each answer would land in graphmem's timing.
        for batch in range(0, repeats, 5):
            for name, client in runners.items():
                for i in range(batch, min(batch + 5, repeats)):
                    started = time.perf_counter()
                    operation.run(client, i)
                    timings[name].setdefault(operation.name, []).append(time.perf_counter() - started)
    report: dict[str, Any] = {
        "size": size,
        "relations": size * 3,
        "graphmem_import_seconds": import_seconds,
        "bytes_on_disk": {"graphmem": db.stat().st_size, "official": jsonl.stat().st_size},
        "cold_start_seconds": {name: client.cold_start for name, client in servers.items()},
        "peak_memory_mb": {name: _peak_memory_mb(client.process) for name, client in servers.items()},
        "operations": {},
    }
    for operation in operations(size):
        row = {}
        for name in servers:
            values = timings[name].get(operation.name)
            if values:
                row[name] = {"median_ms": statistics.median(values) * 1000, "p95_ms": _percentile(values, 0.95) * 1000}
        report["operations"][operation.name] = row
    for client in servers.values():
        client.close()
    return report


def print_report(report: dict[str, Any]) -> None:
    print(f"\n{report['size']:,} entities, {report['relations']:,} relations")
    print(
        f"  graphmem import of the JSONL file: {report['graphmem_import_seconds']:.2f} s; cold start: "
        + ", ".join(f"{k} {v:.2f} s" for k, v in report["cold_start_seconds"].items())
        + f" (importing the MCP SDK alone: {report['sdk_import_seconds']:.2f} s)"
    )
    print(
        "  peak memory: "
        + ", ".join(f"{k} {v:.0f} MB" for k, v in report["peak_memory_mb"].items() if v is not None)
        + "; on disk: "
        + ", ".join(f"{k} {v / 1e6:.1f} MB" for k, v in report["bytes_on_disk"].items())
    )
    print(f"  {'operation':<26}{'graphmem median/p95 ms':>24}{'official median/p95 ms':>26}{'ratio':>9}")
    for name, row in report["operations"].items():
        if "graphmem" not in row:
            continue
        ours = row["graphmem"]
        line = f"  {name:<26}{ours['median_ms']:>12.2f} /{ours['p95_ms']:>8.2f}"
        if "official" in row:
            theirs = row["official"]
            ratio = theirs["median_ms"] / ours["median_ms"]
            line += f"{theirs['median_ms']:>15.2f} /{theirs['p95_ms']:>8.2f}{ratio:>8.1f}x"
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 40_000])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--no-official", action="store_true", help="time graphmem alone")
    args = parser.parse_args()
    official = None if args.no_official else official_command()
    if official is None and not args.no_official:
        print("node/npm not found: timing graphmem alone", file=sys.stderr)
    reports = []
    sdk_seconds = sdk_import_seconds()
    with tempfile.TemporaryDirectory(prefix="graphmem-bench-") as folder:
        for size in args.sizes:
            if official and size > OFFICIAL_MAX_SIZE:
                print(
                    f"{size:,} entities: past {OFFICIAL_MAX_SIZE:,} the official server runs for hours; graphmem alone"
                )
            report = bench_size(size, args.repeats, official, Path(folder))
            report["sdk_import_seconds"] = sdk_seconds
            print_report(report)
            reports.append(report)
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"bench-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(reports, indent=2), encoding="utf-8")
    print(f"\nfigures written to {out}")
    print(draw_chart(reports, CHART))


if __name__ == "__main__":
    main()
