"""Which tools a server lists: toolsets, an exact list, and the errors for unknown names."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from click.testing import CliRunner
from mcp import Client

from graphmem.cli import cli
from graphmem.config import TOOLSET_NAMES, Settings
from graphmem.core.errors import ConfigError
from graphmem.server import build_server
from graphmem.tools import ALL_TOOLS, OFFICIAL_TOOLS
from graphmem.tools.toolsets import TOOLSETS, select_tools

OFFICIAL_NAMES = [spec.name for spec in OFFICIAL_TOOLS]


async def _listed(settings: Settings) -> list[str]:
    async with Client(build_server(settings), mode="legacy") as client:
        return [tool.name for tool in (await client.list_tools()).tools]


@pytest.mark.anyio
async def test_the_official_toolset_lists_exactly_the_official_nine(settings):
    assert await _listed(dataclasses.replace(settings, toolset="official")) == OFFICIAL_NAMES


@pytest.mark.anyio
async def test_the_default_toolset_is_lean_and_starts_with_the_official_nine(settings):
    listed = await _listed(settings)
    assert listed[:9] == OFFICIAL_NAMES
    assert len(listed) <= 20


@pytest.mark.anyio
async def test_the_all_toolset_lists_every_tool(settings):
    assert await _listed(dataclasses.replace(settings, toolset="all")) == [spec.name for spec in ALL_TOOLS]


@pytest.mark.anyio
async def test_an_exact_tool_list_wins_over_the_toolset(settings):
    chosen = dataclasses.replace(settings, toolset="all", tools=("open_nodes", "search_nodes"))
    # Listed in graphmem's order, whatever the order asked.
    assert await _listed(chosen) == ["search_nodes", "open_nodes"]


def test_every_name_in_a_toolset_is_a_real_tool():
    known = {spec.name for spec in ALL_TOOLS}
    for name, members in TOOLSETS.items():
        assert set(members or ()) <= known, name
    assert list(TOOLSETS) == list(TOOLSET_NAMES)


def test_an_unknown_tool_name_is_an_error_listing_the_tools():
    with pytest.raises(ConfigError, match="No tool named remember_everything; the tools are: create_entities"):
        select_tools(ALL_TOOLS, "default", ["open_nodes", "remember_everything"])


def test_an_unknown_toolset_is_an_error_listing_the_toolsets():
    with pytest.raises(ConfigError, match="Choose one of: official, default, all"):
        select_tools(ALL_TOOLS, "minimal")


def test_the_environment_chooses_the_toolset_and_the_tools(tmp_path: Path):
    env = {"GRAPHMEM_TOOLSET": "Official", "GRAPHMEM_TOOLS": " open_nodes, read_graph ,"}
    settings = Settings.from_env(env, cwd=tmp_path)
    assert settings.toolset == "official"
    assert settings.tools == ("open_nodes", "read_graph")
    flags = Settings.from_env(env, toolset="all", tools="search_nodes", cwd=tmp_path)
    assert (flags.toolset, flags.tools) == ("all", ("search_nodes",))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["serve", "--tools", "open_nodes,nope"], "No tool named nope"),
        (["--toolset", "tiny"], "Invalid value for '--toolset'"),
    ],
)
def test_the_command_line_refuses_unknown_names_in_one_line(tmp_path: Path, args: list[str], message: str):
    result = CliRunner().invoke(cli, ["-f", str(tmp_path / "m.db"), *args])
    assert result.exit_code != 0
    assert message in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "m.db").exists()


def test_the_environment_toolset_is_checked_before_serving(tmp_path: Path):
    result = CliRunner().invoke(cli, ["-f", str(tmp_path / "m.db")], env={"GRAPHMEM_TOOLSET": "tiny"})
    assert result.exit_code == 1
    assert "Config 'GRAPHMEM_TOOLSET' has value 'tiny'. Choose one of: official, default, all." in result.output
