"""Search by meaning through a real server: the worker embeds what clients write, off the request path.

The server answers the handshake before it loads the model, embeds in the background,
and a search made right after a write finds the new fact by words at once and by
meaning a moment later. Run over the SDK client in process and over stdio.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.helpers_clients import Connect, Serve
from tests.helpers_stdio import entity

pytestmark = pytest.mark.anyio

# Generous: the model loads about a second after the server starts, on two busy cores.
EMBEDDED_WITHIN_SECONDS = 30.0

PEOPLE = [
    entity("Bob", "relocated to Germany last spring", "plays bass in a jazz band", entity_type="person"),
    entity("Alice", "cannot eat peanuts or almonds", entity_type="person"),
    entity("Carol", "owns a red bicycle", entity_type="person"),
]


async def _search(client: Client, query: str, **options: Any) -> list[str]:
    result = await client.call_tool("search_nodes", {"query": query, **options})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return [item["name"] for item in result.structured_content["entities"]]


async def _found_by_meaning(client: Client, query: str, name: str) -> float:
    """Seconds until a semantic search's best answer is `name` (fails past the bound)."""
    started = time.monotonic()
    with anyio.fail_after(EMBEDDED_WITHIN_SECONDS):
        while await _search(client, query, mode="semantic", limit=1) != [name]:
            await anyio.sleep(0.1)
    return time.monotonic() - started


@pytest.mark.parametrize("transport", ["memory", pytest.param("stdio", marks=pytest.mark.slow)])
async def test_a_fact_written_is_found_by_words_at_once_and_by_meaning_soon_after(
    tmp_path: Path, transport: str, request: pytest.FixtureRequest
):
    from tests.helpers_clients import TRANSPORTS

    connect: Connect = TRANSPORTS[transport]
    async with connect(tmp_path / "memory.db") as client:
        created = await client.call_tool("create_entities", {"entities": PEOPLE})
        assert not created.is_error
        # Found by its words at once, first; once embedded, entities close in meaning may follow.
        assert (await _search(client, "Germany"))[0] == "Bob"
        await _found_by_meaning(client, "Who moved abroad?", "Bob")
        # The default hybrid search now finds it too, first.
        assert (await _search(client, "Who moved abroad?", limit=3))[0] == "Bob"
        await client.call_tool(
            "add_observations", {"observations": [{"entityName": "Carol", "contents": ["adopted a kitten"]}]}
        )
        await _found_by_meaning(client, "Who has a new pet cat?", "Carol")


async def test_a_server_started_without_meaning_says_how_to_search_instead(tmp_path: Path):
    from tests.helpers_clients import TRANSPORTS

    async with TRANSPORTS["memory"](tmp_path / "memory.db", Serve(semantic=False)) as client:
        await client.call_tool("create_entities", {"entities": PEOPLE})
        result = await client.call_tool("search_nodes", {"query": "Who moved abroad?", "mode": "semantic"})
        assert result.is_error
        text = result.content[0].text  # type: ignore[union-attr]
        assert "mode" in text and '"lexical" or "hybrid"' in text
        assert await _search(client, "Germany") == ["Bob"]


@pytest.mark.slow
async def test_texts_written_while_meaning_was_off_are_embedded_by_the_next_server(tmp_path: Path):
    from tests.helpers_clients import TRANSPORTS

    memory = tmp_path / "memory.db"
    async with TRANSPORTS["stdio"](memory, Serve(semantic=False)) as client:
        await client.call_tool("create_entities", {"entities": PEOPLE})
    async with TRANSPORTS["stdio"](memory) as client:
        await _found_by_meaning(client, "Which colleague has a nut allergy?", "Alice")
