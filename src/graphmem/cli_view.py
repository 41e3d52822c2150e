"""`graphmem view`: open the explorer on a local memory in the default browser.

It serves the memory over HTTP on a loopback port, as `serve --http` does, with a token
made for this run alone: the browser gets it once, in the address's fragment (which never
reaches the server or its logs), and the page keeps it for the tab and takes it out of the
address bar. Another user of the machine, or a web page, can reach the port but not the memory.

The browser is not started with that address: a command line is readable by every user of
the machine (`ps`), for as long as the browser runs. It is started with a file of this user's
own instead, readable by nobody else, which sends it on to the address; the file is removed
when the explorer stops.
"""

from __future__ import annotations

import html
import secrets
import shutil
import tempfile
import threading
import webbrowser
from collections.abc import Callable
from pathlib import Path

from graphmem.config import NetworkSettings, Settings
from graphmem.core.identity import Identity
from graphmem.credentials import Credential
from graphmem.storage import open_checked_store

__all__ = ["LOOPBACK", "run_view"]

LOOPBACK = "127.0.0.1"


def run_view(settings: Settings, *, port: int, browser: bool, read_only: bool, say: Callable[[str], None]) -> None:
    """Serve the memory's explorer on loopback until SIGINT or SIGTERM, and open it in the browser.

    Args:
        settings: the memory.
        port: the loopback port; 0 picks a free one.
        browser: open the default browser at the page (else only `say` its address).
        read_only: the page may look but not change: its token may only read.
        say: told the page's address, and how to stop, once the server listens.

    Raises:
        GraphmemError: the memory cannot be opened.
        OSError: the port cannot be bound.
    """
    token = secrets.token_urlsafe(24)
    network = NetworkSettings(
        host=LOOPBACK, port=port, credentials=(Credential(token, Identity(None, can_write=not read_only)),)
    )
    # Imported here: the MCP SDK takes over a second to import.
    from graphmem.server import build_server
    from graphmem.transports.http import run_http

    server = build_server(settings, store=open_checked_store(settings))
    # mkdtemp makes the folder readable by this user alone.
    private = Path(tempfile.mkdtemp(prefix="graphmem-view-"))

    def announce(mcp_url: str) -> None:
        page = mcp_url.removesuffix("/mcp") + "/#token=" + token
        say(f"graphmem explorer for {settings.location} at {page}")
        say("That address holds this run's key: keep it to yourself. Ctrl-C stops.")
        if browser:
            opener = _redirect_file(private, page)
            # The socket listens already: the browser's request waits until the server accepts it.
            threading.Thread(target=webbrowser.open, args=(opener.as_uri(),), daemon=True).start()

    try:
        run_http(server, network, announce=announce)
    finally:
        shutil.rmtree(private, ignore_errors=True)


def _redirect_file(folder: Path, address: str) -> Path:
    """A page in `folder`, readable by this user only, that sends the browser on to `address`."""
    path = folder / "open-explorer.html"
    quoted = html.escape(address, quote=True)
    path.write_text(
        "<!doctype html><meta charset=utf-8><title>graphmem explorer</title>"
        f'<meta http-equiv="refresh" content="0;url={quoted}"><a href="{quoted}">Open the explorer</a>\n',
        encoding="utf-8",
    )
    path.chmod(0o600)
    return path
