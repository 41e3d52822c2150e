"""The README stays honest: every tool and command it must mention is there, with help text."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphmem.cli import cli
from graphmem.core.limits import Limits
from graphmem.tools import ALL_TOOLS
from graphmem.tools.toolsets import TOOLSETS, select_tools

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("tool", ALL_TOOLS, ids=lambda tool: tool.name)
def test_every_tool_is_in_the_readme_and_has_a_description(tool):
    assert f"`{tool.name}`" in README
    assert len(tool.description) > 40


def _toolset_table() -> dict[str, list[str]]:
    """The README's toolsets table: tool name to the column headings marked `yes`."""
    section = README.split("## Toolsets", 1)[1].split("\n## ", 1)[0]
    header = next(line for line in section.splitlines() if line.startswith("| tool"))
    columns = [cell.strip() for cell in header.strip("|").split("|")][1:]
    rows = [line.strip("|").split("|") for line in section.splitlines() if line.startswith("| `")]
    return {
        cells[0].strip().strip("`"): [
            column for column, cell in zip(columns, cells[1:], strict=True) if cell.strip() == "yes"
        ]
        for cells in rows
    }


def test_the_readme_toolsets_table_lists_every_tool_in_the_sets_that_have_it():
    table = _toolset_table()
    assert sorted(table) == sorted(tool.name for tool in ALL_TOOLS)
    for toolset in TOOLSETS:
        members = {tool.name for tool in select_tools(ALL_TOOLS, toolset)}
        marked = {name for name, sets in table.items() if toolset in sets}
        assert marked == members, toolset


def test_the_readme_says_how_many_tools_each_toolset_lists():
    section = README.split("## Toolsets", 1)[1].split("\n## ", 1)[0]
    assert f"lists {len(select_tools(ALL_TOOLS, 'default'))}:" in section
    assert f"lists all {len(ALL_TOOLS)}." in section


@pytest.mark.parametrize("name", sorted(cli.commands))
def test_every_command_is_in_the_readme_and_has_help(name):
    assert f"graphmem {name}" in README
    assert cli.commands[name].help


def test_the_readme_states_the_limits_the_server_enforces():
    limits = Limits()
    for value in (
        limits.max_name_length,
        limits.max_observation_length,
        limits.max_query_length,
        limits.max_batch_items,
        limits.max_observations_per_item,
    ):
        assert f"{value:,}" in README


def test_the_readme_test_command_is_what_ci_runs():
    ci = (Path(__file__).resolve().parents[1] / ".ci" / "run").read_text(encoding="utf-8")
    assert "./scripts/test" in README
    assert "./scripts/test" in ci
