"""Per-tool latency in process, on a large generated memory: is every tool fast at scale?

    python -m benchmarks.tools                      # 40,000 entities, 120,000 relations
    python -m benchmarks.tools --size 10000 --repeats 50

It builds (once, cached under ~/.cache/graphmem-bench) a SQLite memory from the same
generator as `benchmarks.run`, copies it, and calls every tool graphmem has through its
ToolSpec (argument parsing, the graph, the answer's JSON text), without the protocol,
so the figures show what each tool itself costs. Write tools change the copy; every call
writes something new, so no call is a no-op. Last, it links one entity to 5,000 others and
times the entity and traversal tools at and through that hub, their worst case.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.run import generate
from graphmem.config import Settings
from graphmem.domain.graph import KnowledgeGraph
from graphmem.storage import open_store
from graphmem.tools import ALL_TOOLS, ToolContext, ToolSpec

CACHE = Path.home() / ".cache" / "graphmem-bench"

Sample = Callable[[int, int], dict[str, Any]]
"""Arguments for call number i on a memory of `size` entities."""


def _name(i: int, size: int) -> str:
    # Spread the calls over the memory, away from the first entities a cache would hold.
    return f"entity-{(i * 7919) % size}"


def _far(i: int, size: int) -> str:
    # Half the memory away from _name(i): no relation the benchmark made links the two.
    return f"entity-{(i * 7919 + size // 2) % size}"


SAMPLES: dict[str, Sample] = {
    "create_entities": lambda i, size: {
        "entities": [{"name": f"bench-new-{i}", "entityType": "person", "observations": ["fresh"]}]
    },
    "create_relations": lambda i, size: {
        "relations": [{"from": _name(i, size), "to": _name(i + 1, size), "relationType": f"bench_{i}"}]
    },
    "add_observations": lambda i, size: {"observations": [{"entityName": _name(i, size), "contents": [f"new {i}"]}]},
    "delete_observations": lambda i, size: {
        "deletions": [{"entityName": _name(i, size), "observations": [f"new {i}"]}]
    },
    "delete_relations": lambda i, size: {
        "relations": [{"from": _name(i, size), "to": _name(i + 1, size), "relationType": f"bench_{i}"}]
    },
    "delete_entities": lambda i, size: {"entityNames": [f"bench-new-{i}"]},
    "read_graph": lambda i, size: {"offset": (i * 97) % size, "limit": 20},
    "search_nodes": lambda i, size: {
        "query": ["berlin coffee", "Who manages the database release?"][i % 2],
        "limit": 10,
    },
    "open_nodes": lambda i, size: {"names": [_name(i, size), _name(i + 3, size)]},
    "get_context_info": lambda i, size: {"entityNames": [_name(i, size)]},
    "export_graph": lambda i, size: {"format": "dot"},
    "get_entity": lambda i, size: {"name": _name(i, size)},
    "batch_get_entities": lambda i, size: {"names": [_name(i + n, size) for n in range(10)]},
    "describe_entity": lambda i, size: {"name": _name(i, size)},
    "list_entity_types": lambda i, size: {},
    "list_relation_types": lambda i, size: {},
    "graph_stats": lambda i, size: {},
    "search_relations": lambda i, size: {"from": _name(i, size)},
    "get_neighbors": lambda i, size: {"name": _name(i, size), "depth": 2},
    "find_path": lambda i, size: {"from": _name(i, size), "to": _far(i, size)},
    "find_relation_path": lambda i, size: {"from": _name(i, size), "to": _far(i, size)},
    "find_all_paths": lambda i, size: {"from": _name(i, size), "to": _far(i, size), "maxDepth": 4},
    "extract_subgraph": lambda i, size: {"names": [_name(i, size), _name(i + 1, size)], "depth": 1},
    "upsert_entities": lambda i, size: {
        "entities": [{"name": _name(i, size), "entityType": "person", "observations": [f"upserted {i}"]}]
    },
    "update_entities": lambda i, size: {"entities": [{"name": _name(i, size), "entityType": f"kind-{i % 3}"}]},
    # Renames the relation create_relations made in call i.
    "update_relations": lambda i, size: {
        "relations": [
            {
                "from": _name(i, size),
                "to": _name(i + 1, size),
                "relationType": f"bench_{i}",
                "newRelationType": f"bench_renamed_{i}",
            }
        ]
    },
    "merge_entities": lambda i, size: {"source": f"bench-new-{i}", "target": _name(i, size)},
    "save_memory": lambda i, size: {
        "entities": [
            {
                "name": f"bench-saved-{i}",
                "entityType": "Person",
                "observations": ["Lives in Oslo", f"Joined in {2000 + i % 25}"],
                "relations": [{"targetEntity": _name(i, size), "relationType": "knows"}],
            }
        ],
        "threadId": "bench",
    },
    "get_observation_history": lambda i, size: {"entityName": _name(i, size), "observationId": "obs_1"},
    "get_analytics": lambda i, size: {} if i % 2 else {"threadId": "bench"},
}

# Too slow to repeat at every size, or changing the memory wholesale: timed once.
ONCE = {"compact"}


def _memory(size: int) -> Path:
    path = CACHE / f"tools-{size}.db"
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        entities, relations = generate(size)
        building = path.with_suffix(".building")
        building.unlink(missing_ok=True)
        store = open_store(Settings(memory_path=building))
        KnowledgeGraph(store).import_graph(entities, relations)
        store.close()
        building.rename(path)
    return path


def _call(spec: ToolSpec, ctx: ToolContext, arguments: dict[str, Any]) -> float:
    started = time.perf_counter()
    output = spec.run(ctx, spec.arguments.model_validate(arguments))
    _ = output.text
    return time.perf_counter() - started


HUB_DEGREE = 5_000

# The worst cases of the entity and traversal tools: calls at or through one entity
# related to 5,000 others.
HUB_CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "describe_entity": ("describe_entity", {"name": "bench-hub"}),
    "search_relations": ("search_relations", {"from": "bench-hub"}),
    "get_neighbors depth 1": ("get_neighbors", {"name": "bench-hub"}),
    "get_neighbors depth 2": ("get_neighbors", {"name": "bench-hub", "depth": 2}),
    "extract_subgraph depth 1": ("extract_subgraph", {"names": ["bench-hub"]}),
    "find_path through it": ("find_path", {"from": "entity-13", "to": "entity-26000"}),
    "find_all_paths through it": ("find_all_paths", {"from": "entity-13", "to": "entity-26000"}),
}


def _time_hub(ctx: ToolContext, size: int, repeats: int) -> None:
    by_name = {spec.name: spec for spec in ALL_TOOLS}
    hub = {"name": "bench-hub", "entityType": "hub", "observations": ["links everything"]}
    _call(by_name["create_entities"], ctx, {"entities": [hub]})
    for start in range(0, HUB_DEGREE, 1000):
        links = [
            {"from": "bench-hub", "to": f"entity-{(n * 13) % size}", "relationType": "links"}
            for n in range(start + 1, start + 1001)
        ]
        _call(by_name["create_relations"], ctx, {"relations": links})
    print(f"  a hub related to {HUB_DEGREE:,} entities:")
    for label, (tool, arguments) in HUB_CALLS.items():
        times = sorted(_call(by_name[tool], ctx, arguments) for _ in range(max(3, repeats // 3)))
        p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
        print(f"  {label:<26}{statistics.median(times) * 1000:>8.2f}{p95 * 1000:>10.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=40_000)
    parser.add_argument("--repeats", type=int, default=30)
    options = parser.parse_args()

    source = _memory(options.size)
    # A private copy per run, so two runs at once never write to the same file.
    workdir = Path(tempfile.mkdtemp(prefix=f"tools-{options.size}-", dir=CACHE))
    work = workdir / "memory.db"
    shutil.copyfile(source, work)
    store = open_store(Settings(memory_path=work))
    ctx = ToolContext(KnowledgeGraph(store), response_budget=25_000)
    print(f"{options.size:,} entities, in process, median and p95 of {options.repeats} calls (ms)")
    print(f"  {'tool':<24}{'median':>10}{'p95':>10}")
    # Creates first and deletes last, so each delete finds what a create made.
    order = sorted(ALL_TOOLS, key=lambda spec: (spec.name.startswith("delete"), spec.name == "merge_entities"))
    for spec in order:
        if spec.name in ONCE:
            print(f"  {spec.name:<24}{_call(spec, ctx, {}) * 1000:>10.1f}{'(once)':>10}")
            continue
        sample = SAMPLES.get(spec.name)
        if sample is None:
            print(f"  {spec.name:<24}{'no sample arguments: add one to SAMPLES':>30}")
            continue
        if spec.name == "merge_entities":
            # Each merge consumes its source: make the sources first.
            create = next(s for s in ALL_TOOLS if s.name == "create_entities")
            for i in range(options.repeats + 1):
                _call(create, ctx, SAMPLES["create_entities"](10_000 + i, options.size))
            times = [_call(spec, ctx, sample(10_000 + i, options.size)) for i in range(options.repeats)]
        else:
            _call(spec, ctx, sample(options.repeats, options.size))  # warm-up
            times = [_call(spec, ctx, sample(i, options.size)) for i in range(options.repeats)]
        times.sort()
        p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
        print(f"  {spec.name:<24}{statistics.median(times) * 1000:>10.2f}{p95 * 1000:>10.2f}")
    _time_hub(ctx, options.size, options.repeats)
    store.close()
    shutil.rmtree(workdir)


if __name__ == "__main__":
    main()
