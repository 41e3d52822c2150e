"""What the checks made at write time cost (docs/clean-memory.md): secrets, duplicates and
contradictions, measured as graphmem before them and graphmem now, on a large SQLite memory.

    python -m benchmarks.clean_writes                   # against the commit before the checks
    python -m benchmarks.clean_writes --before 8815ffd --size 10000 --repeats 100

The commit before the checks is checked out in a temporary git worktree; each version runs the
same writes in a process of its own, on its own copy of the memory `benchmarks.tools` builds
(and caches), in two rounds taken in turn (before, now, before, now). A write is made as the
server makes a tool call: the arguments cleaned of secrets first where the version does that.
The facts are ordinary sentences of the search quality set; the entities created have names
like people's (a given name and a surname, made up of letters). The duplicates check's name
index is built first, as a server builds it once (`python -m benchmarks.duplicates` measures
the build). Median and p95 in ms of:

- `add_observations` of one fact to one entity;
- `create_entities` of one entity with three facts;
- `create_entities` of a batch of 100 entities with three facts each.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BEFORE = "aa067ee"
"""The last commit before the checks (valid time, before secrets, duplicates and contradictions)."""


def _writes(size: int, repeats: int) -> dict[str, tuple[str, Any, int]]:
    from benchmarks.retrieval.sets import load_quality
    from benchmarks.tools import _name

    facts = [fact for memory in load_quality().memories for entity in memory.entities for fact in entity.observations]

    def fact(i: int) -> str:
        return f"{facts[i % len(facts)]} ({i})"

    def entity(name: str, i: int) -> dict[str, Any]:
        return {"name": name, "entityType": "person", "observations": [fact(i + k) for k in range(3)]}

    return {
        "add_observations, one fact": (
            "add_observations",
            lambda i: {"observations": [{"entityName": _name(i, size), "contents": [fact(i)]}]},
            repeats,
        ),
        "create_entities, one entity": (
            "create_entities",
            lambda i: {"entities": [entity(f"clean person {i}", i)]},
            repeats,
        ),
        "create_entities, 100 entities": (
            "create_entities",
            lambda i: {"entities": [entity(f"batch person {i} {j}", i + j) for j in range(100)]},
            max(10, repeats // 10),
        ),
    }


def _measure(size: int, repeats: int, label: str) -> dict[str, list[float]]:
    """Run the writes with the graphmem on sys.path, on a fresh copy of the memory."""
    from benchmarks.tools import _memory
    from graphmem.config import Settings
    from graphmem.domain.graph import KnowledgeGraph
    from graphmem.storage import open_store
    from graphmem.tools import ALL_TOOLS, ToolContext

    try:
        from graphmem.domain.secret_policy import clean_arguments
    except ImportError:  # the version before the checks
        clean_arguments = None
    specs = {spec.name: spec for spec in ALL_TOOLS}
    took: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "memory.db"
        shutil.copy(_memory(size), path)
        graph = KnowledgeGraph(open_store(Settings(memory_path=path, semantic=False)))
        ctx = ToolContext(graph)
        try:  # the name index is built once a server, first: what a write pays after that is measured
            from graphmem.domain.duplicates import name_index

            name_index(graph).buckets(graph)
        except ImportError:  # the version before the checks has none
            pass
        for what, (tool, sample, count) in _writes(size, repeats).items():
            spec = specs[tool]
            for i in range(count):
                arguments = sample(i) if "create" not in tool else _renamed(sample(i), label)
                began = time.perf_counter()
                if clean_arguments is not None:
                    arguments, _ = clean_arguments(arguments, graph.secrets)
                    with graph.texts_checked():
                        spec.run(ctx, spec.arguments.model_validate(arguments))
                else:
                    spec.run(ctx, spec.arguments.model_validate(arguments))
                took.setdefault(what, []).append((time.perf_counter() - began) * 1000)
        graph.store.close()
    return took


def _renamed(arguments: dict[str, Any], label: str) -> dict[str, Any]:
    """Each round creates entities of its own names, as people's names are: a given name and a
    surname of letters, each made up from the round and the entity (the same in both versions).
    The names a round is sent stand for none: a name's look-up keys depend on its words."""
    return {"entities": [{**item, "name": _person(f"{label} {item['name']}")} for item in arguments["entities"]]}


def _person(seed: str) -> str:
    digest = hashlib.sha256(seed.encode()).digest()
    given, surname = (
        "".join(string.ascii_lowercase[byte % 26] for byte in digest[start : start + length]).capitalize()
        for start, length in ((0, 3 + digest[30] % 5), (10, 4 + digest[31] % 6))
    )
    return f"{given} {surname}"


def _worktree(commit: str, folder: Path) -> Path:
    target = folder / "before"
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(target), commit], check=True, capture_output=True
    )
    return target


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.clean_writes", description=__doc__)
    parser.add_argument("--before", default=BEFORE, help="the commit to compare with (default: before the checks)")
    parser.add_argument("--size", type=int, default=40_000)
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--run", help=argparse.SUPPRESS)  # a child process: "label" of the round
    args = parser.parse_args(argv)
    if args.run is not None:
        print(json.dumps(_measure(args.size, args.repeats, args.run)))
        return
    from benchmarks.tools import _memory

    _memory(args.size)  # built once, here, before either version copies it
    results: dict[str, dict[str, list[float]]] = {"before": {}, "now": {}}
    with tempfile.TemporaryDirectory() as folder:
        before = _worktree(args.before, Path(folder))
        try:
            for round_ in range(2):
                for version, source in (("before", before), ("now", ROOT)):
                    environment = {**os.environ, "PYTHONPATH": f"{source / 'src'}{os.pathsep}{ROOT}"}
                    command = [sys.executable, "-m", "benchmarks.clean_writes", "--size", str(args.size)]
                    command += ["--repeats", str(args.repeats), "--run", f"{version}{round_}"]
                    done = subprocess.run(
                        command, env=environment, cwd=ROOT, check=True, capture_output=True, text=True
                    )
                    for what, values in json.loads(done.stdout.splitlines()[-1]).items():
                        results[version].setdefault(what, []).extend(values)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(before)], check=False)
    print(f"writes on {args.size:,} entities (SQLite), ms: median / p95, before ({args.before}) and now")
    print("| write | before | now |\n|---|---|---|")
    for what in results["now"]:
        cells = []
        for version in ("before", "now"):
            values = results[version][what]
            cells.append(f"{statistics.median(values):.2f} / {statistics.quantiles(values, n=20)[-1]:.2f}")
        print(f"| {what} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
