"""The HTTP session table: a full table makes room by ending the least recently used idle session.

The SDK's `StreamableHTTPSessionManager` ends a session after `session_idle_timeout`
seconds without a request in flight (an open GET stream and a running call count as
in flight), and answers 503 to every new client while `max_sessions` are open. One
local process opening sessions and abandoning them would then lock everyone else out
until the first ones expire. Here a new client is admitted instead, and the idle
session used least recently is ended to make room; its client gets 404 on its next
request and initializes again, as the MCP specification asks. Only when every
session is busy is a newcomer refused.

A session belongs to the token that opened it. A request on its id with another
token, a read-only one included, gets 404 "Session not found", exactly what an
unknown id gets, so it cannot use, end or even learn of another person's session
(the SDK compares the `AuthorizationContext` of each request with its session's
owner; here the owner is the name of the token `RequestGuard` identified).

Session ids are kept out of the log: with the token they were a way in, and on
their own they still say who is connected when. Neither these lines nor the SDK's
(it logs every id it creates, ends or refuses) print one.
"""

from __future__ import annotations

import logging
import math
import re
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, AuthorizationContext
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.types import Receive, Scope, Send

from graphmem.config import Identity
from graphmem.server.access import IDENTITY_KEY

__all__ = ["RecyclingSessionManager", "SessionIdFilter"]

logger = logging.getLogger(__name__)

# The SDK's modules that put session ids in their log lines.
_SDK_LOGGERS = ("mcp.server.streamable_http_manager", "mcp.server.streamable_http")

# The SDK's session ids are uuid4().hex; a client may send any id, so any long hex run goes.
_SESSION_ID = re.compile(r"[0-9a-fA-F]{32,}")


class SessionIdFilter(logging.Filter):
    """Takes session ids out of log lines, leaving the rest of the line as it was."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = _SESSION_ID.sub("(session id not shown)", message)
        if redacted != message:
            record.msg, record.args = redacted, None
        return True


def _hide_session_ids() -> None:
    for name in _SDK_LOGGERS:
        sdk_logger = logging.getLogger(name)
        if not any(isinstance(existing, SessionIdFilter) for existing in sdk_logger.filters):
            sdk_logger.addFilter(SessionIdFilter())


def _owner(identity: Identity) -> AuthenticatedUser:
    """The principal the SDK binds a session to: the token's name (names are unique in a tokens file)."""
    # The token itself is not copied here: the name tells the holders apart, and the single
    # token of --token-file, which has no name, is the only token there is.
    name = identity.name if identity.name is not None else "(the single token)"
    return AuthenticatedUser(AccessToken(token="", client_id=name, scopes=[identity.access]))


class RecyclingSessionManager(StreamableHTTPSessionManager):
    """The SDK's session manager, ending the least recently used idle session when the table is full."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _hide_session_ids()

    @property
    def state(self) -> Any:
        """What the server's lifespan yielded (its `AppState`) while it runs, or None."""
        # The SDK enters the lifespan once for every session and keeps what it yields here.
        return self._lifespan_state

    async def _handle_stateful_request(self, scope: Scope, receive: Receive, send: Send) -> None:
        identity = scope.get(IDENTITY_KEY)
        if isinstance(identity, Identity):
            # What the SDK compares with the session's owner on every request to it.
            scope["user"] = _owner(identity)
        await super()._handle_stateful_request(scope, receive, send)

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
        logger.info("ended the least recently used idle session to make room for a new client")
        # Forgotten now, so the new session gets its slot; the cancelled scope ends the
        # session's task, which terminates the transport.
        self._server_instances.pop(session_id, None)
        self._session_owners.pop(session_id, None)
        assert transport.idle_scope is not None
        transport.idle_scope.cancel()
