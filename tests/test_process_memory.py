"""The server process keeps one malloc arena on glibc (see graphmem._malloc for the figures)."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
    reason="mallopt's arena limit exists only in glibc",
)
def test_on_glibc_the_arena_limit_is_accepted():
    # In a process of its own: the limit is for a process about to start its threads.
    result = subprocess.run(
        [sys.executable, "-c", "from graphmem._malloc import use_one_malloc_arena as f; print(f())"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.strip() == "True"
