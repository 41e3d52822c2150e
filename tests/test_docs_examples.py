"""Every example in the documentation runs and answers what the page shows (see tests/helpers_docs.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import click
import pytest

import graphmem
from graphmem.tools import ALL_TOOLS
from tests.helpers_clients import TRANSPORTS, Serve
from tests.helpers_docs import (
    ROOT,
    answers_as_shown,
    blocks,
    calls,
    console_commands,
    pages,
    parse_command_line,
    shown_graphmem_commands,
    text_matches,
)

PAGE_IDS = [str(page.relative_to(ROOT)) for page in pages()]


def _pages_with(find: Any) -> list[Any]:
    return [pytest.param(page, id=name) for page, name in zip(pages(), PAGE_IDS, strict=True) if find(page)]


def _run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "graphmem", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


@pytest.mark.parametrize("page", _pages_with(console_commands))
def test_every_console_example_prints_what_the_page_shows(page, tmp_path):
    # A scratch folder and home: the examples' memory and files land there, never in the user's.
    for block in blocks(page):
        if block.lang == "jsonl" and block.title:
            (tmp_path / block.title).write_text(block.body + "\n", encoding="utf-8")
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "MEMORY_FILE_PATH": str(tmp_path / "memory.db"),
        "PYTHONPATH": str(Path(graphmem.__file__).resolve().parents[1]),
    }
    for command in console_commands(page):
        assert command.args[:1] == ["graphmem"], f"{command.where}: a console example runs graphmem"
        result = _run(command.args[1:], {**env, **command.env}, tmp_path)
        shown = result.stdout + result.stderr
        failing = command.output.startswith("Error:")
        assert (result.returncode != 0) == failing, f"{command.where}: exit {result.returncode}\n{shown}"
        assert text_matches(command.output, shown), f"{command.where}: {command.args} printed\n{shown}"


def _shell_blocks(page: Path) -> list[Any]:
    return [block for block in blocks(page) if block.lang in ("sh", "bash", "shell")]


@pytest.mark.parametrize("page", _pages_with(_shell_blocks))
def test_every_graphmem_command_a_page_shows_is_one_graphmem_accepts(page):
    for block in _shell_blocks(page):
        for args in shown_graphmem_commands(block.body):
            try:
                parse_command_line(args)
            except click.UsageError as error:
                pytest.fail(f"{block.where}: graphmem {' '.join(args)}: {error.format_message()}")


def _json_blocks(page: Path) -> list[Any]:
    return [block for block in blocks(page) if block.lang == "json"]


def _graphmem_args(server: dict[str, Any]) -> list[str] | None:
    """The graphmem arguments a client config's server runs, or None if it runs no graphmem."""
    command = server["command"]
    args = list(server.get("args", []))
    if command == "uvx":
        assert "graphmem" in args, "a uvx server runs graphmem"
        return args[args.index("graphmem") + 1 :]
    assert command.endswith("bin/graphmem"), f"the command {command!r} is graphmem's"
    return args


@pytest.mark.parametrize("page", _pages_with(_json_blocks))
def test_every_json_block_parses_and_every_client_config_runs_graphmem_with_real_options(page):
    for block in _json_blocks(page):
        try:
            document = json.loads(block.body)
        except ValueError as error:
            pytest.fail(f"{block.where}: the JSON does not parse: {error}")
        if not isinstance(document, dict):
            continue
        servers = document.get("mcpServers", document.get("servers", {}))
        for name, server in servers.items():
            if "url" in server:
                assert server["url"].endswith("/mcp"), f"{block.where}: {name} is graphmem's /mcp endpoint"
                continue
            args = _graphmem_args(server)
            assert args is not None
            try:
                parse_command_line(args)
            except click.UsageError as error:
                pytest.fail(f"{block.where}: {name} runs graphmem {args}: {error.format_message()}")
            for key in server.get("env", {}):
                assert key == "MEMORY_FILE_PATH" or key.startswith("GRAPHMEM_"), f"{block.where}: {key}"


@pytest.mark.anyio
@pytest.mark.parametrize("page", _pages_with(calls))
async def test_every_tool_call_a_page_shows_answers_what_it_shows(page, tmp_path):
    # One fresh memory per page, every tool listed: the calls build on each other in page order.
    with anyio.fail_after(15):
        async with TRANSPORTS["memory"](tmp_path / "memory.db", Serve(toolset="all")) as client:
            await answers_as_shown(client, calls(page))


def test_every_tool_has_an_example_call_with_its_answer_in_the_tools_reference():
    documented = calls(ROOT / "docs" / "tools.md")
    unanswered = [call.where for call in documented if call.answer is None and call.error is None]
    assert unanswered == [], "every example in the tools reference shows its answer"
    assert sorted({tool.name for tool in ALL_TOOLS} - {call.tool for call in documented}) == []
