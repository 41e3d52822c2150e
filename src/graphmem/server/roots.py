"""The project from the client's roots: the folders an MCP client says it works in.

`--project auto` looks, in order, at the folder the client names in its configuration
(`--workspace`), then at the client's roots when it offers them, then at the working directory
the client started the server in. Roots come over the protocol, after the handshake: the server
asks once, before the first tool call, and only a client that declared the `roots` capability
(few do, and protocol 2026-07-28 deprecates it). The first root that is a folder on this machine
decides, as a workspace would; a client without roots, or whose roots name no folder here, keeps
the project of the working directory.
"""

from __future__ import annotations

import logging
import urllib.parse
import warnings
from pathlib import Path
from typing import Any

import mcp_types as types

from graphmem.core.projects import Scope
from graphmem.project_resolution import AUTO, ProjectChoice, resolve_project
from graphmem.server.state import AppState

__all__ = ["project_from_roots"]

logger = logging.getLogger("graphmem.server")


def _folder(uri: str) -> Path | None:
    """The local folder a `file://` root names, or None."""
    parsed = urllib.parse.urlparse(uri)
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        return None
    path = Path(urllib.parse.unquote(parsed.path))
    return path if path.is_dir() else None


async def project_from_roots(state: AppState, ctx: Any) -> None:
    """Ask the client for its roots and, if one is a folder here, work in its project."""
    session = ctx.session
    if not session.check_client_capability(types.ClientCapabilities(roots=types.RootsCapability())):
        return
    try:
        with warnings.catch_warnings():
            # Deprecated in protocol 2026-07-28; clients of the earlier revisions still offer it.
            warnings.simplefilter("ignore")
            listed = await session.list_roots()
    except Exception as error:  # a client that declared roots and then failed to list them
        logger.warning("the client's roots could not be read (%s); the project stays as found", error)
        return
    for root in listed.roots:
        folder = _folder(str(root.uri))
        if folder is None:
            continue
        chosen = resolve_project(
            AUTO,
            setting_source="--project",
            workspace=str(folder),
            workspace_source="the client's roots",
            cwd=folder,
            home=state.home,
        )
        if isinstance(chosen, ProjectChoice):
            state.scope = Scope(chosen.id)
            logger.info("project %s, from the client's root %s", chosen.label, folder)
        return
