"""The published input schemas are what is enforced: what a tool's schema refuses, the tool refuses.

For every tool in every set, arguments that break the published schema in one place
(null where no null is allowed, an integer past its bounds, a string under its
minimum length, a required key left out) are refused with an input error that names
the field, and the memory is unchanged. No argument may make graphmem fail unexpectedly.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from graphmem.tools import ALL_TOOLS

pytestmark = pytest.mark.anyio

SPECS = {spec.name: spec for spec in ALL_TOOLS}
_MISSING = object()

Path = tuple[str | int, ...]


def _properties(schema: dict[str, Any], path: Path) -> Iterator[tuple[Path, dict[str, Any], dict[str, Any]]]:
    """Every property of an input schema, nested ones in objects and arrays of objects too:
    (its path in the arguments, its schema, the schema of the object holding it)."""
    for key, sub in schema.get("properties", {}).items():
        yield (*path, key), sub, schema
        items = sub.get("items")
        if sub.get("type") == "object" and "properties" in sub:
            yield from _properties(sub, (*path, key))
        if sub.get("type") == "array" and isinstance(items, dict) and items.get("type") == "object":
            yield from _properties(items, (*path, key, 0))


def _types(schema: dict[str, Any]) -> set[str]:
    if "anyOf" in schema or "oneOf" in schema:
        return {kind for option in schema.get("anyOf", schema.get("oneOf")) for kind in _types(option)}
    kind = schema.get("type")
    return set(kind) if isinstance(kind, list) else {kind} if kind else set()


def _example(schema: dict[str, Any]) -> Any:
    """A value the schema accepts, with every required key of every object filled in."""
    kinds = _types(schema)
    if "enum" in schema:
        return schema["enum"][0]
    if "object" in kinds:
        return {key: _example(schema["properties"][key]) for key in schema.get("required", [])}
    if "string" in kinds:
        return "a"
    if "array" in kinds:
        return [_example(schema.get("items", {"type": "string"}))]
    if "integer" in kinds or "number" in kinds:
        return schema.get("minimum", 1)
    if "boolean" in kinds:
        return True
    return {}


def _with(arguments: Any, path: Path, value: Any) -> Any:
    """`arguments` with `value` at `path` (creating the objects and one-item lists on the way),
    or without the key there when `value` is `_MISSING`."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(head, int):
        items = list(arguments) if isinstance(arguments, list) and arguments else [{}]
        items[0] = _with(items[0], rest, value)
        return items
    changed = dict(arguments) if isinstance(arguments, dict) else {}
    if not rest and value is _MISSING:
        changed.pop(head, None)
    else:
        changed[head] = _with(changed.get(head), rest, value)
    return changed


def _name(path: Path) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _probes() -> Iterator[Any]:
    """(tool, field, arguments valid but for one place that breaks the schema) for every tool."""
    for spec in ALL_TOOLS:
        valid = _example(spec.input_schema)

        def probe(path: Path, value: Any, label: str, spec=spec, valid=valid) -> Any:
            field = _name(path)
            return pytest.param(spec.name, field, _with(valid, path, value), id=f"{spec.name}-{field}-{label}")

        for path, sub, holder in _properties(spec.input_schema, ()):
            kinds = _types(sub)
            if "null" not in kinds:
                yield probe(path, None, "null")
            if "integer" in kinds and "enum" not in sub:
                maximum = sub.get("maximum")
                yield probe(path, maximum + 1 if maximum is not None else 2**63, "above")
                yield probe(path, sub["minimum"] - 1 if "minimum" in sub else -(2**63) - 1, "below")
            if kinds == {"string"} and sub.get("minLength"):
                yield probe(path, "", "empty")
            if path[-1] in holder.get("required", []) and len(path) > 1:
                yield probe(path, _MISSING, "missing")


async def _graph(client) -> Any:
    result = await client.call_tool("read_graph", {})
    return result.structured_content


