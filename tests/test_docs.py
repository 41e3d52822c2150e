"""The README stays honest: every tool and command it must mention is there, with help text."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphmem.cli import cli
from graphmem.limits import Limits
from graphmem.tools import ALL_TOOLS

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("tool", ALL_TOOLS, ids=lambda tool: tool.name)
def test_every_tool_is_in_the_readme_and_has_a_description(tool):
    assert f"`{tool.name}`" in README
    assert len(tool.description) > 40


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
