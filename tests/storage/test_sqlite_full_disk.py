"""A SQLite memory on a disk that filled up: its reads keep working (issue 27, item 9).

A real full disk, not a mock: a small tmpfs mounted for the test, then filled. Mounting
needs root (CI runs the suite as root); elsewhere the test is skipped, saying so.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client

from graphmem.config import Settings
from graphmem.server import build_server


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A folder on a 4 MB filesystem of its own, unmounted after the test."""
    folder = tmp_path / "disk"
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(folder)], capture_output=True, text=True, check=False
    )
    if mounted.returncode != 0:
        pytest.skip(f"a small filesystem cannot be mounted here (needs root): {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def _fill(folder: Path) -> None:
    """Write a file until the disk refuses another byte."""
    with open(folder / "filler", "wb", buffering=0) as filler:
        for chunk in (b"x" * 65536, b"x" * 4096, b"x"):
            try:
                while True:
                    filler.write(chunk)
            except OSError:
                pass


@pytest.mark.anyio
async def test_every_read_keeps_working_right_after_the_disk_fills(small_disk: Path):
    settings = Settings(memory_path=small_disk / "memory.db", semantic=False)
    async with Client(build_server(settings), mode="legacy") as client:
        created = await client.call_tool(
            "create_entities",
            {
                "entities": [
                    {"name": f"Entity {i}", "entityType": "thing", "observations": [f"fact number {i} about ducks"]}
                    for i in range(50)
                ]
            },
        )
        assert not created.is_error
        # At once, before the background thread has indexed what the write left pending.
        _fill(small_disk)
        for tool, arguments in (
            ("read_graph", {}),
            ("search_nodes", {"query": "ducks 7"}),
            ("open_nodes", {"names": ["Entity 7"]}),
        ):
            answer = await client.call_tool(tool, arguments)
            assert not answer.is_error, (tool, answer.content)
        found = await client.call_tool("search_nodes", {"query": "fact number 7 about"})
        assert "Entity 7" in str(found.structured_content)


@pytest.mark.anyio
async def test_a_write_that_meets_the_full_disk_says_the_disk_is_full(small_disk: Path):
    settings = Settings(memory_path=small_disk / "memory.db", semantic=False)
    async with Client(build_server(settings), mode="legacy") as client:
        _fill(small_disk)
        written = await client.call_tool(
            "create_entities",
            {"entities": [{"name": f"E{i}", "entityType": "t", "observations": ["y" * 3000]} for i in range(40)]},
        )
        assert written.is_error
        assert "The disk holding the memory is full" in written.content[0].text  # type: ignore[union-attr]
        assert "Free some space" in written.content[0].text  # type: ignore[union-attr]
