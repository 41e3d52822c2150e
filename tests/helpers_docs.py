"""The documentation's examples as data: fenced blocks found in the pages, and how to compare answers.

The pages mark what a test runs by the fence's language and title (MkDocs Material shows the
title above the block):

- ```` ```console ````: lines starting with `$ ` are commands run in a scratch folder; the lines
  after a command are its expected output (stdout and stderr together). An output that starts
  with `Error:` expects the command to fail; otherwise it must exit 0.
- ```` ```sh ````: commands shown but not run (a server that keeps serving, a package manager);
  every `graphmem` command in them is parsed by graphmem's own command line, so a command or an
  option that does not exist fails.
- ```` ```json title="call: TOOL" ````: the arguments of a tool call, run in page order on one fresh
  memory. The block after it, ```` ```json title="answer" ```` (the structured result) or
  ```` ```text title="error" ```` (the error text), is what the call must answer.
- ```` ```json title="…" ```` with any other title (a client's config file) or none: must parse;
  every server in it that runs a command must run graphmem with options graphmem accepts.

In an expected answer, the string `…` stands for any value, a `"…": "…"` member for any other
members, and a last list item `…` for any further items; in expected text, `…` stands for any
characters on its line.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import click

from graphmem.cli import cli

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
ELLIPSIS = "…"

_FENCE = re.compile(r"^```(?P<lang>[\w-]*)(?P<info>[^\n]*)\n(?P<body>.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_TITLE = re.compile(r'title="(?P<title>[^"]*)"')


@dataclass(frozen=True)
class Block:
    """One fenced block of a page."""

    page: str
    line: int
    lang: str
    title: str
    body: str

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[Path]:
    """Every Markdown page of the site, and the README."""
    return sorted(DOCS.rglob("*.md")) + [ROOT / "README.md"]


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of one page, in order."""
    text = page.read_text(encoding="utf-8")
    found = []
    for match in _FENCE.finditer(text):
        title = _TITLE.search(match["info"])
        found.append(
            Block(
                page=str(page.relative_to(ROOT)),
                line=text.count("\n", 0, match.start()) + 1,
                lang=match["lang"],
                title=title["title"] if title else "",
                body=match["body"],
            )
        )
    return found


@dataclass(frozen=True)
class Call:
    """A documented tool call and what it must answer (None: the page shows no answer)."""

    where: str
    tool: str
    arguments: dict[str, Any]
    answer: Any | None
    error: str | None


def calls(page: Path) -> list[Call]:
    """The page's tool calls, each with the answer block that follows it."""
    found = blocks(page)
    result = []
    for index, block in enumerate(found):
        if not block.title.startswith("call:"):
            continue
        following = found[index + 1] if index + 1 < len(found) else None
        answer = error = None
        if following is not None and following.title == "answer":
            answer = _loads(following)
        elif following is not None and following.title == "error":
            error = following.body
        result.append(Call(block.where, block.title.removeprefix("call:").strip(), _loads(block), answer, error))
    return result


def _loads(block: Block) -> Any:
    try:
        return json.loads(block.body)
    except ValueError as error:
        raise AssertionError(f"{block.where}: the JSON block does not parse: {error}") from None


def matches(expected: Any, actual: Any) -> bool:
    """Whether `actual` is what `expected` shows, reading `…` as described in the module docstring."""
    if expected == ELLIPSIS:
        return True
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return False
        open_ended = expected.get(ELLIPSIS) == ELLIPSIS
        keys = {key for key in expected if key != ELLIPSIS}
        if not keys <= set(actual) or (not open_ended and keys != set(actual)):
            return False
        return all(matches(expected[key], actual[key]) for key in keys)
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return False
        if expected and expected[-1] == ELLIPSIS:
            head = expected[:-1]
            return len(actual) >= len(head) and all(matches(e, a) for e, a in zip(head, actual, strict=False))
        return len(expected) == len(actual) and all(matches(e, a) for e, a in zip(expected, actual, strict=True))
    if isinstance(expected, str) and isinstance(actual, str) and ELLIPSIS in expected:
        return text_line_matches(expected, actual)
    # bool is an int to Python; JSON tells them apart.
    return type(expected) is type(actual) and expected == actual


