"""The explorer's HTTP app in this process, on a real memory, and an HTTP client for it.

The app is the one `serve --http` runs (`build_http_app`): the guard, the MCP endpoint and
the explorer's routes over a real server on a real SQLite file (or any backend the settings
name). Only uvicorn's socket is left out: requests go straight to the ASGI app, which is what
makes a hundred API checks cost seconds instead of a server process each. The tests that need
the process itself start it (`tests/explorer/test_served.py`, `tests/browser/`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
from starlette.types import ASGIApp, Message

from graphmem.config import NetworkSettings, Settings
from graphmem.core.identity import Identity
from graphmem.credentials import Credential
from graphmem.server import build_server
from graphmem.transports.http import build_http_app

WRITER = "alice-token-0123456789abcdef"
READER = "ci-token-0123456789abcdef"
TEAM = (Credential(WRITER, Identity("alice", can_write=True)), Credential(READER, Identity("ci", can_write=False)))
"""alice may write, ci may only read."""
BASE = "http://127.0.0.1:8765"


@asynccontextmanager
async def _lifespan(app: ASGIApp) -> AsyncIterator[None]:
    """Run the app's startup and, on the way out, its shutdown, as uvicorn does."""
    to_app, app_inbox = anyio.create_memory_object_stream[Message](4)
    app_outbox, from_app = anyio.create_memory_object_stream[Message](4)

    async def run() -> None:
        await app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, app_inbox.receive, app_outbox.send)

    async with to_app, app_inbox, app_outbox, from_app, anyio.create_task_group() as tasks:
        tasks.start_soon(run)
        with anyio.fail_after(30):
            await to_app.send({"type": "lifespan.startup"})
            started = await from_app.receive()
        assert started["type"] == "lifespan.startup.complete", started
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True), anyio.fail_after(30):
                await to_app.send({"type": "lifespan.shutdown"})
                await from_app.receive()


@asynccontextmanager
async def explorer_client(
    settings: Settings, credentials: tuple[Credential, ...] = TEAM, token: str | None = WRITER
) -> AsyncIterator[httpx2.AsyncClient]:
    """A client of the explorer served over `settings`' memory, presenting `token` (None: none)."""
    app, _ = build_http_app(build_server(settings), NetworkSettings(credentials=credentials))
    headers = {"authorization": f"Bearer {token}"} if token else {}
    async with (
        _lifespan(app),
        httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE, headers=headers) as client,
    ):
        yield client


async def ok(response_or_call: Any) -> Any:
    """The JSON of a 200 answer (awaiting the request first when given one), or a failure that shows the error."""
    response = await response_or_call if not isinstance(response_or_call, httpx2.Response) else response_or_call
    assert response.status_code == 200, response.text
    return response.json()
