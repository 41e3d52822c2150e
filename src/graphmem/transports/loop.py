"""The event loop the transports run on, and how a network server learns it must stop."""

from __future__ import annotations

import signal
import sys
from typing import Any

import anyio

__all__ = ["STOP_SIGNALS", "event_loop_options", "wait_for_stop_signal"]

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""Ctrl-C and what service managers send: both stop a network server gracefully."""


def event_loop_options() -> dict[str, Any]:
    """anyio backend options: uvloop where it is installed.

    A call's round trip is mostly event-loop turns (the SDK hands each message
    through several tasks and streams); uvloop makes each turn cheaper, which takes
    about a fifth off a ping. Without it (Windows) the standard loop serves the same.
    """
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return {}
    return {"use_uvloop": True}


async def wait_for_stop_signal() -> None:
    """Return when SIGINT or SIGTERM arrives (on Windows, Ctrl-C raises KeyboardInterrupt instead)."""
    if sys.platform == "win32":  # pragma: no cover - anyio has no signal receiver there
        await anyio.sleep_forever()
    with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
        async for _ in signals:
            return
