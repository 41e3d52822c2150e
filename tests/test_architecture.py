"""The folders are the layers: each imports only the ones below it, and only the composition root reads the environment.

cli.py, __main__.py                    the composition root (config.py: the settings it builds)
transports/                            stdio, TCP, HTTP
server/                                the MCP server: tools, resources, prompts, logging
tools/        transfer/                the wire schema; whole-memory import and export
domain/                                the rules
storage/                               the backends behind the `Store` contract
core/         _version.py              values every layer shares; they import nothing
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[1] / "src" / "graphmem"

# What each unit (a folder under graphmem/, or a top-level module) may import from graphmem,
# besides itself. A unit missing here is a new folder: give it a floor before it lands.
ALLOWED: dict[str, set[str]] = {
    "core": set(),
    "_version": set(),
    # Process set-up through the C library (one malloc arena): nothing of graphmem.
    "_malloc": set(),
    # The network server's token files (secrets): read for config, which reads the environment.
    "credentials": {"core"},
    # Which project a server works in: read from git's files and folders, for config to build.
    "project_resolution": {"core"},
    "config": {"core", "credentials", "project_resolution"},
    # open_store picks the backend from the settings, the one upward-looking name storage knows.
    "storage": {"core", "config"},
    # The sentence-embedding model: numpy and tokenizers, no graphmem layer but the shared values.
    "embedding": {"core"},
    "domain": {"core", "storage"},
    "transfer": {"core", "domain", "storage"},
    "tools": {"core", "domain"},
    "server": {"core", "domain", "storage", "tools", "config", "embedding", "_version", "project_resolution"},
    "explorer": {"core", "domain", "storage", "tools", "server", "_version"},
    "transports": {"server", "config", "explorer", "_version"},
    "cli": {
        "core",
        "domain",
        "storage",
        "transfer",
        "tools",
        "server",
        "transports",
        "config",
        "embedding",
        "_version",
        "_malloc",
        "cli_view",
        "cli_projects",
        "credentials",
    },
    "cli_view": {"config", "core", "credentials", "storage", "server", "transports"},
    "cli_projects": {"core", "storage"},
    "__main__": {"cli"},
    # The package's public surface: the errors, the values and KnowledgeGraph.
    "__init__": {"core", "domain", "_version"},
}

# The protocol and command-line stacks; the layers below the server work without them.
EDGE_PACKAGES = {"mcp", "mcp_types", "click", "starlette", "uvicorn", "anyio"}
PROTOCOL_FREE = ("core", "storage", "domain", "transfer", "config", "credentials", "project_resolution", "embedding")


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def _unit(path: Path) -> str:
    return path.relative_to(SOURCE).parts[0].removesuffix(".py")


def _graphmem_units(path: Path) -> set[str]:
    """The units `path` imports, other than its own; a bare `graphmem` import counts as `__init__`."""
    units = set()
    for name in _imports(path):
        if name == "graphmem":
            units.add("__init__")
        elif name.startswith("graphmem."):
            units.add(name.split(".")[1])
    return units - {_unit(path)}


SOURCES = sorted(SOURCE.rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(SOURCE)))
def test_every_module_imports_only_the_layers_below_its_own(path: Path):
    unit = _unit(path)
    assert unit in ALLOWED, f"{unit} has no place in the layers; add it to ALLOWED in this test"
    upward = _graphmem_units(path) - ALLOWED[unit]
    assert not upward, f"{path.relative_to(SOURCE)} imports {sorted(upward)}, which {unit} may not"


@pytest.mark.parametrize(
    "path",
    [path for path in SOURCES if _unit(path) in PROTOCOL_FREE],
    ids=lambda p: str(p.relative_to(SOURCE)),
)
def test_layers_below_the_server_never_import_the_protocol_or_cli_stacks(path: Path):
    imported = {name.split(".")[0] for name in _imports(path)}
    assert not imported & EDGE_PACKAGES, f"{path.relative_to(SOURCE)} imports {imported & EDGE_PACKAGES}"


def test_core_values_import_nothing_else_from_graphmem():
    for path in (SOURCE / "core").rglob("*.py"):
        outside = {
            name for name in _imports(path) if name.startswith("graphmem") and not name.startswith("graphmem.core")
        }
        assert not outside, f"{path.name} imports {outside}"


def _cycle(edges: dict[str, set[str]]) -> list[str]:
    """A cycle in `edges` as the units along it, or [] when there is none (depth-first search)."""
    done: set[str] = set()

    def visit(unit: str, trail: list[str]) -> list[str]:
        if unit in trail:
            return [*trail[trail.index(unit) :], unit]
        if unit in done:
            return []
        for below in sorted(edges.get(unit, set())):
            if found := visit(below, [*trail, unit]):
                return found
        done.add(unit)
        return []

    for unit in sorted(edges):
        if found := visit(unit, []):
            return found
    return []


def test_the_units_import_each_other_without_a_cycle():
    edges: dict[str, set[str]] = {unit: set() for unit in ALLOWED}
    for path in SOURCES:
        edges.setdefault(_unit(path), set()).update(_graphmem_units(path))
    assert not _cycle(edges), f"import cycle: {' -> '.join(_cycle(edges))}"


def test_the_layer_table_itself_has_no_cycle():
    # ALLOWED is the layer diagram; a cycle in it would let two floors lean on each other.
    assert not _cycle(ALLOWED), f"ALLOWED has a cycle: {' -> '.join(_cycle(ALLOWED))}"


def test_the_cycle_check_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(SOURCE)))
def test_only_config_reads_the_environment(path: Path):
    if path.name == "config.py":
        return
    text = path.read_text(encoding="utf-8")
    assert "os.environ" not in text and "os.getenv" not in text, f"{path.name} reads the environment"
