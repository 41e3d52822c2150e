"""Answers of read tools kept while the memory stays as it is.

An agent reads the same things again and again: read_graph at the start of every
conversation, the same search a few turns later, the entity it just looked at. On a
large memory such an answer takes milliseconds to build (a budget's worth of entities
and their relations, ranked, measured and written as JSON), while telling whether the
memory changed since takes a few microseconds (`KnowledgeGraph.version`: SQLite's
data_version and this connection's write count, or a JSONL file's stamp and the token
its writers leave). So the last answers of the tools marked `reusable` are kept, and all
of them are dropped as soon as the memory changes, by this server or by any other
process writing the same file.

Inside a transaction, or for a store that cannot tell, every call is answered afresh.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

from pydantic_core import PydanticSerializationError

from graphmem.tools.base import ToolArgs, ToolContext, ToolOutput, ToolSpec

__all__ = ["AnswerCache"]

# Enough for the reads an agent repeats in a conversation. A large read answer (100 KB of
# text on the default budget) holds about four to seven times its text's length in Python
# objects (measured with tracemalloc at 40,000 entities), so the cap on bytes is what
# bounds the memory this takes.
_MAX_ANSWERS = 64
_MAX_BYTES = 16 * 1024 * 1024
_BYTES_PER_CHAR = 5


class AnswerCache:
    """The last answers of reusable tools for the memory as it stands, oldest dropped first.

    Not thread-safe: the server runs one call at a time against the store.
    """

    def __init__(self, max_answers: int = _MAX_ANSWERS, max_bytes: int = _MAX_BYTES) -> None:
        self._max_answers = max_answers
        self._max_bytes = max_bytes
        self._version: Hashable | None = None
        self._answers: OrderedDict[tuple[str, str], tuple[ToolOutput, int]] = OrderedDict()
        self._bytes = 0

    def run(self, spec: ToolSpec, ctx: ToolContext, arguments: ToolArgs) -> ToolOutput:
        """`spec.run(ctx, arguments)`, or the same answer kept from an earlier call."""
        if not spec.reusable:
            return spec.run(ctx, arguments)
        # Read before the call: should another process write while it runs, the answer is
        # kept under the older version, which the next call no longer sees.
        version = ctx.graph.version()
        if version is None:
            self._forget(None)
            return spec.run(ctx, arguments)
        if version != self._version:
            self._forget(version)
        try:
            key = (spec.name, arguments.model_dump_json())
        except PydanticSerializationError:
            # An argument that is not valid text (a lone surrogate): the tool refuses it.
            return spec.run(ctx, arguments)
        kept = self._answers.get(key)
        if kept is not None:
            self._answers.move_to_end(key)
            return kept[0]
        output = spec.run(ctx, arguments)
        if not output.is_error and not output.changed:
            self._keep(key, output)
        return output

    def _forget(self, version: Hashable | None) -> None:
        self._answers.clear()
        self._bytes = 0
        self._version = version

    def _keep(self, key: tuple[str, str], output: ToolOutput) -> None:
        size = _BYTES_PER_CHAR * (len(output.text) + sum(map(len, output.notes)))
        if size > self._max_bytes:
            return
        self._answers[key] = (output, size)
        self._bytes += size
        while len(self._answers) > self._max_answers or self._bytes > self._max_bytes:
            _, (_, dropped) = self._answers.popitem(last=False)
            self._bytes -= dropped

    def stats(self) -> dict[str, Any]:
        """How many answers are kept and about how many bytes they take (for tests and diagnostics)."""
        return {"answers": len(self._answers), "bytes": self._bytes}
