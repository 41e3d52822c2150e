"""The TCP gate without a server: which lines look like HTTP and which first lines open a connection."""

from __future__ import annotations

import pytest

from graphmem.transports.gate import first_line_opens_mcp, looks_like_http

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


def test_only_initialize_or_a_request_of_protocol_2026_opens_a_connection():
    assert first_line_opens_mcp(INITIALIZE) is None
    # Protocol 2026-07-28 has no handshake: the SDK's default client discovers first.
    assert first_line_opens_mcp(b'{"jsonrpc":"2.0","id":1,"method":"server/discover"}') is None
    enveloped = b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"%s":"2026-07-28"}}}'
    assert first_line_opens_mcp(enveloped % b"io.modelcontextprotocol/protocolVersion") is None
    assert "not tools/list" in (first_line_opens_mcp(enveloped % b"other/key") or "")
    assert "not ping" in (first_line_opens_mcp(b'{"jsonrpc":"2.0","id":1,"method":"ping"}') or "")
    assert "HTTP" in (first_line_opens_mcp(b"POST / HTTP/1.1") or "")
    assert "not JSON-RPC" in (first_line_opens_mcp(b"{oops") or "")
