"""AppState: what the server holds while it runs, shared by every request handler."""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from mcp.server.connection import Connection
from mcp.server.subscriptions import InMemorySubscriptionBus

from graphmem.core.projects import EVERY, Scope
from graphmem.server.client_log import LogRelay
from graphmem.server.store_access import StoreAccess
from graphmem.tools import ToolContext
from graphmem.tools.answers import AnswerCache

T = TypeVar("T")


@dataclass
class AppState:
    """What the server holds while it runs: the graph and who subscribed to what."""

    tools: ToolContext
    access: StoreAccess
    """How calls reach the store: one at a time, waiting for other processes' locks between attempts."""
    subscribers: weakref.WeakKeyDictionary[Connection, set[str]] = field(default_factory=weakref.WeakKeyDictionary)
    """The resource URIs each client connection subscribed to."""
    entity_texts: dict[str, str | None] = field(default_factory=dict)
    """The last text of each subscribed entity resource, to tell whether a write changed it."""
    log_levels: weakref.WeakKeyDictionary[Connection, int] = field(default_factory=weakref.WeakKeyDictionary)
    """The Python level from which each connection that sent logging/setLevel gets log messages."""
    relay: LogRelay = field(default_factory=LogRelay)
    bus: InMemorySubscriptionBus = field(default_factory=InMemorySubscriptionBus)
    """Where resource updates go for the `subscriptions/listen` streams (protocol 2026-07-28 on)."""
    listen_streams: int = 0
    """How many `subscriptions/listen` streams are open: none, and a write publishes nothing."""
    listened: Counter[str] = field(default_factory=Counter)
    """The resource URIs the open listen streams watch, each with how many streams watch it."""
    request_log_levels: Counter[int] = field(default_factory=Counter)
    """The Python levels the calls in flight asked for log messages from (their `_meta`, 2026-07-28 on)."""
    notices_on_request_streams: bool = True
    """A caller's own notices go on its request's stream, ahead of the answer; False where an
    answer is one JSON body that carries none (HTTP with JSON answers): on its session's stream."""
    scope: Scope = EVERY
    """The projects the calls see unless a call names its own (`--project`; graphmem.core.projects)."""
    home: Path | None = None
    """The user's home directory, never a project of its own (settings.home), for the client's roots."""
    roots_pending: bool = False
    """`--project auto` found the project from the working directory, and the one client's roots
    (`roots/list`), if it offers them, are still to be asked for before its first call."""
    call_time_limit: float = 0.0
    """Seconds a tool call may run before the store stops it and rolls it back; 0: no limit."""
    answers: AnswerCache = field(default_factory=AnswerCache)
    """The answers of reusable read tools, kept while the memory is unchanged."""
    start_background: Callable[[], None] | None = None
    """Starts the background work (the embedding worker) on the first call, then is cleared."""

    def collect_logs(self) -> None:
        """Have the relay collect from the mildest level any connection or call in flight asked for."""
        wanted = [*self.log_levels.values(), *(level for level, count in self.request_log_levels.items() if count > 0)]
        self.relay.listen_from(min(wanted, default=None))

    async def run(self, fn: Callable[..., T], *args: Any, writes: bool = True) -> T:
        """Run blocking graph code where the store's calls run (see `StoreAccess.run`)."""
        if self.start_background is not None:
            start, self.start_background = self.start_background, None
            start()
        return await self.access.run(fn, *args, writes=writes)
