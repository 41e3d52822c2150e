"""What a tools/list costs the model: every byte of it is in the agent's context on every call.

Measured as a user would: the real server's answer through the MCP SDK client, as compact JSON
(no spaces, non-ASCII kept). The official server's own listing is about 10.7 KB.
"""

from __future__ import annotations

import dataclasses

import pytest
from benchmarks.context_cost import listing_bytes
from mcp import Client

from graphmem.config import Settings
from graphmem.server import build_server

pytestmark = pytest.mark.anyio

# Bytes of compact JSON. `default` has a budget of 24.2 KB, read as 24,200 (23.5 KB today); `official`
# (13.8 KB, with `project`, `asOf` and `validAt` on the reads and `validFrom` / `validUntil` on
# add_observations) and `all` (37.8 KB, with the change log's list_changes, undo_changes and
# diff_memory, and find_duplicates) sit a little above what they cost, so that they cannot grow
# unnoticed.
BUDGETS = {"default": 24_200, "official": 14_200, "all": 38_800}


async def _listing_bytes(settings: Settings, toolset: str) -> int:
    # The same measure as the figures in the docs (python -m benchmarks.context_cost).
    async with Client(build_server(dataclasses.replace(settings, toolset=toolset)), mode="legacy") as client:
        size, _ = await listing_bytes(client)
    return size


@pytest.mark.parametrize("toolset", list(BUDGETS))
async def test_each_toolset_listing_stays_within_its_budget(settings, toolset):
    assert await _listing_bytes(settings, toolset) <= BUDGETS[toolset]
