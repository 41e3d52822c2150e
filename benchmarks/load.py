"""Load benchmark: many clients at once against a real `graphmem serve --http` on loopback.

    python -m benchmarks.load                          # 8 clients, 20 seconds, SSE answers
    python -m benchmarks.load --clients 16 --seconds 30 --write-share 0.5
    python -m benchmarks.load --json-response          # the server answers with JSON bodies
    python -m benchmarks.load --servers 2 --postgres   # two servers on one throw-away PostgreSQL database
    python -m benchmarks.load --servers 2 --database postgresql://me@db.example/bench   # on your own server

With --servers N, N server processes serve one memory (a SQLite file, or a PostgreSQL
database with --postgres or --database) and the clients are dealt out among them, as a
team's servers share one database. Each client opens its own MCP session and, until the
time is up, makes one call at a time: a write (create_entities of a new entity, or add_observations to one it made)
with probability --write-share, else a read (search_nodes, open_nodes). The memory is
seeded with 500 entities first. Afterwards the memory is opened directly and every
write the clients were told succeeded is looked for.

It prints throughput, p50/p95/p99 latency, errors (must be 0) and writes acknowledged
versus stored (must be equal), and exits 1 if either rule is broken. The clients are
raw HTTP (httpx2, as the SDK uses), so the figures are the server's and the HTTP
stack's, not an SDK client's; client and server share the machine's cores.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2

from graphmem.config import Settings
from graphmem.core.models import Entity
from graphmem.domain.graph import KnowledgeGraph
from graphmem.storage import open_store

__all__ = ["LoadReport", "main", "run_load"]

PROTOCOL_VERSION = "2025-11-25"
SEED_ENTITIES = 500
_ANNOUNCE = re.compile(r"at (http://\S+)")
_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
_WORDS = "alpha bravo cedar delta ember falcon garnet harbor indigo juniper".split()


@dataclass
class LoadReport:
    """What the clients saw and what the memory holds afterwards."""

    clients: int
    seconds: float
    servers: int = 1
    backend: str = "sqlite"
    latencies_ms: list[float] = field(default_factory=list)
    reads: int = 0
    errors: list[str] = field(default_factory=list)
    acknowledged_entities: set[str] = field(default_factory=set)
    acknowledged_observations: set[str] = field(default_factory=set)
    stored_entities: int = 0
    stored_observations: int = 0

    @property
    def calls(self) -> int:
        return len(self.latencies_ms)

    @property
    def writes_acknowledged(self) -> int:
        return len(self.acknowledged_entities) + len(self.acknowledged_observations)

    @property
    def writes_stored(self) -> int:
        return self.stored_entities + self.stored_observations

    def percentile(self, share: float) -> float:
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0

    def lines(self) -> list[str]:
        return [
            f"clients: {self.clients} on {self.servers} server(s) sharing one {self.backend} memory, "
            f"{self.seconds:.0f} s, mixed reads and writes over Streamable HTTP",
            f"calls: {self.calls} ({self.reads} reads, {self.calls - self.reads} writes)",
            f"throughput: {self.calls / self.seconds:.0f} calls/s",
            f"latency: p50 {statistics.median(self.latencies_ms) if self.latencies_ms else 0:.1f} ms, "
            f"p95 {self.percentile(0.95):.1f} ms, p99 {self.percentile(0.99):.1f} ms, "
            f"max {max(self.latencies_ms, default=0):.1f} ms",
            f"errors: {len(self.errors)}",
            f"writes acknowledged: {self.writes_acknowledged}, stored: {self.writes_stored}",
        ]

    @property
    def ok(self) -> bool:
        return not self.errors and self.writes_acknowledged == self.writes_stored


def _message(response: httpx2.Response) -> dict[str, Any]:
    """The JSON-RPC answer in a response, sent as a JSON body or as SSE events."""
    if response.headers.get("content-type", "").startswith("application/json"):
        answer: dict[str, Any] = response.json()
        return answer
    for line in response.text.splitlines():
        if line.startswith("data:") and line[5:].strip():
            event: dict[str, Any] = json.loads(line[5:])
            if "id" in event:
                return event
    raise ValueError(f"no answer in the response: {response.text[:200]!r}")


class _Client:
    """One MCP session over raw HTTP."""

    def __init__(self, http: httpx2.AsyncClient, url: str) -> None:
        self.http = http
        self.url = url
        self.headers = dict(_HEADERS)
        self._id = 0

    async def _post(self, message: dict[str, Any]) -> httpx2.Response:
        return await self.http.post(self.url, content=json.dumps(message), headers=self.headers)

    async def open(self, name: str) -> None:
        opened = await self._post(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": name, "version": "0"},
                },
            }
        )
        opened.raise_for_status()
        self.headers |= {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": PROTOCOL_VERSION}
        await self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def close(self) -> None:
        await self.http.delete(self.url, headers=self.headers)

    async def call(self, tool: str, arguments: dict[str, Any]) -> str | None:
        """Call a tool; returns None on success, else what went wrong."""
        self._id += 1
        message = {"jsonrpc": "2.0", "id": self._id, "method": "tools/call"}
        response = await self._post(message | {"params": {"name": tool, "arguments": arguments}})
        if response.status_code != 200:
            return f"HTTP {response.status_code}: {response.text[:200]}"
        answer = _message(response)
        if "error" in answer:
            return f"JSON-RPC error: {answer['error']}"
        if answer["result"].get("isError"):
            return f"tool error: {answer['result']['content'][0]['text'][:200]}"
        return None


async def _client(url: str, number: int, deadline: float, write_share: float, report: LoadReport) -> None:
    rng = random.Random(number)
    mine: list[str] = []
    async with httpx2.AsyncClient(timeout=60) as http:
        client = _Client(http, url)
        await client.open(f"load-{number}")
        while time.monotonic() < deadline:
            write = rng.random() < write_share
            if write and (not mine or rng.random() < 0.5):
                name = f"load-{number}-{len(mine)}"
                tool, arguments = (
                    "create_entities",
                    {"entities": [{"name": name, "entityType": "load", "observations": []}]},
                )
                acknowledged, key = report.acknowledged_entities, name
            elif write:
                target = rng.choice(mine)
                text = f"note {number}-{len(report.latencies_ms)}-{rng.random():.6f}"
                tool, arguments = "add_observations", {"observations": [{"entityName": target, "contents": [text]}]}
                acknowledged, key = report.acknowledged_observations, f"{target}\0{text}"
            elif rng.random() < 0.5:
                tool, arguments = "search_nodes", {"query": rng.choice(_WORDS), "limit": 10}
                acknowledged = None
            else:
                tool, arguments = "open_nodes", {"names": [f"seed-{rng.randrange(SEED_ENTITIES)}"]}
                acknowledged = None
            started = time.perf_counter()
            problem = await client.call(tool, arguments)
            report.latencies_ms.append((time.perf_counter() - started) * 1000)
            if problem is not None:
                report.errors.append(f"{tool}: {problem}")
            elif acknowledged is not None:
                acknowledged.add(key)
                if tool == "create_entities":
                    mine.append(key)
            else:
                report.reads += 1
        await client.close()


def _start_server(memory: str, json_response: bool) -> tuple[subprocess.Popen[bytes], str, threading.Thread]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("GRAPHMEM_")}
    env["MEMORY_FILE_PATH"] = str(memory)
    command = [sys.executable, "-m", "graphmem", "serve", "--http", "--port", "0"]
    command.append("--json-response" if json_response else "--sse-response")
    server = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert server.stderr is not None
    line = server.stderr.readline().decode("utf-8", errors="replace")
    match = _ANNOUNCE.search(line)
    if match is None:
        server.kill()
        raise RuntimeError(f"the server did not start: {line}{server.stderr.read().decode(errors='replace')}")
    # Keep reading what it logs, so a full pipe never blocks the server mid-run.
    draining = threading.Thread(target=server.stderr.read, daemon=True)
    draining.start()
    return server, match.group(1), draining


def _settings(memory: str) -> Settings:
    return Settings.from_env({}, memory_file=memory, semantic=False)


def _seed(memory: str) -> None:
    store = open_store(_settings(memory))
    try:
        KnowledgeGraph(store).create_entities(
            [
                Entity(f"seed-{i}", "seed", (f"{_WORDS[i % 10]} {_WORDS[(i * 7) % 10]} fact {i}",))
                for i in range(SEED_ENTITIES)
            ]
        )
    finally:
        store.close()


def _count(memory: str, report: LoadReport) -> None:
    """Look up, in the memory itself, every write the clients were told succeeded."""
    store = open_store(_settings(memory))
    try:
        graph = KnowledgeGraph(store).read_graph()
    finally:
        store.close()
    entities = {entity.name: entity for entity in graph.entities}
    report.stored_entities = sum(name in entities for name in report.acknowledged_entities)
    stored = {f"{entity.name}\0{text}" for entity in graph.entities for text in entity.observations}
    report.stored_observations = sum(key in stored for key in report.acknowledged_observations)


def _stop(server: subprocess.Popen[bytes], draining: threading.Thread) -> None:
    server.send_signal(signal.SIGTERM)
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
    draining.join(timeout=10)
    if server.stderr is not None:
        server.stderr.close()


def _run_on(memory: str, report: LoadReport, write_share: float, json_response: bool) -> None:
    _seed(memory)
    started: list[tuple[subprocess.Popen[bytes], str, threading.Thread]] = []
    try:
        for _ in range(report.servers):
            started.append(_start_server(memory, json_response))
        urls = [url for _, url, _ in started]

        async def drive() -> None:
            deadline = time.monotonic() + report.seconds
            # The whole run is bounded: a stuck server fails it instead of hanging.
            with anyio.fail_after(report.seconds + 60):
                async with anyio.create_task_group() as tasks:
                    for number in range(report.clients):
                        url = urls[number % len(urls)]
                        tasks.start_soon(_client, url, number, deadline, write_share, report)

        anyio.run(drive)
    finally:
        for server, _, draining in started:
            _stop(server, draining)
    _count(memory, report)


def run_load(
    clients: int,
    seconds: float,
    write_share: float = 0.3,
    json_response: bool = False,
    *,
    servers: int = 1,
    database: str | None = None,
    postgres: bool = False,
) -> LoadReport:
    """Run the load test on a fresh memory and count the writes afterwards.

    The memory is a SQLite file in a temporary folder, the database `database` names
    (which must be empty), or with `postgres` a database on a throw-away PostgreSQL server.
    """
    backend = "postgres" if database or postgres else "sqlite"
    report = LoadReport(clients=clients, seconds=seconds, servers=servers, backend=backend)
    if database is not None:
        _run_on(database, report, write_share, json_response)
    elif postgres:
        from tests.helpers_postgres import running_postgres

        with running_postgres() as server:
            _run_on(server.create_database("load"), report, write_share, json_response)
    else:
        with tempfile.TemporaryDirectory() as folder:
            _run_on(str(Path(folder) / "memory.db"), report, write_share, json_response)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=8, help="MCP sessions at once (default 8)")
    parser.add_argument("--seconds", type=float, default=20.0, help="how long to run (default 20)")
    parser.add_argument("--write-share", type=float, default=0.3, help="share of calls that write (default 0.3)")
    parser.add_argument("--json-response", action="store_true", help="have the server answer with JSON bodies")
    parser.add_argument("--servers", type=int, default=1, help="server processes sharing the memory (default 1)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--postgres", action="store_true", help="a database on a throw-away PostgreSQL server")
    where.add_argument("--database", metavar="URL", help="an empty PostgreSQL database of your own")
    args = parser.parse_args()
    report = run_load(
        args.clients,
        args.seconds,
        args.write_share,
        args.json_response,
        servers=args.servers,
        database=args.database,
        postgres=args.postgres,
    )
    for line in report.lines():
        print(line)
    for error in report.errors[:10]:
        print(f"  {error}")
    if not report.ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
