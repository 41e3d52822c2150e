"""The `graphmem` command: the composition root that reads flags and the environment.

With no sub-command it serves MCP over stdio, so a client config of just
`graphmem` (or `uvx graphmem`) works like the official server's `npx` line.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from graphmem._version import __version__
from graphmem.config import Settings
from graphmem.errors import GraphmemError
from graphmem.graph import KnowledgeGraph
from graphmem.storage import open_store

__all__ = ["cli", "main"]

F = TypeVar("F", bound=Callable[..., Any])


def memory_options(command: F) -> F:
    """The options that say which memory to use, shared by every command."""
    command = click.option(
        "--strict/--no-strict",
        default=None,
        help="Reject relations whose entities do not exist (env GRAPHMEM_STRICT).",
    )(command)
    command = click.option(
        "--memory-file",
        "--memory-path",
        "-f",
        "memory_file",
        metavar="PATH",
        default=None,
        help=(
            "The memory file (env MEMORY_FILE_PATH). A .jsonl or .json file keeps the official "
            "JSONL format; any other name is a SQLite database. Default: graphmem's file in your "
            "user data directory (see `graphmem info`)."
        ),
    )(command)
    return command


def _settings(ctx: click.Context, memory_file: str | None, strict: bool | None) -> Settings:
    parent = ctx.find_root().params
    try:
        return Settings.from_env(
            memory_file=memory_file or parent.get("memory_file"),
            strict=strict if strict is not None else parent.get("strict"),
        )
    except GraphmemError as error:
        raise click.ClickException(str(error)) from error


def _open_graph(settings: Settings) -> KnowledgeGraph:
    try:
        return KnowledgeGraph(open_store(settings), strict=settings.strict, limits=settings.limits)
    except GraphmemError as error:
        raise click.ClickException(str(error)) from error


@click.group(invoke_without_command=True)
@memory_options
@click.version_option(__version__, prog_name="graphmem")
@click.pass_context
def cli(ctx: click.Context, memory_file: str | None, strict: bool | None) -> None:
    """graphmem: persistent knowledge-graph memory for AI agents, over MCP.

    Run with no command to serve MCP over stdio.
    """
    if ctx.invoked_subcommand is None:
        ctx.invoke(serve, memory_file=memory_file, strict=strict)


@cli.command(name="serve")
@memory_options
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"], case_sensitive=False),
    default="warning",
    show_default=True,
    help="How much to log to stderr.",
)
@click.pass_context
def serve(ctx: click.Context, memory_file: str | None, strict: bool | None, log_level: str = "warning") -> None:
    """Serve MCP over stdio (what an MCP client starts)."""
    settings = _settings(ctx, memory_file, strict)
    logging.basicConfig(stream=sys.stderr, level=log_level.upper(), format="graphmem %(levelname)s: %(message)s")
    # Imported here, not at the top: the MCP SDK takes over a second to import, and the
    # other commands (info, stats, import, export) do not need it.
    import anyio

    from graphmem.server import build_server
    from graphmem.transports import run_stdio

    anyio.run(run_stdio, build_server(settings))


@cli.command(name="info")
@memory_options
@click.pass_context
def info(ctx: click.Context, memory_file: str | None, strict: bool | None) -> None:
    """Show where the memory lives and which backend holds it."""
    settings = _settings(ctx, memory_file, strict)
    click.echo(f"graphmem {__version__}")
    click.echo(f"memory file: {settings.memory_path}")
    click.echo(f"backend: {settings.backend}")
    click.echo(f"exists: {'yes' if settings.memory_path.exists() else 'no'}")
    click.echo(f"strict: {'yes' if settings.strict else 'no'}")


@cli.command(name="stats")
@memory_options
@click.pass_context
def stats(ctx: click.Context, memory_file: str | None, strict: bool | None) -> None:
    """Count the entities, relations and observations in memory."""
    settings = _settings(ctx, memory_file, strict)
    graph = _open_graph(settings)
    try:
        counts = graph.counts()
    except GraphmemError as error:
        raise click.ClickException(str(error)) from error
    finally:
        graph.store.close()
    size = settings.memory_path.stat().st_size if settings.memory_path.exists() else 0
    click.echo(f"memory file: {settings.memory_path}")
    click.echo(f"entities: {counts.entities}")
    click.echo(f"relations: {counts.relations}")
    click.echo(f"observations: {counts.observations}")
    click.echo(f"size on disk: {size} bytes")


def main() -> None:
    """Entry point of the `graphmem` console script."""
    cli()
