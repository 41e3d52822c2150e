"""The memory-usage prompts: their steps, their arguments and their errors, without MCP."""

from __future__ import annotations

import re

import pytest

from graphmem.core.errors import InvalidInputError
from graphmem.server.prompts import DEFAULT_USER, PROMPTS, render_prompt
from graphmem.tools import ALL_TOOLS
from graphmem.tools.toolsets import TOOLSETS, select_tools

EVERY_TOOL = {spec.name for spec in ALL_TOOLS}


@pytest.mark.parametrize("toolset", list(TOOLSETS))
@pytest.mark.parametrize("name", list(PROMPTS))
def test_a_prompt_names_only_tools_the_server_lists(name, toolset):
    listed = [spec.name for spec in select_tools(ALL_TOOLS, toolset)]
    text = render_prompt(name, None, listed)
    assert {word for word in re.findall(r"[a-z_]+", text) if word in EVERY_TOOL} <= set(listed)


def test_chat_personalization_without_a_user_uses_the_specs_default_user():
    for arguments in (None, {}, {"user": "  "}):
        assert f"Assume you are talking with {DEFAULT_USER}." in render_prompt("chat-personalization", arguments, [])


def test_chat_personalization_puts_the_named_user_in_every_step_that_names_one():
    text = render_prompt("chat-personalization", {"user": " Zoë "}, ["open_nodes"])
    assert text.count("Zoë") == 4 and DEFAULT_USER not in text


@pytest.mark.parametrize(
    ("name", "arguments", "field"),
    [
        ("no-such-prompt", None, "name"),
        ("memory-usage", {"user": "Ada"}, "arguments.user"),
        ("chat-personalization", {"name": "Ada"}, "arguments.name"),
        ("chat-personalization", {"user": "a" * 1001}, "arguments.user"),
        ("chat-personalization", {"user": "Ada\rBob"}, "arguments.user"),
    ],
)
def test_a_bad_prompt_name_or_argument_is_an_error_naming_the_field(name, arguments, field):
    with pytest.raises(InvalidInputError) as error:
        render_prompt(name, arguments, [])
    assert error.value.field == field
