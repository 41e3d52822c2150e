"""A deadline for each HTTP request to arrive whole, so silent connections cannot pile up.

uvicorn's h11 protocol closes a connection that stays silent for `timeout_keep_alive`
seconds *after* a response, but one that never sends a complete request (nothing at
all, or half a head, or a body trickled a byte at a time) is kept for ever: a local
process opening about a thousand of them exhausts the file descriptors and every new
client is refused. This protocol gives every request `request_seconds` to arrive,
head and body, counted from the connection's opening or from the first byte of the
request after a keep-alive wait:

    connect ─► [head ... body] ─► answered (no deadline: a GET stream may last) ─► keep-alive wait
    ◄────── request_seconds ─────►                                              (uvicorn's timeout)

Past it, a connection that has not started its response is answered
`408 Request Timeout` and closed; one that has is just closed.
"""

from __future__ import annotations

import asyncio
import json
import logging

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["RequestDeadlineProtocol", "with_request_deadline"]

logger = logging.getLogger(__name__)

# The client's side of h11's state machine while a request is still arriving.
_RECEIVING = (h11.IDLE, h11.SEND_BODY)


def _timeout_response(seconds: float) -> bytes:
    message = f"Request timeout: the request did not arrive whole within {seconds:g} seconds; send it at once."
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}).encode()
    head = (
        "HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    )
    return head.encode("ascii") + body


class RequestDeadlineProtocol(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request does not arrive whole in time."""

    request_seconds: float = 10.0
    """Seconds a request may take to arrive, head and body; set by `with_request_deadline`."""

    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._deadline is None and self.conn.their_state is h11.IDLE:
            # The first bytes of a new request on a kept-alive connection.
            self._arm()
        super().data_received(data)
        self._disarm_once_received()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.conn.their_state in _RECEIVING and self.conn.trailing_data[0]:
            # Part of a pipelined request is waiting: its clock runs now.
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.request_seconds, self._expire)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _disarm_once_received(self) -> None:
        if self.conn.their_state not in _RECEIVING:
            self._disarm()

    def _expire(self) -> None:
        self._deadline = None
        if self.transport.is_closing() or self.conn.their_state not in _RECEIVING:
            return
        logger.info("closed an HTTP connection whose request did not arrive within %g seconds", self.request_seconds)
        answering = self.conn.our_state is not h11.IDLE and self.cycle is not None and self.cycle.response_started
        if not answering:
            # Written past h11, which cannot answer a request whose head it has not read;
            # the connection closes right after, so its state no longer matters.
            self.transport.write(_timeout_response(self.request_seconds))
        self.transport.close()


def with_request_deadline(seconds: float) -> type[RequestDeadlineProtocol]:
    """The protocol class to give uvicorn (`Config(http=...)`) for a deadline of `seconds`."""
    return type("RequestDeadlineProtocol", (RequestDeadlineProtocol,), {"request_seconds": seconds})
