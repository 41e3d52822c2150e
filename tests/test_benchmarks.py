"""The benchmark suite keeps working: it is how the README's figures are made."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from benchmarks.client import PipeClient
from benchmarks.graphs import generate, write_official_jsonl
from benchmarks.run import operations
from benchmarks.targets import check_targets

from graphmem.config import Settings
from graphmem.domain.graph import KnowledgeGraph
from graphmem.storage import open_store

ROOT = Path(__file__).resolve().parent.parent


def test_the_streamed_benchmark_file_holds_the_generated_graph(tmp_path: Path):
    entities, relations = generate(200)
    jsonl = tmp_path / "memory.jsonl"
    write_official_jsonl(jsonl, 200)
    store = open_store(Settings.from_env({"MEMORY_FILE_PATH": str(jsonl)}))
    graph = KnowledgeGraph(store).read_graph()
    store.close()
    assert [(e.name, e.entity_type, e.observations) for e in graph.entities] == [
        (e.name, e.entity_type, e.observations) for e in entities
    ]
    assert [r.key for r in graph.relations] == [r.key for r in relations]
    # Three relations of three different types per entity: none repeats.
    assert len({r.key for r in relations}) == 3 * 200


def _report(size: int, medians: dict[str, tuple[float, float | None]], **overrides: object) -> dict[str, object]:
    operations_ = {
        name: {"graphmem": {"median_ms": ours}} | ({"official": {"median_ms": theirs}} if theirs else {})
        for name, (ours, theirs) in medians.items()
    }
    report: dict[str, object] = {
        "size": size,
        "graphmem_import_seconds": 3.0,
        "graphmem_import_peak_memory_mb": 60.0,
        "peak_memory_mb": {"graphmem": 80.0},
        "cold_start_seconds": {"graphmem": 0.5},
        "operations": operations_,
    }
    report.update(overrides)
    return report


def test_the_targets_name_the_operation_that_misses():
    medians = {name: (1.0, 200.0) for name in ("ping", "open_nodes (1)", "create_entities (1)")}
    medians["search_nodes (word)"] = (4.0, 300.0)  # 75x: under the 100x target
    medians["search_nodes (question)"] = (12.0, None)  # over the 10 ms target
    lines = check_targets([_report(40_000, medians)], {"python": 0.02, "mcp_sdk": 0.5, "graphmem_modules": 0.6})
    text = "\n".join(lines)
    assert "MISS  every official tool at least 100x faster: lowest search_nodes (word) 75x" in text
    assert "MISS  search_nodes at most 10 ms median: slowest search_nodes (question) 12.00 ms" in text
    assert "PASS  a point read or single write at most 2 ms median" in text
    assert "PASS  importing the JSONL file at most 10 s" in text
    assert "1,000,000 entities: not measured in this run" in text
    assert "PASS  cold start within 0.2 s of importing the MCP SDK" in text


def test_the_official_server_may_win_at_no_size():
    fast = {name: (1.0, 2.0) for name in ("ping", "open_nodes (1)", "read_graph")}
    close = fast | {"search_nodes (common word)": (5.0, 4.5)}  # the official server wins here
    reports = [_report(100, fast), _report(1_000, close)]
    text = "\n".join(check_targets(reports, {"python": 0.02, "mcp_sdk": 0.5, "graphmem_modules": 0.6}))
    assert (
        "MISS  every official tool at least as fast as the official server, at every size: "
        "lowest search_nodes (common word) at 1,000 entities 0.900x"
    ) in text
    assert "ping round trip (the protocol layer's cost): graphmem 1.000 ms, official 2.000 ms" in text
    reports[1] = _report(1_000, fast)
    text = "\n".join(check_targets(reports, {"python": 0.02, "mcp_sdk": 0.5, "graphmem_modules": 0.6}))
    assert "PASS  every official tool at least as fast as the official server, at every size: lowest" in text


def test_every_operation_the_benchmark_times_succeeds_on_graphmem(tmp_path: Path):
    # The timed calls, run once each through the tools: a call the server rejects would
    # make the benchmark time an error message.
    jsonl = tmp_path / "memory.jsonl"
    write_official_jsonl(jsonl, 50)
    env = {"PATH": os.environ["PATH"], "MEMORY_FILE_PATH": str(tmp_path / "memory.db")}
    subprocess.run([sys.executable, "-m", "graphmem", "import", str(jsonl), "--no-progress"], env=env, check=True)
    client = PipeClient([sys.executable, "-m", "graphmem"], env)
    try:
        for operation in operations(50):
            if operation.prepare is not None:
                operation.prepare(client, 1)
            operation.run(client, 1)  # raises on a tool error
    finally:
        client.close()


@pytest.mark.slow
def test_the_benchmark_runs_end_to_end_and_writes_its_figures(tmp_path: Path):
    results = tmp_path / "results"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.run", "--sizes", "30", "60", "--repeats", "2", "--no-official"]
        # One fresh process per start-up figure: the test checks the run and its report, not
        # the medians, and each start costs a second or two of CPU (5 per figure by default).
        + ["--cold-starts", "1"]
        + ["--results", str(results), "--chart", str(tmp_path / "chart.png")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "targets:" in done.stdout
    (figures,) = results.glob("bench-*.json")
    reports = json.loads(figures.read_text(encoding="utf-8"))
    assert [report["size"] for report in reports] == [30, 60]
    for report in reports:
        assert set(report["operations"]) == {operation.name for operation in operations(report["size"])}
        assert all(row["graphmem"]["median_ms"] > 0 for row in report["operations"].values())
        assert report["bytes_on_disk"]["graphmem"] > 0
        assert report["graphmem_import_seconds"] > 0
        assert report["cold_start_seconds"]["graphmem"] > 0


@pytest.mark.slow
def test_the_load_benchmark_runs_clients_at_once_with_no_errors_and_every_write_stored():
    from benchmarks.load import run_load

    report = run_load(clients=3, seconds=2, write_share=0.5)
    assert report.errors == []
    assert report.calls > 0
    assert report.writes_acknowledged > 0
    assert report.writes_acknowledged == report.writes_stored
    assert "errors: 0" in "\n".join(report.lines())


@pytest.mark.slow
def test_the_load_benchmark_deals_clients_out_among_two_servers_on_one_sqlite_file_and_stores_every_write():
    from benchmarks.load import run_load

    report = run_load(clients=4, seconds=2, write_share=0.5, servers=2)
    assert report.errors == []
    assert report.writes_acknowledged > 0
    assert report.writes_acknowledged == report.writes_stored
    assert "on 2 server(s) sharing one sqlite memory" in "\n".join(report.lines())
