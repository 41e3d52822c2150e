"""The HTTP session table: a full table makes room by ending the least recently used idle session.

The SDK's `StreamableHTTPSessionManager` ends a session after `session_idle_timeout`
seconds without a request in flight (an open GET stream and a running call count as
in flight), and answers 503 to every new client while `max_sessions` are open. One
local process opening sessions and abandoning them would then lock everyone else out
until the first ones expire. Here a new client is admitted instead, and the idle
session used least recently is ended to make room; its client gets 404 on its next
request and initializes again, as the MCP specification asks. Only when every
session is busy is a newcomer refused.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthorizationContext
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

__all__ = ["RecyclingSessionManager"]

logger = logging.getLogger(__name__)


class RecyclingSessionManager(StreamableHTTPSessionManager):
    """The SDK's session manager, ending the least recently used idle session when the table is full."""

    @property
    def state(self) -> Any:
        """What the server's lifespan yielded (its `AppState`) while it runs, or None."""
        # The SDK enters the lifespan once for every session and keeps what it yields here.
        return self._lifespan_state

    def _admit_session(self, requestor: AuthorizationContext | None) -> StreamableHTTPServerTransport | None:
        if self.max_sessions is not None and len(self._server_instances) >= self.max_sessions:
            self._end_least_recently_used()
        return super()._admit_session(requestor)

    def _end_least_recently_used(self) -> None:
        # The SDK sets an idle session's deadline to its last request's end plus the idle
        # timeout, and a busy one's to infinity: the smallest finite deadline is the
        # session unused for longest.
        oldest: tuple[float, str, StreamableHTTPServerTransport] | None = None
        for session_id, transport in self._server_instances.items():
            scope = transport.idle_scope
            if scope is None or not math.isfinite(scope.deadline) or scope.cancel_called:
                continue
            if oldest is None or scope.deadline < oldest[0]:
                oldest = (scope.deadline, session_id, transport)
        if oldest is None:
            return
        _, session_id, transport = oldest
        logger.info("ended idle session %s to make room for a new client", session_id)
        # Forgotten now, so the new session gets its slot; the cancelled scope ends the
        # session's task, which terminates the transport.
        self._server_instances.pop(session_id, None)
        self._session_owners.pop(session_id, None)
        assert transport.idle_scope is not None
        transport.idle_scope.cancel()
