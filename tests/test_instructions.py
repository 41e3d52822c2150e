"""The server instructions name only the tools the server lists, and stay short."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import pytest
from mcp import Client

from graphmem.config import ProjectChoice, Settings
from graphmem.server import build_server
from graphmem.server.instructions import build_instructions
from graphmem.tools import ALL_TOOLS
from graphmem.tools.toolsets import TOOLSETS, select_tools

EVERY_TOOL = {spec.name for spec in ALL_TOOLS}


def _named_tools(text: str) -> set[str]:
    return {word for word in re.findall(r"[a-z_]+", text) if word in EVERY_TOOL}


@pytest.mark.parametrize("toolset", list(TOOLSETS))
def test_instructions_name_only_listed_tools_and_fit_in_a_short_read(toolset):
    listed = [spec.name for spec in select_tools(ALL_TOOLS, toolset)]
    text = build_instructions(listed)
    assert _named_tools(text) <= set(listed)
    assert len(text) < 1500


def test_instructions_for_a_server_with_save_memory_advise_it_instead_of_the_official_writes():
    text = build_instructions(["search_nodes", "save_memory", "create_entities", "add_observations"])
    assert "save_memory" in text and "one fact per observation" in text
    assert "create_entities" not in text


def test_instructions_without_the_official_writes_advise_create_entities_and_create_relations():
    text = build_instructions(["create_entities", "create_relations", "add_observations"])
    assert "create_entities" in text and "create_relations" in text and "supersedes" in text


def test_instructions_for_a_server_with_none_of_the_advised_tools_only_say_what_the_memory_is():
    text = build_instructions(["graph_stats"])
    assert "\n" not in text and "knowledge graph" in text


def test_instructions_for_a_server_with_query_nodes_say_what_it_looks_up_and_that_it_pages():
    text = build_instructions(["read_graph", "search_nodes", "query_nodes"])
    assert "query_nodes" in text and "importance" in text
    assert "read_graph, search_nodes and query_nodes take limit and offset" in text
    assert "query_nodes" not in build_instructions(["read_graph", "search_nodes"])


def test_instructions_for_a_server_in_a_project_name_it_once_and_say_never_to_pass_one():
    listed = [spec.name for spec in select_tools(ALL_TOOLS, "default")]
    text = build_instructions(listed, project="api")
    line = "- It is scoped to project api automatically; never pass a project."
    assert text.splitlines()[1] == line
    assert text.replace(line + "\n", "") == build_instructions(listed)
    assert "project" not in build_instructions(listed)


def test_instructions_with_the_longest_project_name_still_fit_in_a_short_read():
    listed = [spec.name for spec in select_tools(ALL_TOOLS, "all")]
    assert len(build_instructions(listed, project="p" * 100)) < 1500


@pytest.mark.anyio
async def test_a_server_started_in_a_project_tells_the_client_its_name(tmp_path: Path):
    project = ProjectChoice("github.com/acme/api", "api", "the git remote origin of /src/api")
    settings = Settings(memory_path=tmp_path / "memory.db", project=project)
    with anyio.fail_after(5):
        async with Client(build_server(settings)) as client:
            in_project = client.instructions
        async with Client(build_server(Settings(memory_path=tmp_path / "memory.db"))) as client:
            off = client.instructions
    assert in_project is not None and "scoped to project api automatically" in in_project
    assert off is not None and "project" not in off
