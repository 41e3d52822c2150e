"""The TCP gate without a server: which lines look like HTTP and which first lines open a connection."""

from __future__ import annotations

import pytest

from graphmem.transports.gate import first_line_is_initialize, looks_like_http

INITIALIZE = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}'


@pytest.mark.parametrize(
    "line",
    [b"POST / HTTP/1.1", b"GET /mcp?x=1 HTTP/1.0\r", b"Host: 127.0.0.1:8766", b"origin:https://a.example", b"X-Y: z"],
)
def test_request_and_header_lines_look_like_http(line: bytes):
    assert looks_like_http(line)


@pytest.mark.parametrize(
    "line", [INITIALIZE, b'{"Host: x": 1}', b'["POST / HTTP/1.1"]', b"{not json", b"42", b'"Host: x"']
)
def test_json_and_other_non_http_lines_do_not_look_like_http(line: bytes):
    assert not looks_like_http(line)


def test_only_an_initialize_request_opens_a_connection():
    assert first_line_is_initialize(INITIALIZE) is None
    assert "not ping" in (first_line_is_initialize(b'{"jsonrpc":"2.0","id":1,"method":"ping"}') or "")
    assert "HTTP" in (first_line_is_initialize(b"POST / HTTP/1.1") or "")
    assert "not JSON-RPC" in (first_line_is_initialize(b"{oops") or "")
