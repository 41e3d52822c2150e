"""graphmem's log records on their way to the MCP clients that asked for them (`logging/setLevel`).

A `LogRelay` is a logging handler on the `graphmem` logger. It only collects: records
come from worker threads as well as the event loop, and a handler must never write to
a client itself (on stdio that would be stdout, outside the protocol). The server
sends what it collected as `notifications/message`, before the answer of the request
during which they were logged, to each client whose level they reach.

Records below the logger's own level (the `--log-level` of stderr, warning by
default) are never made, so a client asking for `debug` gets debug messages only from
a server started with `--log-level debug`; a client cannot make stderr louder.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from dataclasses import dataclass

__all__ = ["CLIENT_LEVELS", "ClientLogRecord", "LogRelay", "python_level"]

# MCP's levels (RFC 5424's, mildest first) and the Python level each one starts at.
# Python has no notice, alert or emergency: they sit between its levels and above them.
CLIENT_LEVELS: dict[str, int] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": 25,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL + 5,
    "emergency": logging.CRITICAL + 10,
}

_OFF = logging.CRITICAL + 100

# Bounds the memory a client that never makes a request again can pin; the oldest go.
_MAX_PENDING = 1000


def python_level(client_level: str) -> int:
    """The Python level at which MCP level `client_level` starts."""
    return CLIENT_LEVELS[client_level]


def _client_level(levelno: int) -> str:
    name = "debug"
    for client_name, start in CLIENT_LEVELS.items():
        if levelno >= start:
            name = client_name
    return name


@dataclass(frozen=True, slots=True)
class ClientLogRecord:
    """One log message as a client receives it."""

    levelno: int
    level: str
    """The MCP level name."""
    logger: str
    message: str


class LogRelay(logging.Handler):
    """Collects graphmem's log records at or above the level some client asked for."""

    def __init__(self, logger_name: str = "graphmem") -> None:
        super().__init__(level=_OFF)
        self._logger = logging.getLogger(logger_name)
        self._pending: deque[ClientLogRecord] = deque(maxlen=_MAX_PENDING)
        self._lock = threading.Lock()

    def attach(self) -> None:
        self._logger.addHandler(self)

    def detach(self) -> None:
        self._logger.removeHandler(self)

    def listen_from(self, level: int | None) -> None:
        """Collect records from `level` up (the lowest any client wants), or none when None."""
        self.setLevel(_OFF if level is None else level)

    def emit(self, record: logging.LogRecord) -> None:
        # Formatting here, on the thread that logged, keeps the record's arguments from
        # being read later, after they may have changed.
        try:
            message = record.getMessage()
            if record.exc_info and record.exc_info[1] is not None:
                message += f" ({type(record.exc_info[1]).__name__}: {record.exc_info[1]})"
        except Exception:  # the logging module's own rule: a bad record must not break the caller
            self.handleError(record)
            return
        entry = ClientLogRecord(record.levelno, _client_level(record.levelno), record.name, message)
        with self._lock:
            self._pending.append(entry)

    def has_pending(self) -> bool:
        """Whether records wait to be sent (cheap: checked on every tool call)."""
        return bool(self._pending)

    def drain(self) -> list[ClientLogRecord]:
        """Every record collected since the last drain, oldest first."""
        with self._lock:
            records = list(self._pending)
            self._pending.clear()
        return records
