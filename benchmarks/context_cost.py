"""What an agent pays in context: the tool listing per toolset, and the answer of each common read.

    python -m benchmarks.context_cost               # a 2,000-entity memory written through the tools
    python -m benchmarks.context_cost --size 500

Every byte of `tools/list` is in the model's context on every call, and every byte of an
answer once it is read. The listing is measured as compact JSON of the real answer through
the MCP SDK client; an answer as the text items the model is shown (what a client puts in
the context), and its structuredContent as compact JSON beside it. Tokens are bytes / 4, a
rough figure for English and JSON.

The memory is `benchmarks.search.realistic` (people, companies and projects with observations
from sentence templates), written through create_entities and create_relations so that it
carries the metadata a real one has (creation times, versions, observation ids); read_graph
runs on a separate 30-entity memory, since a plain read_graph is for small memories.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from benchmarks.search import realistic
from graphmem.config import Settings
from graphmem.core.models import Entity, Relation
from graphmem.server import build_server

__all__ = ["listing_bytes", "main"]

TOOLSETS = ("official", "default", "all")
_BATCH = 500


def _compact(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


async def listing_bytes(client: Client) -> tuple[int, int]:
    """The compact JSON size of the tools/list answer, and how many tools it lists."""
    tools = (await client.list_tools()).tools
    wire = [tool.model_dump(by_alias=True, exclude_none=True, mode="json") for tool in tools]
    return _compact({"tools": wire}), len(tools)


async def _fill(client: Client, entities: list[Entity], relations: list[Relation]) -> None:
    for start in range(0, len(entities), _BATCH):
        batch = [entity.to_wire() for entity in entities[start : start + _BATCH]]
        await client.call_tool("create_entities", {"entities": batch})
    for start in range(0, len(relations), _BATCH):
        batch = [relation.to_wire() for relation in relations[start : start + _BATCH]]
        await client.call_tool("create_relations", {"relations": batch})


def _shown(structured: dict[str, Any]) -> int:
    """How many entities an answer shows (1 for a single-entity answer)."""
    for key in ("entities", "names", "summary"):
        if isinstance(structured.get(key), list):
            return sum(1 for item in structured[key] if item is not None)
    return 1 if "entity" in structured or "entityType" in structured else 0


async def _measure(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, (tool, result.content)
    text = sum(len(item.text.encode("utf-8")) for item in result.content if item.type == "text")
    structured = result.structured_content or {}
    return {"text": text, "structured": _compact(structured), "shown": _shown(structured)}


def _calls(entities: list[Entity], relations: list[Relation]) -> list[tuple[str, dict[str, Any]]]:
    person = next(entity for entity in entities if entity.entity_type == "person")
    hub = max({r.to for r in relations}, key=lambda name: sum(r.to == name for r in relations[:3000]))
    names = [entity.name for entity in entities[:5]]
    return [
        ("search_nodes", {"query": "Berlin", "limit": 10}),
        ("search_nodes", {"query": "who enjoys sailing in Lisbon"}),
        ("open_nodes", {"names": names}),
        ("get_entity", {"name": person.name}),
        ("describe_entity", {"name": person.name}),
        ("describe_entity", {"name": hub}),
        ("get_context_info", {"entityNames": names[:2]}),
        ("get_neighbors", {"name": person.name}),
        ("search_relations", {"to": hub, "limit": 10}),
        ("find_path", {"from": names[0], "to": names[1]}),
        ("query_nodes", {"entityType": "company", "limit": 10}),
    ]


def _row(label: str, figures: dict[str, Any]) -> str:
    per = f"{figures['text'] / figures['shown']:>9,.0f}" if figures["shown"] else f"{'-':>9}"
    return (
        f"  {label:<52} {figures['text']:>9,} {figures['text'] // 4:>8,} {figures['shown']:>6} {per} "
        f"{figures['structured']:>10,}"
    )


async def _run(size: int) -> None:
    with tempfile.TemporaryDirectory(prefix="graphmem-context-") as folder:
        settings = Settings(memory_path=Path(folder) / "memory.db")
        print("tools/list, compact JSON:")
        print(f"  {'toolset':<10} {'tools':>5} {'bytes':>8} {'~tokens':>8}")
        for toolset in TOOLSETS:
            async with Client(build_server(dataclasses.replace(settings, toolset=toolset)), mode="legacy") as client:
                size_bytes, count = await listing_bytes(client)
            print(f"  {toolset:<10} {count:>5} {size_bytes:>8,} {size_bytes // 4:>8,}")

        entities, relations = realistic(size)
        small_entities, small_relations = realistic(30, seed=5)
        print(f"\nAnswers on a {size:,}-entity memory ({len(relations):,} relations); read_graph on 30 entities:")
        print(f"  {'call':<52} {'text B':>9} {'~tokens':>8} {'shown':>6} {'B/entity':>9} {'struct B':>10}")
        async with Client(build_server(dataclasses.replace(settings, toolset="all")), mode="legacy") as client:
            await _fill(client, entities, relations)
            for tool, arguments in _calls(entities, relations):
                label = f"{tool} {json.dumps(arguments, ensure_ascii=False)}"
                label = label if len(label) <= 52 else label[:49] + "..."
                print(_row(label, await _measure(client, tool, arguments)))
        small = dataclasses.replace(settings, memory_path=Path(folder) / "small.db")
        async with Client(build_server(small), mode="legacy") as client:
            await _fill(client, small_entities, small_relations)
            for arguments in ({}, {"mode": "names"}, {"mode": "summary"}):
                print(_row(f"read_graph {json.dumps(arguments)}", await _measure(client, "read_graph", arguments)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=2_000)
    args = parser.parse_args()
    anyio.run(_run, args.size)


if __name__ == "__main__":
    main()
