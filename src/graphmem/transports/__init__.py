"""Transports: serve the MCP server over stdio, TCP or Streamable HTTP.

    lines.py    one JSON-RPC message per line: parsing, error lines, reading lines
    channel.py  the server's streams over any line reader and writer (stdio, each TCP connection)
    stdio.py    one client on stdin/stdout
    tcp.py      many clients, newline-delimited JSON-RPC over TCP, optional token
    http.py     many clients over Streamable HTTP (/mcp) with a health check (/health)
    guard.py    who may reach the HTTP server: Host, Origin, bearer token
    loop.py     uvloop where installed; the signals that stop a network server

The network transports are imported by their modules (`graphmem.transports.http`), so
serving stdio never loads uvicorn or starlette.
"""

from graphmem.transports.channel import DRAIN_SECONDS
from graphmem.transports.lines import MAX_JSON_DEPTH, MAX_MESSAGE_BYTES, MessageError, parse_message
from graphmem.transports.loop import event_loop_options
from graphmem.transports.stdio import run_stdio

__all__ = [
    "DRAIN_SECONDS",
    "MAX_JSON_DEPTH",
    "MAX_MESSAGE_BYTES",
    "MessageError",
    "event_loop_options",
    "parse_message",
    "run_stdio",
]