def _refuses(result, field: str) -> None:
    assert result.is_error, f"accepted although the schema refuses it: {result.content[0].text[:300]}"
    text = " ".join(item.text for item in result.content)
    assert "failed unexpectedly" not in text, text
    assert field.rsplit(".", 1)[-1].split("[")[0] in text, f"the error does not name {field}: {text[:400]}"


@pytest.fixture
def settings(any_backend_settings):
    # Every tool refuses bad input alike on every backend, before the memory is touched.
    return dataclasses.replace(any_backend_settings, toolset="all")


@pytest.mark.parametrize(("tool", "field", "arguments"), list(_probes()))
async def test_arguments_the_schema_refuses_are_refused_naming_the_field(client, tool, field, arguments):
    await client.call_tool("create_entities", {"entities": [{"name": "a", "entityType": "t", "observations": ["x"]}]})
    before = await _graph(client)
    _refuses(await client.call_tool(tool, arguments), field)
    assert await _graph(client) == before


def test_every_tool_is_probed():
    probed = {param.values[0] for param in _probes()}
    with_properties = {name for name, spec in SPECS.items() if spec.input_schema.get("properties")}
    assert with_properties <= probed


# -- the reproductions from outside testing ----------------------------------------------------------


async def test_update_entities_with_a_null_entity_type_renames_nothing(client):
    await client.call_tool("create_entities", {"entities": [{"name": "a", "entityType": "t", "observations": []}]})
    result = await client.call_tool(
        "update_entities", {"entities": [{"name": "a", "entityType": None, "newName": "b"}]}
    )
    assert result.is_error
    assert "entityType" in result.content[0].text and "null" in result.content[0].text
    graph = await _graph(client)
    assert [entity["name"] for entity in graph["entities"]] == ["a"]


async def test_an_entity_cannot_be_renamed_to_an_empty_name(client):
    await client.call_tool("create_entities", {"entities": [{"name": "a", "entityType": "t", "observations": []}]})
    result = await client.call_tool("update_entities", {"entities": [{"name": "a", "newName": ""}]})
    assert result.is_error
    assert "newName" in result.content[0].text
    assert [entity["name"] for entity in (await _graph(client))["entities"]] == ["a"]


async def test_upsert_entities_without_observations_is_what_its_schema_allows(client):
    listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    item = listed["upsert_entities"].input_schema["properties"]["entities"]["items"]
    assert "observations" not in item["required"]
    result = await client.call_tool("upsert_entities", {"entities": [{"name": "a", "entityType": "t"}]})
    assert not result.is_error, result.content[0].text
    assert (await _graph(client))["entities"] == [{"name": "a", "entityType": "t", "observations": []}]


async def test_a_supersedes_list_shorter_than_contents_is_refused_and_adds_nothing(client):
    await client.call_tool("create_entities", {"entities": [{"name": "a", "entityType": "t", "observations": ["x"]}]})
    before = await _graph(client)
    addition = {"entityName": "a", "contents": ["y", "z"], "supersedes": [None]}
    result = await client.call_tool("add_observations", {"observations": [addition]})
    assert result.is_error
    assert "supersedes has 1 items for 2 contents" in result.content[0].text
    assert await _graph(client) == before


@pytest.mark.parametrize(
    ("tool", "arguments", "field", "bound"),
    [
        ("read_graph", {"offset": 2**63}, "offset", "1000000000"),
        ("read_graph", {"limit": 2**64}, "limit", "1000000000"),
        ("search_nodes", {"query": "a", "offset": 2**63}, "offset", "1000000000"),
        ("search_relations", {"offset": 2**63}, "offset", "1000000000"),
        ("search_relations", {"limit": 2**63}, "limit", "1000"),
    ],
)
async def test_numbers_past_64_bits_are_an_input_error_naming_the_field_and_its_range(
    client, tool, arguments, field, bound
):
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    text = result.content[0].text
    assert "unexpectedly" not in text
    assert field in text and bound in text, text
