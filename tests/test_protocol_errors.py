"""Requests the server cannot serve get an error that says what was wrong and what to send, in valid JSON.

On stdio (a real process, raw lines) and over Streamable HTTP: ids JSON cannot write
back (`1e400`), parse errors (whose id must be null), requests before `initialize`,
params that do not fit the method, and an unknown `MCP-Protocol-Version` header.
"""

from __future__ import annotations

import errno
import json
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

import graphmem.storage.jsonl.store
from graphmem.config import Settings
from graphmem.core.errors import StorageError
from graphmem.core.models import Entity
from graphmem.domain.graph import KnowledgeGraph
from graphmem.storage import open_store
from tests.helpers_network import network_server
from tests.helpers_stdio import INITIALIZE, INITIALIZED, entity, raw_server
from tests.test_durability import stored_graph

pytestmark = pytest.mark.anyio

ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def _json_line(raw: bytes) -> dict[str, Any]:
    """A line the server wrote, read by a strict JSON parser (no Infinity, no NaN)."""

    def refuse(name: str) -> Any:
        raise AssertionError(f"{name} is not JSON: {raw!r}")

    message = json.loads(raw, parse_constant=refuse)
    assert isinstance(message, dict)
    return message


@pytest.mark.slow
async def test_stdio_answers_bad_ids_and_parse_errors_with_a_null_id_in_valid_json(tmp_path: Path):
    with anyio.fail_after(30):
        async with raw_server(tmp_path / "m.db") as server:
            await server.initialize()
            answers = []
            for raw in (
                b'{"jsonrpc":"2.0","id":1e400,"method":"ping"}',
                b'{"jsonrpc":"2.0","id":-1e400,"method":"ping"}',
                b'{"jsonrpc":"2.0","id":7,"method":"ping"',
                b'{"jsonrpc":"2.0","id":8,"method":"ping","params":{"x":\xff}}',
            ):
                await server.send_line(raw)
                answers.append(_json_line(await server.receive_line()))
            assert (await server.request("ping"))["result"] == {}
    assert [answer["id"] for answer in answers] == [None, None, None, None]
    assert [answer["error"]["code"] for answer in answers] == [-32600, -32600, -32700, -32700]
    assert "beyond the range of JSON numbers" in answers[0]["error"]["message"]


@pytest.mark.slow
async def test_stdio_says_what_to_send_before_initialize_and_for_params_that_do_not_fit(tmp_path: Path):
    with anyio.fail_after(30):
        async with raw_server(tmp_path / "m.db") as server:
            early = await server.request("tools/call", {"name": "read_graph", "arguments": {}})
            await server.send(INITIALIZE)
            await server.answer(INITIALIZE["id"])
            await server.send(INITIALIZED)
            not_an_object = await server.request("tools/call", {"name": "read_graph", "arguments": [1]})
            no_params = await server.request("tools/call")
            no_name = await server.request("tools/call", {"arguments": {}})
            no_uri = await server.request("resources/read", {})
    assert "before initialize" in early["error"]["message"]
    assert "Send initialize first" in early["error"]["message"]
    # Invalid request, as its message says: nothing is wrong with its params.
    assert early["error"]["code"] == -32600
    assert "params.arguments must be an object" in not_an_object["error"]["message"]
    assert "params missing" in no_params["error"]["message"]
    assert "params.name missing" in no_name["error"]["message"]
    assert "params.uri missing" in no_uri["error"]["message"]
    for answer in (not_an_object, no_params, no_name):
        assert '{"name": "read_graph", "arguments": {}}' in answer["error"]["message"]
        assert answer["error"]["code"] == -32602


async def _http_session(http: httpx2.AsyncClient, url: str) -> dict[str, str]:
    opened = await http.post(url, content=json.dumps(INITIALIZE), headers=ACCEPT)
    assert opened.status_code == 200
    headers = ACCEPT | {"mcp-session-id": opened.headers["mcp-session-id"]}
    await http.post(url, content=json.dumps(INITIALIZED), headers=headers)
    return headers


