"""The layers import only downward, and only the composition root reads the environment."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[1] / "src" / "graphmem"

# The protocol and command-line layers; every other module is domain or storage and must
# work without MCP, click or an HTTP stack.
EDGE_MODULES = {"tools", "server", "transports", "cli.py", "__main__.py"}
EDGE_PACKAGES = {"mcp", "mcp_types", "click", "starlette", "uvicorn", "anyio"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def _core_files() -> list[Path]:
    return sorted(path for path in SOURCE.rglob("*.py") if path.relative_to(SOURCE).parts[0] not in EDGE_MODULES)


@pytest.mark.parametrize("path", _core_files(), ids=lambda p: str(p.relative_to(SOURCE)))
def test_core_modules_never_import_the_protocol_or_cli_layers(path: Path):
    imported = {name.split(".")[0] for name in _imports(path)}
    assert not imported & EDGE_PACKAGES, f"{path.name} imports {imported & EDGE_PACKAGES}"
    graphmem_imports = {name for name in _imports(path) if name.startswith("graphmem.")}
    upward = {name for name in graphmem_imports if name.split(".")[1] in {"tools", "server", "transports", "cli"}}
    assert not upward, f"{path.name} imports the layers above it: {upward}"


def test_models_and_errors_import_nothing_from_graphmem():
    for name in ("models.py", "errors.py"):
        assert not {imp for imp in _imports(SOURCE / "core" / name) if imp.startswith("graphmem")}


@pytest.mark.parametrize("path", sorted(SOURCE.rglob("*.py")), ids=lambda p: str(p.relative_to(SOURCE)))
def test_only_config_reads_the_environment(path: Path):
    if path.name == "config.py":
        return
    text = path.read_text(encoding="utf-8")
    assert "os.environ" not in text and "os.getenv" not in text, f"{path.name} reads the environment"


@pytest.mark.parametrize("path", sorted((SOURCE / "storage").rglob("*.py")), ids=lambda p: p.name)
def test_storage_imports_only_models_errors_and_itself(path: Path):
    graphmem_imports = {name for name in _imports(path) if name.startswith("graphmem")}
    allowed = {"graphmem.core.models", "graphmem.core.errors"}
    if path.name == "__init__.py":
        allowed.add("graphmem.config")  # open_store chooses the backend from the settings
    assert all(name in allowed or name.startswith("graphmem.storage") for name in graphmem_imports), graphmem_imports
