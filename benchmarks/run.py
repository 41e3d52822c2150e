"""Side-by-side benchmark: graphmem against the official memory server, over real stdio.

    ./scripts/bench                                    # every size below, the targets, the chart
    python -m benchmarks.run --sizes 100 40000         # some sizes only
    python -m benchmarks.run --no-official             # graphmem alone
    python -m benchmarks.run --sizes 40000 --postgres  # graphmem on PostgreSQL too, beside SQLite
    python -m benchmarks.run --words-only ...          # no search by meaning: no model, no embedding

For each size (default 100; 1,000; 10,000; 40,000 and 1,000,000 entities, three
relations and three observations each, see benchmarks/graphs.py) it writes the graph
as the official JSONL file; graphmem imports that file with `graphmem import` (timed,
with its peak memory), then both servers start as subprocesses and a raw JSON-RPC pipe
client (no SDK in the measuring path) times each official tool, and graphmem's search,
traversal and save_memory, after a warm-up, alternating between the servers in short
batches. Past 100,000 entities the official server (which reads and rewrites its whole
file on every call) would take hours, so graphmem runs alone.

graphmem runs twice up to that size: on SQLite after the import (what the README
recommends), and serving the official JSONL file itself (the drop-in backend, whose
writes rewrite the whole file as the official server's do). The ratio compares the
official server with graphmem on SQLite.

With --postgres, graphmem also imports the file into a database on a throw-away
PostgreSQL server (tests/helpers_postgres.py; --database URL names an empty one of
your own) and serves it over stdio, timed in the same alternating batches as SQLite.

It prints median and p95 per operation, the cold start (process start to the
`initialize` answer, median of several starts) beside where Python's start-up time
goes, each server's peak memory and bytes on disk, then checks the figures against the
speed targets graphmem holds itself to (benchmarks/targets.py). The figures go as JSON
to benchmarks/results/, and latency against size is drawn in benchmarks/latency.png when matplotlib is installed.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.chart import draw_chart
from benchmarks.client import PipeClient, peak_memory_mb
from benchmarks.graphs import VOCABULARY, generate, write_official_jsonl
from benchmarks.targets import check_targets

if TYPE_CHECKING:
    from tests.helpers_postgres import PostgresServer

__all__ = ["PipeClient", "generate", "operations"]  # PipeClient and generate: for the other benchmarks

OFFICIAL_VERSION = "2026.8.31"
OFFICIAL_CACHE = Path.home() / ".cache" / "graphmem-bench" / "official"
RESULTS = Path(__file__).resolve().parent / "results"
CHART = Path(__file__).resolve().parent / "latency.png"
DEFAULT_SIZES = (100, 1000, 10_000, 40_000, 1_000_000)

# Past this many entities the official server would take hours: graphmem runs alone.
OFFICIAL_MAX_SIZE = 100_000
COLD_STARTS = 5


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
    prepare: Callable[[PipeClient, int], Any] | None = None
    """An untimed call made just before each timed one (a write, so a read finds the memory changed)."""


def operations(size: int) -> list[Operation]:
    """The timed calls; `i` makes each repeat touch different data."""

    def name(i: int, spread: int = 37) -> str:
        return f"entity-{i * spread % size}"

    def common_word(i: int) -> str:
        # The warm-up calls (i of 10,000 and up) take the last words of the vocabulary, the
        # timed ones the others in turn: up to 43 repeats, no word is asked twice.
        if i >= 10_000:
            return VOCABULARY[-1 - (i - 10_000) % 3]
        return VOCABULARY[i % (len(VOCABULARY) - 3)]

    return [
        Operation("ping", lambda c, i: c.request("ping")),
        Operation("open_nodes (1)", lambda c, i: c.call("open_nodes", {"names": [name(i)]})),
        Operation(
            "open_nodes (10)",
            lambda c, i: c.call("open_nodes", {"names": [f"entity-{(i * 37 + k) % size}" for k in range(10)]}),
        ),
        Operation("search_nodes (word)", lambda c, i: c.call("search_nodes", {"query": f"#{i * 37 % size}-1"})),
        # A name as a substring also finds longer names: "entity-123" finds entity-1230
        # to entity-1239 and entity-12300 on, a hundred or so entities at 40,000.
        Operation("search_nodes (name)", lambda c, i: c.call("search_nodes", {"query": name(i + 3, 7919)})),
        # A word of the vocabulary, found in about a third of the entities: graphmem ranks
        # them all and shows the best that fit its budget; the official server sends all.
        # Each call asks for another word, so no answer is one graphmem has kept.
        Operation("search_nodes (common word)", lambda c, i: c.call("search_nodes", {"query": common_word(i)})),
        # graphmem answers within its response budget (about 25,000 tokens) and says how to
        # page on; the official server sends the whole graph (20 MB at 40,000 entities).
        # Repeated on an unchanged memory, graphmem gives the answer it kept.
        Operation("read_graph", lambda c, i: c.call("read_graph", {})),
        # The same after each write (untimed), so graphmem builds every answer afresh.
        Operation(
            "read_graph (after a write)",
            lambda c, i: c.call("read_graph", {}),
            prepare=lambda c, i: c.call(
                "add_observations", {"observations": [{"entityName": name(i), "contents": [f"read after {i}"]}]}
            ),
        ),
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
                "add_observations", {"observations": [{"entityName": name(i), "contents": [f"b {i}"]}]}
            ),
        ),
        Operation(
            "delete_observations (1)",
            lambda c, i: c.call(
                "delete_observations", {"deletions": [{"entityName": name(i), "observations": [f"b {i}"]}]}
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
                "search_nodes", {"query": f"Which project did {name(i)} manage in berlin?", "limit": 10}
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
            lambda c, i: c.call("get_neighbors", {"name": name(i), "depth": 2}),
            official=False,
        ),
        Operation(
            "find_path",
            lambda c, i: c.call("find_path", {"from": name(i), "to": f"entity-{(i * 37 + size // 2) % size}"}),
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
                            "relations": [{"targetEntity": name(i), "relationType": "knows"}],
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


def _median_seconds(command: list[str], runs: int = COLD_STARTS) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def start_up_breakdown(runs: int = COLD_STARTS) -> dict[str, float]:
    """Where a fresh graphmem's start-up time goes, each the median of a few fresh processes.

    `python` is the interpreter alone; `mcp_sdk` imports the SDK's server (the floor of any
    Python MCP server); `graphmem_modules` imports everything graphmem serves with, the SDK
    included. A cold start beyond that is opening the memory and the handshake.
    """
    return {
        "python": _median_seconds([sys.executable, "-c", "pass"], runs),
        "mcp_sdk": _median_seconds([sys.executable, "-c", "import mcp.server.lowlevel"], runs),
        "graphmem_modules": _median_seconds(
            [sys.executable, "-c", "import graphmem.server, graphmem.transports"], runs
        ),
    }


def median_cold_start(command: list[str], env: dict[str, str], runs: int = COLD_STARTS) -> float:
    """Process start to the `initialize` answer, the median of a few starts."""
    starts = []
    for _ in range(runs):
        client = PipeClient(command, env)
        starts.append(client.cold_start)
        client.close()
    return statistics.median(starts)


def timed_import(jsonl: Path, db: Path | str, env: dict[str, str], show_progress: bool) -> tuple[float, float]:
    """`graphmem import` of the official file: seconds, and the import process's peak memory in MB.

    The peak is the process's own high-water mark, read while it runs: the kernel's
    rusage figure would also count this (large) benchmark process, whose memory the
    child holds between fork and exec.
    """
    command = [sys.executable, "-m", "graphmem", "import", str(jsonl), "-f", str(db)]
    if not show_progress:
        command.append("--no-progress")
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
    peak = 0.0
    while process.poll() is None:
        peak = max(peak, peak_memory_mb(process.pid) or 0.0)
        time.sleep(0.02)
    seconds = time.perf_counter() - started
    if process.returncode != 0:
        raise RuntimeError(f"graphmem import failed with exit code {process.returncode}")
    return seconds, peak


def _bytes_on_disk(db: Path) -> int:
    """The database with its write-ahead log and shared-memory index, as they stand."""
    return sum(path.stat().st_size for path in db.parent.glob(db.name + "*"))


def bench_size(
    size: int,
    repeats: int,
    official: list[str] | None,
    workdir: Path,
    cold_starts: int = COLD_STARTS,
    database: str | None = None,
    words_only: bool = False,
) -> dict[str, Any]:
    jsonl = workdir / f"official-{size}.jsonl"
    write_official_jsonl(jsonl, size)
    db = workdir / f"graphmem-{size}.db"
    base_env = {key: os.environ[key] for key in ("PATH", "HOME", "PYTHONPATH") if key in os.environ}
    if words_only:
        # The import then stops before embedding (160,000 texts at 40,000 entities take minutes), and
        # no server embeds in the background while it is timed.
        base_env["GRAPHMEM_SEMANTIC"] = "off"
    import_seconds, import_peak_mb = timed_import(jsonl, db, base_env, show_progress=size >= 100_000)

    graphmem = [sys.executable, "-m", "graphmem"]
    commands = {"graphmem": (graphmem, {**base_env, "MEMORY_FILE_PATH": str(db)})}
    if size <= OFFICIAL_MAX_SIZE:
        # graphmem serving the official file itself (the drop-in JSONL backend): every
        # write rewrites the whole file, as the official server's do.
        drop_in = workdir / f"drop-in-{size}.jsonl"
        shutil.copyfile(jsonl, drop_in)
        commands["graphmem-jsonl"] = (graphmem, {**base_env, "MEMORY_FILE_PATH": str(drop_in)})
    if database is not None:
        postgres_import_seconds, _ = timed_import(jsonl, database, base_env, show_progress=size >= 100_000)
        commands["graphmem-postgres"] = (graphmem, {**base_env, "MEMORY_FILE_PATH": database})
    if official and size <= OFFICIAL_MAX_SIZE:
        commands["official"] = (official, {**base_env, "MEMORY_FILE_PATH": str(jsonl)})
    cold_start_seconds = {
        name: median_cold_start(command, env, cold_starts) for name, (command, env) in commands.items()
    }
    servers = {name: PipeClient(command, env) for name, (command, env) in commands.items()}
    timings: dict[str, dict[str, list[float]]] = {name: {} for name in servers}
    for operation in operations(size):
        runners = {name: client for name, client in servers.items() if name != "official" or operation.official}
        for client in runners.values():
            for warm_up in range(3):
                if operation.prepare is not None:
                    operation.prepare(client, 10_000 + warm_up)
                operation.run(client, 10_000 + warm_up)
        # Alternate between the servers in short batches: call by call, the official
        # server's garbage collection after each answer would land in graphmem's timing.
        for batch in range(0, repeats, 5):
            for name, client in runners.items():
                for i in range(batch, min(batch + 5, repeats)):
                    if operation.prepare is not None:
                        operation.prepare(client, i)
                    started = time.perf_counter()
                    operation.run(client, i)
                    timings[name].setdefault(operation.name, []).append(client.answered_at - started)
    report: dict[str, Any] = {
        "size": size,
        "relations": size * 3,
        "graphmem_import_seconds": import_seconds,
        "graphmem_import_peak_memory_mb": import_peak_mb,
        "bytes_on_disk": {"graphmem": _bytes_on_disk(db), "JSONL file": jsonl.stat().st_size},
        "cold_start_seconds": cold_start_seconds,
        "peak_memory_mb": {name: client.peak_memory_mb() for name, client in servers.items()},
        "operations": {},
    }
    if database is not None:
        report["postgres_import_seconds"] = postgres_import_seconds
    for operation in operations(size):
        row = {}
        for name in servers:
            values = timings[name].get(operation.name)
            if values:
                row[name] = {"median_ms": statistics.median(values) * 1000, "p95_ms": _percentile(values, 0.95) * 1000}
        report["operations"][operation.name] = row
    for client in servers.values():
        client.close()
    for path in workdir.iterdir():
        path.unlink()  # a million-entity graph takes a gigabyte or two
    return report


@contextlib.contextmanager
def _postgres(args: argparse.Namespace) -> Iterator[PostgresServer | None]:
    """The throw-away PostgreSQL server --postgres asks for, for the whole run."""
    if not args.postgres:
        yield None
        return
    from tests.helpers_postgres import running_postgres

    with running_postgres() as server:
        yield server


def print_report(report: dict[str, Any]) -> None:
    print(f"\n{report['size']:,} entities, {report['relations']:,} relations")
    print(
        f"  graphmem import of the JSONL file: {report['graphmem_import_seconds']:.2f} s, "
        f"peak memory {report['graphmem_import_peak_memory_mb']:.0f} MB"
    )
    if "postgres_import_seconds" in report:
        print(f"  graphmem import into PostgreSQL: {report['postgres_import_seconds']:.2f} s")
    print("  cold start: " + ", ".join(f"{k} {v:.2f} s" for k, v in report["cold_start_seconds"].items()))
    print(
        "  peak memory: "
        + ", ".join(f"{k} {v:.0f} MB" for k, v in report["peak_memory_mb"].items() if v is not None)
        + "; on disk: "
        + ", ".join(f"{k} {v / 1e6:.1f} MB" for k, v in report["bytes_on_disk"].items())
    )
    drop_in = any("graphmem-jsonl" in row for row in report["operations"].values())
    postgres = any("graphmem-postgres" in row for row in report["operations"].values())
    header = f"  {'operation':<26}{'graphmem median/p95 ms':>24}"
    header += f"{'jsonl backend':>15}" if drop_in else ""
    header += f"{'postgres median/p95':>22}" if postgres else ""
    print(header + f"{'official median/p95 ms':>26}{'ratio':>9}")
    for name, row in report["operations"].items():
        if "graphmem" not in row:
            continue
        ours = row["graphmem"]
        line = f"  {name:<26}{ours['median_ms']:>12.2f} /{ours['p95_ms']:>8.2f}"
        if drop_in:
            line += f"{row['graphmem-jsonl']['median_ms']:>15.2f}" if "graphmem-jsonl" in row else " " * 15
        if postgres:
            theirs = row.get("graphmem-postgres")
            line += f"{theirs['median_ms']:>12.2f} /{theirs['p95_ms']:>8.2f}" if theirs else " " * 22
        if "official" in row:
            theirs = row["official"]
            ratio = theirs["median_ms"] / ours["median_ms"]
            line += f"{theirs['median_ms']:>15.2f} /{theirs['p95_ms']:>8.2f}{ratio:>8.1f}x"
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(DEFAULT_SIZES))
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--no-official", action="store_true", help="time graphmem alone")
    parser.add_argument(
        "--cold-starts",
        type=int,
        default=COLD_STARTS,
        help="fresh processes per start-up figure (the median is reported; 1 when checking the benchmark runs)",
    )
    parser.add_argument("--results", type=Path, default=RESULTS, help="folder for the JSON figures")
    parser.add_argument("--chart", type=Path, default=CHART, help="where to draw the chart")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--postgres", action="store_true", help="graphmem on a throw-away PostgreSQL server too")
    where.add_argument("--database", metavar="URL", help="graphmem on this empty PostgreSQL database too")
    parser.add_argument(
        "--words-only", action="store_true", help="graphmem without search by meaning (no model, no embedding)"
    )
    args = parser.parse_args()
    official = None if args.no_official else official_command()
    if official is None and not args.no_official:
        print("node/npm not found: timing graphmem alone", file=sys.stderr)
    # An installed graphmem has its bytecode compiled by pip; a checkout run with
    # PYTHONDONTWRITEBYTECODE would compile every module at each start (about 0.25 s here).
    compileall.compile_dir(Path(__file__).resolve().parents[1] / "src" / "graphmem", quiet=1)
    start_up = start_up_breakdown(args.cold_starts)
    print(
        "start-up of a fresh process (median): "
        + ", ".join(f"{name} {seconds:.2f} s" for name, seconds in start_up.items())
    )
    reports = []
    with tempfile.TemporaryDirectory(prefix="graphmem-bench-") as folder, _postgres(args) as server:
        for size in args.sizes:
            if official and size > OFFICIAL_MAX_SIZE:
                print(f"\n{size:,} entities: past {OFFICIAL_MAX_SIZE:,} the official server runs for hours")
            database = args.database
            if server is not None:
                database = server.create_database(f"bench{size}")
            report = bench_size(size, args.repeats, official, Path(folder), args.cold_starts, database, args.words_only)
            report["start_up_seconds"] = start_up
            print_report(report)
            reports.append(report)
    print()
    for line in check_targets(reports, start_up):
        print(line)
    args.results.mkdir(parents=True, exist_ok=True)
    out = args.results / f"bench-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(reports, indent=2), encoding="utf-8")
    print(f"\nfigures written to {out}")
    print(draw_chart(reports, args.chart))


if __name__ == "__main__":
    main()