def text_line_matches(expected: str, actual: str) -> bool:
    """One line of expected text against the real one; `…` stands for any characters."""
    pattern = ".*".join(re.escape(part) for part in expected.split(ELLIPSIS))
    return re.fullmatch(pattern, actual, re.DOTALL) is not None


def text_matches(expected: str, actual: str) -> bool:
    """Expected lines against real ones, line by line (trailing blanks ignored)."""
    want = expected.rstrip().splitlines()
    got = actual.rstrip().splitlines()
    return len(want) == len(got) and all(text_line_matches(w, g) for w, g in zip(want, got, strict=True))


@dataclass(frozen=True)
class ConsoleCommand:
    """A `$ ` command of a console block and the output the page shows for it."""

    where: str
    env: dict[str, str]
    args: list[str]
    output: str


def console_commands(page: Path) -> list[ConsoleCommand]:
    """The commands of the page's console blocks, in order."""
    result: list[ConsoleCommand] = []
    for block in blocks(page):
        if block.lang != "console":
            continue
        current: tuple[dict[str, str], list[str]] | None = None
        output: list[str] = []
        for line in [*block.body.splitlines(), "$ "]:
            if line.startswith("$ "):
                if current is not None:
                    result.append(ConsoleCommand(block.where, current[0], current[1], "\n".join(output)))
                words = shlex.split(line[2:], comments=True)
                current = _split_env(words) if words else None
                output = []
            else:
                output.append(line)
    return result


def _split_env(words: list[str]) -> tuple[dict[str, str], list[str]]:
    env = {}
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
        key, value = words.pop(0).split("=", 1)
        env[key] = value
    return env, words


def shown_graphmem_commands(block_body: str) -> list[list[str]]:
    """The arguments of every `graphmem` command a shell block shows (after `graphmem`)."""
    found = []
    for line in block_body.splitlines():
        words = shlex.split(line, comments=True)
        for separator in ("&&", "||", "|", ";"):
            if separator in words:
                words = words[: words.index(separator)]
        words = [word for word in words if not word.startswith(">")]
        for index, word in enumerate(words):
            if word == "graphmem" or word.endswith("bin/graphmem"):
                found.append(words[index + 1 :])
                break
    return found


def parse_command_line(args: list[str]) -> None:
    """Parse `graphmem ARGS` as the real command line would, without running it.

    Raises:
        click.UsageError: a command or option does not exist, or a value does not fit it.
    """
    with cli.make_context("graphmem", list(args), resilient_parsing=False) as context:
        rest = [*context._protected_args, *context.args]
        if not rest:
            return
        command = cli.get_command(context, rest[0])
        if command is None:
            raise click.UsageError(f"No such command {rest[0]!r}.")
        with command.make_context(rest[0], rest[1:], parent=context):
            return


# Their answers depend on what is embedded yet: a page shows them once the background worker has
# caught up, as a user who waits a moment sees them.
READS_THAT_RANK_BY_MEANING = {"search_nodes", "graph_stats"}


async def _embedding_done(client: Any) -> None:
    while True:
        stats = await client.call_tool("graph_stats", {})
        if stats.structured_content.get("embedding", {}).get("waiting", 0) == 0:
            return
        await anyio.sleep(0.05)


async def answers_as_shown(client: Any, shown: list[Call]) -> None:
    """Make each call in turn on a connected client and assert it answers what the page shows."""
    for call in shown:
        if call.tool in READS_THAT_RANK_BY_MEANING:
            await _embedding_done(client)
        result = await client.call_tool(call.tool, call.arguments)
        text = "\n".join(item.text for item in result.content if item.type == "text")
        if call.error is not None:
            assert result.is_error, f"{call.where}: {call.tool} succeeded, the page shows an error"
            assert text_matches(call.error, text), f"{call.where}: {call.tool} said\n{text}"
            continue
        assert not result.is_error, f"{call.where}: {call.tool} failed: {text}"
        if call.answer is not None:
            actual = json.dumps(result.structured_content, ensure_ascii=False)
            assert matches(call.answer, result.structured_content), f"{call.where}: {call.tool} answered\n{actual}"
