"""The browser tests share one chromium for the session (see tests/helpers_browser.py)."""

from __future__ import annotations

import pytest

from tests.helpers_browser import browser

__all__ = ["browser"]


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    # Session scope, so that the session's browser and the tests run on one event loop.
    return "asyncio"
