"""The README and the documentation site stay honest: every tool, toolset, limit and command is there."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphmem.cli import cli
from graphmem.core.limits import Limits
from graphmem.tools import ALL_TOOLS
from graphmem.tools.toolsets import TOOLSETS, select_tools

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
TOOLS_PAGE = (ROOT / "docs" / "tools.md").read_text(encoding="utf-8")
OPERATIONS_PAGE = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")


def _table(text: str, heading: str, first_column: str) -> tuple[list[str], dict[str, list[str]]]:
    """The table under `heading`: its column headings, and each tool row's cells after the name."""
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    header = next(line for line in section.splitlines() if line.startswith(f"| {first_column}"))
    columns = [cell.strip() for cell in header.strip("|").split("|")][1:]
    rows = [line.strip("|").split("|") for line in section.splitlines() if line.startswith("| `")]
    return columns, {cells[0].strip().strip("`"): [cell.strip() for cell in cells[1:]] for cells in rows}


def _marked(columns: list[str], cells: list[str]) -> list[str]:
    return [column for column, cell in zip(columns, cells, strict=True) if cell == "yes"]


@pytest.mark.parametrize("tool", ALL_TOOLS, ids=lambda tool: tool.name)
def test_every_tool_has_a_section_in_the_tools_reference_and_a_description(tool):
    headings = [line for line in TOOLS_PAGE.splitlines() if line.startswith("### ")]
    assert any(tool.name in heading.replace(",", " ").split() for heading in headings)
    assert len(tool.description) > 40


def test_the_readme_tools_table_lists_every_tool_and_marks_the_default_set():
    columns, rows = _table(README, "## Tools", "tool")
    assert sorted(rows) == sorted(tool.name for tool in ALL_TOOLS)
    default = {tool.name for tool in select_tools(ALL_TOOLS, "default")}
    assert {name for name, cells in rows.items() if "default" in _marked(columns, cells)} == default


def test_the_toolsets_table_lists_every_tool_in_the_sets_that_have_it():
    columns, rows = _table(TOOLS_PAGE, "## Toolsets", "tool")
    assert sorted(rows) == sorted(tool.name for tool in ALL_TOOLS)
    for toolset in TOOLSETS:
        members = {tool.name for tool in select_tools(ALL_TOOLS, toolset)}
        marked = {name for name, cells in rows.items() if toolset in _marked(columns, cells)}
        assert marked == members, toolset


def test_the_tools_reference_says_how_many_tools_each_toolset_lists():
    section = TOOLS_PAGE.split("## Toolsets", 1)[1].split("\n## ", 1)[0]
    assert f"lists {len(select_tools(ALL_TOOLS, 'default'))}:" in section
    assert f"lists all {len(ALL_TOOLS)}." in section


@pytest.mark.parametrize("name", sorted(cli.commands))
def test_every_command_is_in_the_operations_page_and_has_help(name):
    assert f"graphmem {name}" in OPERATIONS_PAGE
    assert cli.commands[name].help


def test_the_tools_reference_states_the_limits_the_server_enforces():
    limits = Limits()
    for value in (
        limits.max_name_length,
        limits.max_observation_length,
        limits.max_query_length,
        limits.max_batch_items,
        limits.max_observations_per_item,
    ):
        assert f"{value:,}" in TOOLS_PAGE


def test_the_readme_test_command_is_what_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "./scripts/test" in README
    assert "./scripts/test" in ci


def test_the_readme_stays_a_five_minute_read():
    assert len(README.splitlines()) <= 200
