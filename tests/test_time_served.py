"""The change log, asOf and undo through the tools, as an agent uses them: random sequences of
tool calls over the real MCP client, then each step read back with `asOf` and the whole sequence
undone with `undo_changes`."""

from __future__ import annotations

import dataclasses
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from hypothesis import given
from hypothesis import settings as examples
from hypothesis import strategies as st
from mcp import Client

from graphmem.config import Settings
from graphmem.server import build_server

_NAMES = st.sampled_from(["Ada", "Bob", "Cy"])
_FACTS = st.sampled_from(["likes tea", "plays chess", "lives in Oslo"])
_CALLS = st.one_of(
    st.builds(
        lambda name, fact: (
            "create_entities",
            {"entities": [{"name": name, "entityType": "person", "observations": [fact]}]},
        ),
        _NAMES,
        _FACTS,
    ),
    st.builds(
        lambda name, fact: ("add_observations", {"observations": [{"entityName": name, "contents": [fact]}]}),
        _NAMES,
        _FACTS,
    ),
    st.builds(
        lambda name, fact: ("delete_observations", {"deletions": [{"entityName": name, "observations": [fact]}]}),
        _NAMES,
        _FACTS,
    ),
    st.builds(
        lambda a, b: ("create_relations", {"relations": [{"from": a, "to": b, "relationType": "knows"}]}),
        _NAMES,
        _NAMES,
    ),
    st.builds(lambda name: ("delete_entities", {"entityNames": [name]}), _NAMES),
)


def _seen(answer: Any) -> tuple[dict[str, frozenset[str]], set[tuple[str, str, str]]]:
    content = answer.structured_content
    entities = {e["name"]: frozenset(e["observations"]) for e in content["entities"]}
    return entities, {(r["from"], r["to"], r["relationType"]) for r in content["relations"]}


async def _run(calls: list[tuple[str, dict[str, Any]]]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        settings = Settings(memory_path=Path(folder) / "memory.db", semantic=False, toolset="all")
        async with Client(build_server(dataclasses.replace(settings)), mode="legacy") as client:
            steps = []
            for tool, arguments in calls:
                await client.call_tool(tool, arguments)  # a call refused (no such entity) changes nothing
                time.sleep(0.002)
                log = (await client.call_tool("list_changes", {"limit": 1})).structured_content["changes"]
                if log:
                    steps.append((log[0]["at"], _seen(await client.call_tool("read_graph", {}))))
            for at, seen in steps:
                assert _seen(await client.call_tool("read_graph", {"asOf": at})) == seen
            if steps:
                undone = await client.call_tool("undo_changes", {"since": "2000-01-01"})
                assert not undone.is_error, undone.content[0].text
                assert _seen(await client.call_tool("read_graph", {})) == ({}, set())


@examples(max_examples=15, deadline=None)
@given(calls=st.lists(_CALLS, min_size=1, max_size=8))
def test_tool_calls_are_seen_as_of_each_step_and_undone_to_nothing(calls: list[tuple[str, dict[str, Any]]]):
    anyio.run(_run, calls)