def _create_entities(request_id: int, *entities: dict[str, Any]) -> dict[str, Any]:
    """A tools/call request of create_entities, as a JSON-RPC message."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "create_entities", "arguments": {"entities": list(entities)}},
    }


@pytest.mark.slow
async def test_http_refuses_an_id_json_cannot_write_back_instead_of_never_answering(tmp_path: Path):
    memory = tmp_path / "m.db"
    with anyio.fail_after(30):
        async with network_server(memory, "--http") as server, httpx2.AsyncClient() as http:
            headers = await _http_session(http, server.url)
            body = json.dumps(_create_entities(1)).replace('"id": 1', '"id": 1e400')
            infinite = await http.post(server.url, content=body, headers=headers)
            broken = await http.post(server.url, content=b'{"jsonrpc":"2.0","id":5,"method":"ping"', headers=headers)
    assert infinite.status_code == 400
    assert _json_line(infinite.content)["id"] is None
    assert "string or an integer" in infinite.json()["error"]["message"]
    assert broken.status_code == 400
    assert _json_line(broken.content)["id"] is None
    assert broken.json()["error"]["code"] == -32700


@pytest.mark.slow
async def test_http_refuses_an_unknown_protocol_version_header_as_protocol_2026_asks(tmp_path: Path):
    with anyio.fail_after(30):
        async with network_server(tmp_path / "m.db", "--http") as server, httpx2.AsyncClient() as http:
            headers = await _http_session(http, server.url)
            ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
            bad = await http.post(server.url, json=ping, headers=headers | {"mcp-protocol-version": "1999-01-01"})
            good = await http.post(server.url, json=ping, headers=headers | {"mcp-protocol-version": "2025-11-25"})
    assert bad.status_code == 400
    answer = bad.json()
    # -32022 with the versions supported and the one asked for, answering the request's own id.
    assert answer["id"] == 2
    assert answer["error"]["code"] == -32022
    assert answer["error"]["data"] == {"supported": ["2026-07-28"], "requested": "1999-01-01"}
    message = answer["error"]["message"]
    assert "MCP-Protocol-Version" in message and "1999-01-01" in message and "2025-11-25" in message
    assert "_meta" not in message
    assert good.status_code == 200


@pytest.mark.slow
async def test_http_answers_415_for_a_body_not_sent_as_json_and_400_for_params_that_do_not_fit(tmp_path: Path):
    memory = tmp_path / "m.db"
    with anyio.fail_after(30):
        async with network_server(memory, "--http") as server, httpx2.AsyncClient() as http:
            headers = await _http_session(http, server.url)
            create = _create_entities(3, entity("Ada"))
            as_text = await http.post(server.url, json=create, headers=headers | {"content-type": "text/plain"})
            string_arguments = {**create, "params": {"name": "create_entities", "arguments": "Ada"}}
            as_string = await http.post(server.url, json=string_arguments, headers=headers)
            no_params = await http.post(server.url, json={**create, "params": None}, headers=headers)
            with_charset = headers | {"content-type": "application/json; charset=utf-8"}
            listing = {"jsonrpc": "2.0", "id": 4, "method": "tools/list"}
            listed = await http.post(server.url, json=listing, headers=with_charset)
    assert as_text.status_code == 415
    assert "Content-Type: application/json" in as_text.json()["error"]["message"]
    assert as_string.status_code == 400
    assert as_string.json()["id"] == 3
    assert as_string.json()["error"]["code"] == -32602
    assert "params.arguments must be an object" in as_string.json()["error"]["message"]
    assert no_params.status_code == 400
    assert "params missing" in no_params.json()["error"]["message"]
    assert listed.status_code == 200
    # None of the refused calls wrote.
    assert stored_graph(memory).entities == ()


def test_a_full_disk_under_a_jsonl_memory_says_so_and_keeps_the_memory(tmp_path: Path, monkeypatch):
    memory = tmp_path / "memory.jsonl"
    store = open_store(Settings(memory_path=memory))
    graph = KnowledgeGraph(store)
    graph.create_entities([Entity("kept", "t", ("x",))])

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    # The disk fills as the new file is flushed to it: where ENOSPC surfaces on a real one.
    monkeypatch.setattr(graphmem.storage.jsonl.store.os, "fsync", full)
    with pytest.raises(StorageError) as raised:
        graph.create_entities([Entity("lost", "t", ())])
    monkeypatch.undo()
    store.close()
    message = str(raised.value)
    assert "None" not in message
    assert "disk holding the memory is full" in message and "Free some space" in message
    reopened = open_store(Settings(memory_path=memory))
    try:
        assert [entity.name for entity in KnowledgeGraph(reopened).read_graph().entities] == ["kept"]
    finally:
        reopened.close()
