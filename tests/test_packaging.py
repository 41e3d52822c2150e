"""The wheel and the sdist are what a user installs: each builds, holds what it should, and runs.

Each artifact is installed with its dependencies into a venv of its own, made without
pip (the test venv's pip installs into it), and the installed `graphmem` is started
from another folder, so nothing here can import the sources under test by accident.
The dependencies come from PyPI, or from pip's cache after the first run.
"""

from __future__ import annotations

import email.parser
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from graphmem import __version__

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
# Bounds for building and installing: generous, since pip may download on a busy machine.
BUILD_SECONDS = 300


def _run(*command: str | Path, cwd: Path | None = None) -> str:
    done = subprocess.run(
        [str(part) for part in command], cwd=cwd, capture_output=True, text=True, timeout=BUILD_SECONDS
    )
    assert done.returncode == 0, f"{' '.join(map(str, command))} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sdist, and the wheel `build` makes from it (which proves the sdist is complete)."""
    out = tmp_path_factory.mktemp("dist")
    # No isolation: hatchling comes with the test extra, so the build needs no download.
    _run(sys.executable, "-m", "build", "--no-isolation", "--outdir", out, ROOT)
    return {"wheel": next(out.glob("*.whl")), "sdist": next(out.glob("*.tar.gz"))}


@pytest.fixture(scope="module")
def installed(artifacts: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A fresh venv per artifact with it installed: the path of each venv's `graphmem` command."""
    commands: dict[str, Path] = {}
    installs: list[tuple[list[str], subprocess.Popen[str]]] = []
    for kind, artifact in artifacts.items():
        venv = tmp_path_factory.mktemp(f"venv-{kind}")
        _run(sys.executable, "-m", "venv", "--without-pip", venv)
        command = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python")]
        command += ["install", "--quiet", "--disable-pip-version-check", "--no-compile", str(artifact)]
        # Both at once, and no bytecode compiled ahead (Python compiles what it imports):
        # most of the time is spent resolving and unpacking the dependencies.
        installs.append(
            (command, subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
        )
        commands[kind] = venv / "bin" / "graphmem"
    for command, process in installs:
        output, _ = process.communicate(timeout=BUILD_SECONDS)
        assert process.returncode == 0, f"{' '.join(command)} failed:\n{output}"
    return commands


def test_the_wheel_holds_the_package_its_data_and_licence_and_no_tests_or_benchmarks(artifacts):
    names = zipfile.ZipFile(artifacts["wheel"]).namelist()
    assert {name.split("/")[0] for name in names} == {"graphmem", f"graphmem-{__version__}.dist-info"}
    assert "graphmem/py.typed" in names
    assert "graphmem/storage/migrations/sqlite/0001_init.sql" in names
    assert f"graphmem-{__version__}.dist-info/licenses/LICENSE" in names


def test_the_sdist_holds_sources_docs_readme_and_licence_and_nothing_local(artifacts):
    with tarfile.open(artifacts["sdist"]) as sdist:
        names = [name.split("/", 1)[1] for name in sdist.getnames() if "/" in name]
    tops = {name.split("/")[0] for name in names}
    assert {"src", "README.md", "LICENSE", "pyproject.toml", "PKG-INFO"} <= tops
    assert not tops & {".venv", ".hypothesis", ".git", "tests", "benchmarks", ".pytest_cache"}


def test_the_metadata_says_what_graphmem_is_and_where_to_find_more(artifacts):
    with zipfile.ZipFile(artifacts["wheel"]) as wheel:
        text = wheel.read(f"graphmem-{__version__}.dist-info/METADATA").decode()
    metadata = email.parser.Parser().parsestr(text)
    assert "knowledge-graph memory" in metadata["Summary"]
    assert metadata["License-Expression"] == "MIT"
    assert "mcp" in metadata["Keywords"].split(",")
    assert "Programming Language :: Python :: 3.11" in metadata.get_all("Classifier")
    links = dict(link.split(", ", 1) for link in metadata.get_all("Project-URL"))
    assert {"Homepage", "Documentation", "Source", "Issues"} <= set(links)
    # The long description is the README, so PyPI's page is the one users read first.
    assert metadata.get_payload().startswith("# graphmem")


@pytest.mark.parametrize("kind", ["wheel", "sdist"])
def test_the_installed_command_reports_its_version(installed, kind, tmp_path):
    assert _run(installed[kind], "--version", cwd=tmp_path).strip() == f"graphmem, version {__version__}"


@pytest.mark.parametrize("kind", ["wheel", "sdist"])
async def test_the_installed_server_remembers_over_stdio(installed, kind, tmp_path):
    memory = tmp_path / "memory.db"
    server = StdioServerParameters(command=str(installed[kind]), env={"MEMORY_FILE_PATH": str(memory)}, cwd=tmp_path)
    entity = {"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]}
    with anyio.fail_after(60):
        async with Client(server, mode="legacy") as client:
            await client.call_tool("create_entities", {"entities": [entity]})
            answer = await client.call_tool("open_nodes", {"names": ["Ada"]})
    assert answer.structured_content["entities"] == [entity]
    assert memory.exists()
