"""The stdio transport's line handling, without a process: parse_message, error lines, line splitting."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
import pytest

from graphmem.transports.lines import (
    MAX_JSON_DEPTH,
    MAX_MESSAGE_BYTES,
    MessageError,
    encode_message,
    error_line,
    parse_message,
    read_lines,
)

pytestmark = pytest.mark.anyio


def line(message: Any) -> bytes:
    return json.dumps(message).encode("utf-8")


def rejection(raw: bytes) -> MessageError:
    with pytest.raises(MessageError) as caught:
        parse_message(raw)
    return caught.value


def nested(depth: int) -> bytes:
    """A tools/call whose arguments hold `depth` levels of objects and arrays in all."""
    inner = b"[" * (depth - 3) + b"]" * (depth - 3)
    return b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t","arguments":{"x":' + inner + b"}}}"


# -- messages that are served ----------------------------------------------------------


def test_a_request_line_becomes_a_jsonrpc_request():
    message = parse_message(b'{"jsonrpc":"2.0","id":3,"method":"ping"}')
    assert isinstance(message, types.JSONRPCRequest)
    assert (message.id, message.method) == (3, "ping")


def test_a_notification_line_becomes_a_jsonrpc_notification():
    message = parse_message(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    assert isinstance(message, types.JSONRPCNotification)


def test_a_byte_order_mark_before_a_message_is_ignored():
    message = parse_message(b'\xef\xbb\xbf{"jsonrpc":"2.0","id":1,"method":"ping"}')
    assert isinstance(message, types.JSONRPCRequest)


def test_non_ascii_text_and_line_separators_inside_strings_are_kept():
    raw = '{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"Zoë\u2028日本 😀"}}'.encode()
    message = parse_message(raw)
    assert isinstance(message, types.JSONRPCRequest)
    assert message.params == {"s": "Zoë\u2028日本 😀"}


def test_a_surrogate_pair_escape_is_one_character_and_accepted():
    message = parse_message(b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"\\ud83d\\ude00"}}')
    assert isinstance(message, types.JSONRPCRequest)
    assert message.params == {"s": "😀"}


def test_an_escaped_backslash_before_u_d800_is_plain_text_not_a_surrogate():
    message = parse_message(b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"\\\\ud800"}}')
    assert isinstance(message, types.JSONRPCRequest)
    assert message.params == {"s": "\\ud800"}


def test_json_nested_as_deep_as_the_limit_is_accepted():
    assert isinstance(parse_message(nested(MAX_JSON_DEPTH)), types.JSONRPCRequest)


def test_brackets_and_escaped_quotes_inside_strings_do_not_count_as_nesting():
    text = '\\"' + "[{" * 5000 + "\\\\"  # as written inside the JSON string: \" [{[{… \\
    raw = b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"' + text.encode() + b'"}}'
    message = parse_message(raw)
    assert isinstance(message, types.JSONRPCRequest)
    assert message.params == {"s": json.loads(f'"{text}"')}


def test_many_shallow_structures_are_not_deep():
    entities = [{"name": f"E{i}", "entityType": "t", "observations": ["a", "b"]} for i in range(2000)]
    raw = line({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"arguments": {"entities": entities}}})
    assert isinstance(parse_message(raw), types.JSONRPCRequest)


# -- lines that get an error answer --------------------------------------------------------


# JSON-RPC: "If there was an error in detecting the id in the Request object (e.g. Parse
# error/Invalid Request), it MUST be Null", even when an id can be seen in the broken text.
def test_invalid_json_is_a_parse_error_answered_with_a_null_id():
    error = rejection(b'{"jsonrpc":"2.0","id":5,"method":')
    assert (error.code, error.request_id) == (types.PARSE_ERROR, None)


def test_invalid_utf8_is_a_parse_error_answered_with_a_null_id():
    error = rejection(b'{"jsonrpc":"2.0","id":"abc","method":"ping","params":{"x":"\xff\xfe"}}')
    assert (error.code, error.request_id) == (types.PARSE_ERROR, None)
    assert "UTF-8" in error.message


@pytest.mark.parametrize("constant", [b"NaN", b"Infinity", b"-Infinity"])
def test_nan_and_infinity_are_not_json(constant):
    error = rejection(b'{"jsonrpc":"2.0","id":5,"method":"ping","params":{"x":' + constant + b"}}")
    assert (error.code, error.request_id) == (types.PARSE_ERROR, None)


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 300, 5000, 100_000])
def test_json_nested_deeper_than_the_limit_is_an_invalid_request_with_the_request_id(depth):
    error = rejection(nested(depth))
    assert (error.code, error.request_id) == (types.INVALID_REQUEST, 7)
    assert f"deeper than {MAX_JSON_DEPTH} levels" in error.message


def test_closing_brackets_inside_a_string_cannot_hide_deep_nesting():
    raw = b'{"jsonrpc":"2.0","id":7,"method":"m","params":{"s":"' + b"]" * 500 + b'","x":' + b"[" * 300 + b"]" * 300
    error = rejection(raw + b"}}")
    assert (error.code, error.request_id) == (types.INVALID_REQUEST, 7)


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b'{"jsonrpc":"2.0","id":7,"method":"m","params":{"s":"a\\ud800b"}}', id="lone-high"),
        pytest.param(b'{"jsonrpc":"2.0","id":7,"method":"m","params":{"s":"a\\udc00"}}', id="lone-low"),
        pytest.param(b'{"jsonrpc":"2.0","id":7,"method":"m","params":{"\\uDBFF":1}}', id="in-a-key"),
        pytest.param(b'{"jsonrpc":"2.0","id":7,"method":"m","params":{"s":"\\ude00\\ud83d"}}', id="pair-reversed"),
        # A backslash, the text "ud83d", then a low surrogate on its own.
        pytest.param(b'{"jsonrpc":"2.0","id":7,"method":"m","params":{"s":"\\\\ud83d\\ude00"}}', id="after-text"),
    ],
)
def test_a_lone_surrogate_escape_is_invalid_params_with_the_request_id(raw):
    error = rejection(raw)
    assert (error.code, error.request_id) == (types.INVALID_PARAMS, 7)
    assert "surrogate" in error.message


def test_a_batch_gets_an_error_for_each_request_in_it():
    error = rejection(
        b'[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":"b","method":"m"}]'
    )
    assert error.code == types.INVALID_REQUEST
    assert error.batch_ids == (1, "b")
    assert json.loads(error_line(error)) == [
        {"jsonrpc": "2.0", "id": 1, "error": {"code": types.INVALID_REQUEST, "message": error.message}},
        {"jsonrpc": "2.0", "id": "b", "error": {"code": types.INVALID_REQUEST, "message": error.message}},
    ]
    assert "batches are not supported" in error.message


@pytest.mark.parametrize("raw", [b"[]", b'[{"jsonrpc":"2.0","method":"n"}]', b"[1,2]"])
def test_a_batch_without_requests_gets_one_error_without_an_id(raw):
    answer = json.loads(error_line(rejection(raw)))
    assert answer["id"] is None
    assert answer["error"]["code"] == types.INVALID_REQUEST


@pytest.mark.parametrize("raw", [b"42", b'"hello"', b"null", b"true"])
def test_a_value_that_is_not_an_object_is_an_invalid_request(raw):
    error = rejection(raw)
    assert (error.code, error.request_id) == (types.INVALID_REQUEST, None)
    assert "must be a JSON object" in error.message


@pytest.mark.parametrize("request_id", [None, 1.5, True, {"a": 1}, [1]])
def test_a_request_whose_id_mcp_does_not_allow_is_an_invalid_request_not_a_notification(request_id):
    error = rejection(line({"jsonrpc": "2.0", "id": request_id, "method": "ping"}))
    assert error.code == types.INVALID_REQUEST
    assert "the id must be a string or an integer" in error.message


def test_a_message_without_the_jsonrpc_version_is_an_invalid_request_with_its_id():
    error = rejection(b'{"id":4,"method":"ping"}')
    assert (error.code, error.request_id) == (types.INVALID_REQUEST, 4)


# -- what goes back on the wire ------------------------------------------------------------


def test_an_error_line_is_one_compact_jsonrpc_error():
    data = error_line(MessageError(types.PARSE_ERROR, "Parse error: x.", 9))
    assert data == b'{"jsonrpc":"2.0","id":9,"error":{"code":-32700,"message":"Parse error: x."}}\n'


@pytest.mark.parametrize(("request_id", "echoed"), [("a\ud800", None), (1.5, 1.5), (True, None), ({"x": 1}, None)])
def test_an_error_line_echoes_only_an_id_it_can_write(request_id, echoed):
    answer = json.loads(error_line(MessageError(types.INVALID_REQUEST, "m", request_id)))
    assert answer["id"] == echoed


def test_an_answer_holding_a_lone_surrogate_is_written_with_a_replacement_character():
    message = types.JSONRPCResponse(jsonrpc="2.0", id=1, result={"text": "Bad\ud800name", "ok": "日本"})
    data = encode_message(message)
    assert data.endswith(b"\n")
    assert json.loads(data) == {"jsonrpc": "2.0", "id": 1, "result": {"text": "Bad\ufffdname", "ok": "日本"}}


def test_an_ordinary_answer_is_written_compact_with_non_ascii_raw():
    message = types.JSONRPCResponse(jsonrpc="2.0", id=1, result={"text": "Zoë"})
    assert encode_message(message) == '{"jsonrpc":"2.0","id":1,"result":{"text":"Zoë"}}\n'.encode()


# -- splitting the stream into lines ---------------------------------------------------------


class ChunkedReader:
    """Hands out fixed chunks, as a pipe does, then end of stream."""

    def __init__(self, *chunks: bytes) -> None:
        self._chunks = list(chunks)

    async def read(self, n: int) -> bytes:
        return self._chunks.pop(0) if self._chunks else b""


async def read_all(*chunks: bytes) -> list[bytes | MessageError]:
    return [item async for item in read_lines(ChunkedReader(*chunks))]


async def test_lines_are_split_on_newline_only():
    assert await read_all('{"a":"x\u2028y\rz"}\n{"b":1}\n'.encode()) == ['{"a":"x\u2028y\rz"}'.encode(), b'{"b":1}']


async def test_a_line_split_across_chunks_is_joined():
    assert await read_all(b'{"a":', b"1", b'}\n{"b"', b":2}\n") == [b'{"a":1}', b'{"b":2}']


async def test_blank_lines_are_skipped_and_a_last_line_without_newline_is_kept():
    assert await read_all(b"\n  \r\n{}\n", b"\n", b'{"last":1}') == [b"{}", b'{"last":1}']


async def test_a_line_over_the_size_limit_is_an_error_with_its_id_and_the_next_line_is_read():
    head = b'{"jsonrpc":"2.0","id":12,"method":"ping","params":{"x":"'
    chunk = b"a" * (1 << 20)
    chunks = [head, *([chunk] * (MAX_MESSAGE_BYTES // len(chunk) + 1)), b'"}}\n{"next":1}\n']
    items = await read_all(*chunks)
    assert len(items) == 2
    error, after = items
    assert isinstance(error, MessageError)
    assert (error.code, error.request_id) == (types.INVALID_REQUEST, 12)
    assert after == b'{"next":1}'


async def test_a_line_over_the_size_limit_at_the_end_of_the_stream_still_gets_an_error():
    items = await read_all(b'{"id":3,"x":"', *([b"a" * (1 << 20)] * 17))
    assert len(items) == 1
    assert isinstance(items[0], MessageError)
    assert items[0].request_id == 3
