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

from graphmem.tools.base import ToolArgs, ToolContext, ToolOutput, ToolSpec

__all__ = ["AnswerCache"]

# Enough for the reads an agent repeats in a conversation; a large read answer is a few
# hundred kilobytes (its text and its structured form), so the cap on characters is what
# bounds the memory this takes.
_MAX_ANSWERS = 64
_MAX_CHARS = 8_000_000


class AnswerCache:
    """The last answers of reusable tools for the memory as it stands, oldest dropped first.

    Not thread-safe: the server runs one call at a time against the store.
    """

    def __init__(self, max_answers: int = _MAX_ANSWERS, max_chars: int = _MAX_CHARS) -> None:
        self._max_answers = max_answers
        self._max_chars = max_chars
        self._version: Hashable | None = None
        self._answers: OrderedDict[tuple[str, str], tuple[ToolOutput, int]] = OrderedDict()
        self._chars = 0

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
        key = (spec.name, arguments.model_dump_json())
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
        self._chars = 0
        self._version = version

    def _keep(self, key: tuple[str, str], output: ToolOutput) -> None:
        # The structured form is about as long as the text: count the text twice.
        chars = 2 * len(output.text) + sum(map(len, output.notes))
        if chars > self._max_chars:
            return
        self._answers[key] = (output, chars)
        self._chars += chars
        while len(self._answers) > self._max_answers or self._chars > self._max_chars:
            _, (_, dropped) = self._answers.popitem(last=False)
            self._chars -= dropped

    def stats(self) -> dict[str, Any]:
        """How many answers are kept and how large they are (for tests and diagnostics)."""
        return {"answers": len(self._answers), "chars": self._chars}
