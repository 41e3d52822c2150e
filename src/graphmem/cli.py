"""The `graphmem` command: the composition root that reads flags and the environment.

With no sub-command it serves MCP over stdio, so a client config of just
`graphmem` (or `uvx graphmem`) works like the official server's `npx` line.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import IO, Any, TypeVar, cast

import click

from graphmem._malloc import use_one_malloc_arena
from graphmem._version import __version__
from graphmem.config import (
    DEFAULT_HTTP_PORT,
    DEFAULT_TCP_PORT,
    NetworkSettings,
    Settings,
    malloc_arenas_chosen_by_user,
)
from graphmem.core.errors import GraphmemError, ImportFormatError, InvalidInputError, SchemaVersionError
from graphmem.core.projects import EVERY, Scope, project_name
from graphmem.domain.change_log import RecordingStore
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.history import DEFAULT_CHANGES, ChangeQuery, describe, list_changes
from graphmem.domain.meaning import EMBED_BATCH
from graphmem.domain.secret_policy import Policy, redaction_note
from graphmem.domain.secret_scan import SecretScan, fix_secrets, scan_secrets
from graphmem.embedding import load_embedder
from graphmem.storage import open_checked_store, open_store
from graphmem.storage.base import Store
from graphmem.transfer import (
    EXPORT_FORMATS,
    ExportFormat,
    ImportReport,
    export_graph,
    import_stream,
    migrate,
    write_atomically,
)

__all__ = ["cli", "main"]

F = TypeVar("F", bound=Callable[..., Any])

LOG_LEVELS = ("debug", "info", "warning", "error")


def _keep_secrets_choice(ctx: click.Context, _: click.Parameter, value: str | None) -> None:
    if value is not None:
        ctx.meta["secrets"] = value


def memory_options(command: F) -> F:
    """The options that say which memory to use, shared by every command."""
    command = click.option(
        "--secrets",
        type=click.Choice(["redact", "refuse", "allow"], case_sensitive=False),
        default=None,
        expose_value=False,
        callback=_keep_secrets_choice,
        help=(
            "What to do with a secret written to the memory (an API key, a password, a private key): "
            "redact it (the default), refuse the write, or allow it (env GRAPHMEM_SECRETS)."
        ),
    )(command)
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


def project_options(command: F) -> F:
    """Which project of the memory a server works in, on the commands that serve or describe one."""
    command = click.option(
        "--workspace",
        metavar="DIR",
        default=None,
        help=(
            "The folder the client works in, where --project auto looks instead of the working directory "
            "(env GRAPHMEM_WORKSPACE), such as ${workspaceFolder} in a client's configuration."
        ),
    )(command)
    command = click.option(
        "--project",
        metavar="NAME|auto",
        default=None,
        help=(
            "Work in one project of the memory (env GRAPHMEM_PROJECT). auto takes it from the git repository "
            "or folder of --workspace or the working directory: its remote, else its root, else the folder. "
            "Default: off, one memory for all work."
        ),
    )(command)
    return command


def semantic_option(command: F) -> F:
    """Whether graphmem searches by meaning, on the commands that would load the model."""
    return click.option(
        "--semantic/--no-semantic",
        default=None,
        help=(
            "Search by meaning as well as by words: embed texts in the background and fuse both "
            "rankings (env GRAPHMEM_SEMANTIC, default on). Off, the model is never loaded."
        ),
    )(command)


def serve_options(command: F) -> F:
    """The options of serving, on `serve` and on the bare `graphmem` that serves by default."""
    command = semantic_option(command)
    command = click.option(
        "--log-level",
        type=click.Choice(LOG_LEVELS, case_sensitive=False),
        default=None,
        envvar="GRAPHMEM_LOG_LEVEL",
        help="How much to log to stderr: debug, info, warning or error (env GRAPHMEM_LOG_LEVEL, default warning).",
    )(command)
    command = click.option(
        "--tools",
        "tools",
        default=None,
        metavar="NAME,NAME",
        help="List exactly these tools, comma-separated (env GRAPHMEM_TOOLS); wins over --toolset.",
    )(command)
    command = click.option(
        "--toolset",
        type=click.Choice(["official", "default", "all"], case_sensitive=False),
        default=None,
        help=(
            "Which tools to list: official (the official server's nine), default (a lean set of at most "
            "20 for daily use) or all (env GRAPHMEM_TOOLSET)."
        ),
    )(command)
    command = click.option(
        "--call-time-limit",
        type=click.FloatRange(min=0, max=86_400),
        default=None,
        metavar="SECONDS",
        help=(
            "Stop a tool call still running after this long, roll it back and say so; 0 means no limit "
            "(env GRAPHMEM_CALL_TIME_LIMIT, default 60; compact is exempt)."
        ),
    )(command)
    command = click.option(
        "--search-budget",
        type=click.IntRange(min=0),
        default=None,
        metavar="TOKENS",
        help=(
            "About how many tokens a search_nodes answer without a limit may hold, best first, with a note "
            "on how to get the rest; 0 means unlimited (env GRAPHMEM_SEARCH_BUDGET, default 10000)."
        ),
    )(command)
    command = click.option(
        "--response-budget",
        type=click.IntRange(min=0),
        default=None,
        metavar="TOKENS",
        help=(
            "About how many tokens one read answer may hold before it is cut at an entity boundary "
            "and says how to get the rest; 0 means unlimited (env GRAPHMEM_RESPONSE_BUDGET, default 25000)."
        ),
    )(command)
    return command


def _settings(
    ctx: click.Context,
    memory_file: str | None,
    strict: bool | None,
    response_budget: int | None = None,
    toolset: str | None = None,
    tools: str | None = None,
    call_time_limit: float | None = None,
    search_budget: int | None = None,
    semantic: bool | None = None,
    project: str | None = None,
    workspace: str | None = None,
) -> Settings:
    parent = ctx.find_root().params
    try:
        return Settings.from_env(
            semantic=semantic if semantic is not None else parent.get("semantic"),
            project=project if project is not None else parent.get("project"),
            workspace=workspace if workspace is not None else parent.get("workspace"),
            memory_file=memory_file or parent.get("memory_file"),
            strict=strict if strict is not None else parent.get("strict"),
            response_budget=response_budget if response_budget is not None else parent.get("response_budget"),
            toolset=toolset or parent.get("toolset"),
            tools=tools if tools is not None else parent.get("tools"),
            call_time_limit=call_time_limit if call_time_limit is not None else parent.get("call_time_limit"),
            search_budget=search_budget if search_budget is not None else parent.get("search_budget"),
            secrets=ctx.meta.get("secrets"),
        )
    except GraphmemError as error:
        raise click.ClickException(str(error)) from error


def _open_graph(settings: Settings) -> KnowledgeGraph:
    # Embedding in the foreground (after an import, `graphmem embed`) may use every core;
    # a server's background worker keeps to one, leaving the others to its clients.
    loader = partial(load_embedder, workers=os.cpu_count() or 1) if settings.semantic else None
    try:
        graph = KnowledgeGraph(
            open_store(settings), strict=settings.strict, limits=settings.limits, load_embedder=loader
        )
        graph.history_days = settings.history_days
        graph.secrets = cast(Policy, settings.secrets)
        return graph
    except GraphmemError as error:
        raise click.ClickException(str(error)) from error


def _open_for_reading(settings: Settings, *, check_for_damage: bool = True) -> KnowledgeGraph:
    """The memory opened and read once without writing to it (a read-only folder will do), if it exists.

    Only a schema this graphmem does not read as it stands sends it to a writable open: one
    written by an older graphmem is upgraded there, as every command did before, and a newer
    one is refused there in its own words. `check_for_damage` off: a damaged memory opens,
    for a command that reads what is intact (export) or reports the damage itself (info).
    """
    try:
        if settings.database_url is not None or settings.memory_path.exists():
            try:
                store = open_checked_store(settings, read_only=True, check_for_damage=check_for_damage)
            except SchemaVersionError:
                store = open_checked_store(settings, check_for_damage=check_for_damage)
        else:
            store = open_checked_store(settings, check_for_damage=check_for_damage)
    except GraphmemError as error:
        raise click.ClickException(str(error)) from error
    return KnowledgeGraph(store, strict=settings.strict, limits=settings.limits)


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@memory_options
@project_options
@serve_options
@click.version_option(__version__, prog_name="graphmem")
@click.pass_context
def cli(
    ctx: click.Context,
    memory_file: str | None,
    strict: bool | None,
    response_budget: int | None,
    search_budget: int | None,
    call_time_limit: float | None,
    toolset: str | None,
    tools: str | None,
    log_level: str | None,
    semantic: bool | None,
    project: str | None,
    workspace: str | None,
) -> None:
    """graphmem: persistent knowledge-graph memory for AI agents, over MCP.

    Run with no command to serve MCP over stdio.
    """
    if ctx.invoked_subcommand is None:
        ctx.invoke(
            serve,
            semantic=semantic,
            memory_file=memory_file,
            strict=strict,
            response_budget=response_budget,
            search_budget=search_budget,
            call_time_limit=call_time_limit,
            toolset=toolset,
            tools=tools,
            log_level=log_level,
            project=project,
            workspace=workspace,
        )


def _transport(http: bool, tcp: bool, host: str | None, port: int | None) -> str | None:
    """The network transport the flags ask for, or None for stdio; contradictions refused."""
    if http and tcp:
        raise click.ClickException(
            "--http and --tcp were both given; one process serves one of them. Start one process for each."
        )
    if not (http or tcp) and (host is not None or port is not None):
        flag = "--host" if host is not None else "--port"
        raise click.ClickException(
            f"{flag} was given without --http or --tcp; over stdio there is nothing to listen on. "
            f"Add --http or --tcp, or leave {flag} out."
        )
    return "http" if http else "tcp" if tcp else None


@cli.command(name="serve")
@memory_options
@project_options
@serve_options
@click.option("--http", "http", is_flag=True, help="Serve many clients over Streamable HTTP at /mcp.")
@click.option("--tcp", "tcp", is_flag=True, help="Serve many clients over TCP (one JSON-RPC message per line).")
@click.option(
    "--host",
    default=None,
    help=(
        "The address to listen on with --http or --tcp (env GRAPHMEM_HOST, default 127.0.0.1). "
        "Any address but loopback needs a token."
    ),
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=None,
    help=(
        f"The port to listen on (env GRAPHMEM_PORT; default {DEFAULT_HTTP_PORT} for HTTP, {DEFAULT_TCP_PORT} for TCP; "
        "0 picks a free one)."
    ),
)
@click.option(
    "--token-file",
    metavar="PATH",
    default=None,
    help=(
        "A file holding the bearer token clients must send (env GRAPHMEM_TOKEN_FILE, or the token itself "
        "in GRAPHMEM_TOKEN); it must be readable by you only."
    ),
)
@click.option(
    "--tokens-file",
    metavar="PATH",
    default=None,
    help=(
        "A file of named tokens for a team, one line each: NAME TOKEN read|write (env GRAPHMEM_TOKENS_FILE); "
        "readable by you only. Read tokens cannot change the memory; each change records its token's name."
    ),
)
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    metavar="NAME",
    help=(
        "A host name HTTP clients may use besides loopback and the bind address (repeatable; "
        "env GRAPHMEM_ALLOWED_HOSTS, comma-separated)."
    ),
)
@click.option(
    "--allowed-origin",
    "allowed_origins",
    multiple=True,
    metavar="ORIGIN",
    help="A browser origin allowed to call the HTTP server besides its own pages, such as the explorer's "
    "address behind a proxy, https://memory.example.com (repeatable; env GRAPHMEM_ALLOWED_ORIGINS).",
)
@click.option(
    "--json-response/--sse-response",
    default=None,
    help="Answer HTTP POSTs with one JSON body instead of an SSE stream (env GRAPHMEM_HTTP_JSON; default SSE).",
)
@click.pass_context
def serve(
    ctx: click.Context,
    memory_file: str | None,
    strict: bool | None,
    response_budget: int | None = None,
    search_budget: int | None = None,
    call_time_limit: float | None = None,
    toolset: str | None = None,
    tools: str | None = None,
    http: bool = False,
    tcp: bool = False,
    host: str | None = None,
    port: int | None = None,
    token_file: str | None = None,
    tokens_file: str | None = None,
    allowed_hosts: tuple[str, ...] = (),
    allowed_origins: tuple[str, ...] = (),
    json_response: bool | None = None,
    log_level: str | None = None,
    semantic: bool | None = None,
    project: str | None = None,
    workspace: str | None = None,
) -> None:
    """Serve MCP over stdio (what an MCP client starts), or many clients over --http or --tcp."""
    transport = _transport(http, tcp, host, port)
    settings = _settings(
        ctx,
        memory_file,
        strict,
        response_budget,
        toolset,
        tools,
        call_time_limit,
        search_budget,
        semantic,
        project=project,
        workspace=workspace,
    )
    log_level = (log_level or ctx.find_root().params.get("log_level") or "warning").lower()
    network: NetworkSettings | None = None
    if transport is not None:
        try:
            network = NetworkSettings.from_env(
                host=host,
                port=port,
                default_port=DEFAULT_HTTP_PORT if transport == "http" else DEFAULT_TCP_PORT,
                token_file=token_file,
                tokens_file=tokens_file,
                allowed_hosts=allowed_hosts,
                allowed_origins=allowed_origins,
                json_response=json_response,
            )
        except GraphmemError as error:
            raise click.ClickException(str(error)) from error
    _log_to_stderr(log_level)
    if not malloc_arenas_chosen_by_user():
        use_one_malloc_arena()
    # Imported here, not at the top: the MCP SDK takes over a second to import, and the
    # other commands (info, stats, import, export) do not need it.
    from graphmem.server import build_server
    from graphmem.tools import ALL_TOOLS
    from graphmem.tools.toolsets import select_tools

    try:
        # The tools first: a mistyped name must not leave a new, empty memory behind.
        listed = select_tools(ALL_TOOLS, settings.toolset, settings.tools)
        # Opened and read before serving: a client sends `initialize` at once, and a memory
        # that fails then would leave it waiting on a server that can only fail.
        store = open_checked_store(settings)
    except GraphmemError as error:
        raise click.ClickException(str(error)) from error
    # Over stdio there is one client, and it is served one call at a time. Not for a
    # JSONL memory: each of its writes builds the whole file anew in memory, which on the
    # main thread measured 40% slower (43 ms against 30 at 40,000 entities; glibc serves
    # a thread's large allocations from an arena of its own).
    one_client = network is None and settings.backend == "sqlite"
    json_answers = network is not None and network.json_response
    server = build_server(settings, listed, one_client=one_client, json_answers=json_answers, store=store)
    if network is None:
        from graphmem.transports import run_stdio

        chosen = "custom" if settings.tools is not None else settings.toolset
        try:
            # One line, as the official server says it runs; stdout carries protocol messages only.
            click.echo(
                f"graphmem {__version__} ready on stdio: memory {settings.location} ({settings.backend}), "
                f"{_project_in_ready_line(settings)}tools {chosen} ({len(listed)})",
                err=True,
            )
            if sys.stdin.isatty():
                # Someone ran it by hand: it will sit waiting for protocol messages, so say whose.
                click.echo(
                    "It speaks MCP to the client that starts it: add this command to your MCP client's "
                    "configuration (see the README), or press Ctrl-C to stop.",
                    err=True,
                )
            run_stdio(server)
        except KeyboardInterrupt:
            # Ctrl-C in a terminal, as soon as the ready line shows or later: every answered
            # write is already on disk.
            ctx.exit(0)
        return

    def announce(url: str) -> None:
        project = "" if settings.project is None else f" for project {settings.project.label}"
        click.echo(f"graphmem serving {settings.location}{project} at {url}", err=True)
        if transport == "http":
            click.echo(f"explorer (in a browser) at {url.removesuffix('/mcp')}/", err=True)

    try:
        if transport == "http":
            from graphmem.transports.http import run_http

            run_http(server, network, announce=announce, log_level=log_level)
        else:
            from graphmem.transports.tcp import run_tcp

            run_tcp(server, network, announce=announce)
    except (OSError, BaseExceptionGroup) as error:
        problem = _cannot_listen(network.host, network.port, error)
        if problem is None:
            raise
        raise problem from error


def _project_in_ready_line(settings: Settings) -> str:
    """`project api (github.com/acme/api), ` for the stdio ready line; "" when projects are off."""
    if settings.project is not None:
        return f"project {settings.project.label}, "
    if settings.why_no_project is not None:
        return f"no project ({settings.why_no_project}), "
    return ""


def _project_summary(settings: Settings) -> str:
    """The project `graphmem info` reports, with how it was chosen or why there is none."""
    if settings.project is not None:
        return f"{settings.project.label}, from {settings.project.source}"
    if settings.why_no_project is not None:
        return (
            f"none, the whole memory: --project auto found none, as {settings.why_no_project}. Give the "
            "client's folder with --workspace DIR (or GRAPHMEM_WORKSPACE), or a name with --project NAME."
        )
    return "off, one memory for all work (turn projects on with --project auto, or GRAPHMEM_PROJECT=auto)"


def _access_summary(tokens_file: str | None) -> str | None:
    """Who may use `serve --http` / `--tcp`: the tokens' names and access, never the tokens;
    None when no token is configured (the server then listens on loopback only)."""
    try:
        credentials = NetworkSettings.from_env(tokens_file=tokens_file).credentials
    except GraphmemError as error:
        raise click.ClickException(str(error)) from error
    if not credentials:
        return None
    named = [c.identity for c in credentials if c.identity.name is not None]
    if not named:
        return "one token (write, records no author)"
    return ", ".join(f"{identity.name} ({identity.access})" for identity in named)


def _log_to_stderr(level: str) -> None:
    """Log records from `level` up go to stderr, one line each."""
    logging.basicConfig(stream=sys.stderr, level=level.upper(), format="graphmem %(levelname)s: %(message)s")
    # psycopg warns at every failed reconnection attempt of its pool, every connection it drops
    # and every pipeline a lost connection ends: a dozen lines a minute during a PostgreSQL
    # outage, which graphmem reports once itself. --log-level debug shows them.
    if logging.getLogger().getEffectiveLevel() > logging.DEBUG:
        logging.getLogger("psycopg").setLevel(logging.ERROR)


def _cannot_listen(host: str, port: int, error: BaseException) -> click.ClickException | None:
    """What went wrong with the address a server failed to listen on, and what to do; None
    when no OSError is in the error (a bug, not a bind: the caller raises it as it is)."""
    # anyio's listener raises its bind error inside a task group's exception group.
    cause = _os_error_in(error)
    if cause is None:
        return None
    return click.ClickException(
        f"Cannot listen on {host} port {port}: {cause.strerror or cause}. {_listening_advice(cause)}"
    )


def _listening_advice(error: OSError) -> str:
    if error.errno == errno.EADDRINUSE:
        return "Stop what uses that port, or choose another with --port."
    if error.errno == errno.EACCES:
        return "Ports below 1024 need privileges; choose another with --port."
    return "Give an address of this machine with --host (127.0.0.1 for this machine only)."


def _os_error_in(error: BaseException) -> OSError | None:
    """The OSError itself, or the first one inside an exception group."""
    if isinstance(error, OSError):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            if (found := _os_error_in(inner)) is not None:
                return found
    return None


@cli.command(name="info")
@memory_options
@project_options
@click.option(
    "--tokens-file",
    metavar="PATH",
    default=None,
    help="The tokens file `serve --tokens-file` would use (env GRAPHMEM_TOKENS_FILE): its names and access are shown.",
)
@click.pass_context
def info(
    ctx: click.Context,
    memory_file: str | None,
    strict: bool | None,
    tokens_file: str | None = None,
    project: str | None = None,
    workspace: str | None = None,
) -> None:
    """Show where the memory lives and which backend holds it, the project a server here works in,
    who may use the network server, and check that the memory opens and is intact."""
    settings = _settings(ctx, memory_file, strict, project=project, workspace=workspace)
    click.echo(f"graphmem {__version__}")
    if settings.database_url is not None:
        click.echo(f"memory database: {settings.location}")
    else:
        click.echo(f"memory file: {settings.memory_path}")
    click.echo(f"backend: {settings.backend}")
    # A database is checked by opening it (below); only a file can be looked for first.
    exists = settings.database_url is not None or settings.memory_path.exists()
    if settings.database_url is None:
        click.echo(f"exists: {'yes' if exists else 'no (it is created when a server first starts)'}")
    click.echo(f"strict: {'yes' if settings.strict else 'no'}")
    click.echo(f"project: {_project_summary(settings)}")
    budget = settings.response_budget
    click.echo(f"response budget: {f'{budget} tokens' if budget else 'unlimited'}")
    search = settings.search_budget
    click.echo(f"search budget (no limit given): {f'{search} tokens' if search else 'unlimited'}")
    access = _access_summary(tokens_file)
    if access is not None:
        click.echo(f"network access: {access}")
    if not exists:
        return
    # Read-only: info must work on a memory in a folder this user cannot write, and change nothing.
    graph = _open_for_reading(settings, check_for_damage=False)
    store = graph.store
    found: SecretScan | None = None
    try:
        with store.read():
            counts = store.counts()
        problems = store.integrity_problems()
        if counts.entities <= SCANNED_BY_INFO:
            found = scan_secrets(graph)
    except GraphmemError as error:
        raise click.ClickException(str(error)) from error
    finally:
        store.close()
    click.echo(f"opens: yes ({counts.entities} entities, {counts.relations} relations)")
    if problems:
        shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
        raise click.ClickException(
            f"integrity: {len(problems)} problem(s): {shown}. Restore a backup, or export "
            "what can be read (graphmem export) and import it into a new memory."
        )
    click.echo("integrity: ok (quick check)")
    if found is None:
        click.echo(f"secrets: not looked for in {counts.entities:,} entities here (graphmem scan-secrets looks)")
    elif found.secrets or found.changes:
        click.echo(f"secrets: {_secrets_summary(found)}; graphmem scan-secrets --fix takes them out")
    else:
        click.echo("secrets: none stored")


SCANNED_BY_INFO = 100_000
"""Entities `info` looks through for secrets; past them `scan-secrets` does it."""


def _secrets_summary(scan: SecretScan) -> str:
    holders = len(scan.holders)
    return (
        f"{scan.secrets} in {holders} entit{'y' if holders == 1 else 'ies'} or relations"
        f", and {scan.changes} change{'' if scan.changes == 1 else 's'} of the history"
    )


@cli.command(name="scan-secrets")
@memory_options
@click.option("--fix", is_flag=True, help="Take them out: redacted in the memory, its history and its files.")
@click.pass_context
def scan_secrets_(ctx: click.Context, memory_file: str | None, strict: bool | None, fix: bool) -> None:
    """Look for secrets the memory already holds (API keys, passwords, private keys...), in every
    project: by entity and fact, and in the change log. Exits 1 when some are found and left.

    With --fix, each is replaced by a marker that says what it was: a fact by a new version (the
    old one not kept), past versions, aliases, names and relation types in place, the change
    log's records rewritten, and the store compacted so no free page keeps the old text.
    """
    settings = _settings(ctx, memory_file, strict)
    graph = _open_graph(settings) if fix else _open_for_reading(settings)
    try:
        scan = fix_secrets(graph) if fix else scan_secrets(graph)
    except GraphmemError as error:
        raise click.ClickException(str(error)) from error
    finally:
        graph.store.close()
    for holder in scan.holders:
        click.echo(f"{holder.what}: " + "; ".join(f"{item.kind} in {item.where}" for item in holder.found))
    if not scan.holders and not scan.changes:
        click.echo(f"No secrets in {settings.location}.")
        return
    if fix:
        click.echo(f"Took out {_secrets_summary(scan)}; the store was compacted.")
        return
    click.echo(f"Found {_secrets_summary(scan)}. graphmem scan-secrets --fix takes them out.")
    ctx.exit(1)


@cli.command(name="stats")
@memory_options
@click.pass_context
def stats(ctx: click.Context, memory_file: str | None, strict: bool | None) -> None:
    """Count the entities, relations and observations in memory."""
    settings = _settings(ctx, memory_file, strict)
    graph = _open_for_reading(settings)
    try:
        counts = graph.counts()
        if settings.database_url is not None:
            size = graph.store.size_on_disk()
    except GraphmemError as error:
        raise click.ClickException(str(error)) from error
    finally:
        graph.store.close()
    if settings.database_url is None:
        size = settings.memory_path.stat().st_size if settings.memory_path.exists() else 0
    click.echo(f"memory {'database' if settings.database_url is not None else 'file'}: {settings.location}")
    click.echo(f"entities: {counts.entities}")
    click.echo(f"relations: {counts.relations}")
    click.echo(f"observations: {counts.observations}")
    click.echo(f"size on disk: {size} bytes")


# Past these sizes an import, export or embedding takes long enough that a progress bar helps.
LARGE_FILE_BYTES = 5 * 1024 * 1024
LARGE_GRAPH_RECORDS = 10_000
LARGE_EMBEDDING = 1_000

_PROGRESS_HELP = (
    "Show a progress bar on stderr, or never show one. Default: shown when stderr is a terminal "
    "and the {what} is large (over {size})."
)


@contextlib.contextmanager
def _progress_bar(
    show: bool | None, total: int | None, large: int, label: str
) -> Iterator[Callable[[int], None] | None]:
    """A progress callback drawing on stderr (stdout may carry the data), or None for no bar."""
    if show is None:
        show = total is not None and total > large and sys.stderr.isatty()
    if not show or total is None:
        yield None
        return
    with click.progressbar(length=total, label=label, file=sys.stderr) as bar:
        yield bar.update


def _say_indexing() -> None:
    # The bar is full once the file is read, but building the search indexes and
    # committing take as long again on a large file: say so, or it looks stuck.
    click.echo("\nEvery record is read; building the search indexes and saving (no progress shown)...", err=True)


def _warn(message: str) -> None:
    click.echo(f"warning: {message}", err=True)


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:
        # A name too long for the system, say: the write that follows says so in one line.
        return False


def _same_file(first: Path, second: Path) -> bool:
    try:
        return os.path.samefile(first, second)
    except OSError:
        # One of them does not exist (yet): compare where they would be.
        return os.path.realpath(first) == os.path.realpath(second)


def _reading_error(source: str, error: OSError) -> click.ClickException:
    return click.ClickException(f"Cannot read {source}: {error.strerror or error}.")


def _print_import_report(report: ImportReport, source: str, settings: Settings) -> None:
    kind = "JSON document" if report.format == "json" else "JSONL"
    click.echo(f"Imported {source} ({kind}) into {settings.location} ({settings.backend}).")
    click.echo(
        f"entities: {report.entities_read} read, {report.entities_new} new, "
        f"{report.entities_merged} merged into existing ones"
    )
    click.echo(
        f"relations: {report.relations_read} read, {report.relations_new} new, "
        f"{report.relations_present} already present"
    )
    line = f"observations: {report.observations_added} added"
    if report.observation_records:
        line += (
            f" ({report.observation_records} observation records read, "
            f"{report.orphan_observations} without their entity skipped)"
        )
    click.echo(line)
    if report.invalid_lines:
        click.echo(f"skipped: {report.invalid_lines} invalid line(s)")


@cli.command(name="import")
@memory_options
@click.argument("file", type=click.Path(path_type=Path, allow_dash=True))
@click.option(
    "--skip-invalid",
    is_flag=True,
    help="Skip lines that cannot be read (with a warning each) instead of stopping with nothing imported.",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help=_PROGRESS_HELP.format(what="file", size=f"{LARGE_FILE_BYTES // (1024 * 1024)} MB"),
)
@semantic_option
@click.pass_context
def import_(
    ctx: click.Context,
    file: Path,
    skip_invalid: bool,
    progress: bool | None,
    memory_file: str | None,
    strict: bool | None,
    semantic: bool | None,
) -> None:
    """Merge a JSONL or JSON file into the memory.

    FILE ("-" for standard input) may be any of these; the format is told from the content:

    \b
    - the official server's memory file (JSONL; the older memory.json was JSONL too);
    - a JSON document {"entities": [...], "relations": [...]}, as read_graph returns it;
    - a fork's JSONL with aliases/createdAt/version keys (kept on new entities and
      relations, and written back by export) and {"type":"observation",...} lines.

    An entity that exists gains the observations it lacks; a relation that exists is not
    repeated. Observation lines become observations of their entity, their text kept
    exactly (with any [timestamp] and [S:Status] prefix); their ids, createdAt and version
    are not kept yet. An observation whose entity is neither in the file nor in memory is
    skipped with a warning.

    The import is one transaction: on an unreadable line it stops with "Line N: reason"
    and imports nothing, unless --skip-invalid is given.

    Then, with search by meaning on, the new texts are embedded, with their own progress
    and speed. Ctrl-C stops that part only: what is left is embedded by the next server
    on this memory, in the background, or by `graphmem embed`.
    """
    settings = _settings(ctx, memory_file, strict, semantic=semantic)
    from_stdin = str(file) == "-"
    source = "standard input" if from_stdin else str(file)
    if not from_stdin and settings.database_url is None and _same_file(file, settings.memory_path):
        raise click.ClickException(f"{source} is the memory file itself; there is nothing to import.")
    stream: IO[bytes]
    size: int | None = None
    closing: contextlib.AbstractContextManager[object] = contextlib.nullcontext()
    try:
        if from_stdin:
            stream = sys.stdin.buffer
        else:
            stream = open(file, "rb")  # noqa: SIM115 - closed by the `with` below
            closing = stream
            size = os.fstat(stream.fileno()).st_size
    except OSError as error:
        raise _reading_error(source, error) from error
    # Opened after the file, so a mistyped FILE leaves no new, empty memory behind.
    graph = _open_graph(settings)
    # Lines without a project go to the one graphmem runs in (--project), else to the shared space.
    scope = EVERY if settings.project is None else Scope(settings.project.id)
    graph.take_redactions()
    try:
        with (
            closing,
            graph.working_in(scope),
            graph.through("import"),
            _progress_bar(progress, size, LARGE_FILE_BYTES, "Importing") as advance,
        ):
            report = import_stream(
                graph,
                stream,
                skip_invalid=skip_invalid,
                warn=_warn,
                progress=advance,
                indexing=None if advance is None else _say_indexing,
            )
    except ImportFormatError as error:
        hint = "" if skip_invalid else " Fix the line, or pass --skip-invalid to skip unreadable lines."
        raise click.ClickException(f"{source}: {error} Nothing was imported.{hint}") from error
    except InvalidInputError as error:
        # The file as a whole cannot be read (a SQLite database, a broken JSON document).
        raise click.ClickException(f"{source}: {error.problem}") from error
    except GraphmemError as error:
        raise click.ClickException(str(error)) from error
    except OSError as error:
        raise _reading_error(source, error) from error
    except BaseException:
        graph.store.close()
        raise
    try:
        _print_import_report(report, source, settings)
        redacted = [*report.redacted_names, *graph.take_redactions()]
        if redacted:
            click.echo(redaction_note(redacted))
        _embed_waiting(graph, progress)
    finally:
        graph.store.close()


def _embed_waiting(graph: KnowledgeGraph, progress: bool | None) -> None:
    """Embed every text waiting for a vector, with a progress bar, and say how fast it went."""
    vectors = graph.meaning.vectors
    if not graph.meaning.enabled or vectors is None:
        return
    try:
        waiting = vectors.vector_progress().waiting
        if not waiting:
            return
        graph.meaning.model()  # loaded before the clock starts: the speed is the model's
        done, started = 0, time.monotonic()
        with _progress_bar(progress, waiting, LARGE_EMBEDDING, "Embedding") as advance:
            while taken := graph.embed_pending(EMBED_BATCH * 2):
                done += taken
                if advance is not None:
                    advance(taken)
    except KeyboardInterrupt:
        left = vectors.vector_progress().waiting
        click.echo(
            f"\nStopped embedding: {left:,} texts still wait. A graphmem server on this memory embeds "
            "them in the background, or run `graphmem embed`.",
            err=True,
        )
        raise SystemExit(130) from None
    except GraphmemError as error:
        raise click.ClickException(f"{error} Search by words works meanwhile.") from error
    elapsed = max(time.monotonic() - started, 1e-9)
    click.echo(f"embedded: {done:,} texts in {elapsed:.1f} s ({done / elapsed:,.0f} a second)")


@cli.command(name="embed")
@memory_options
@click.option(
    "--rebuild",
    is_flag=True,
    help="Drop every stored vector and embed the whole memory again (after a change of model, say).",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help=_PROGRESS_HELP.format(what="memory", size=f"{LARGE_EMBEDDING:,} texts"),
)
@click.pass_context
def embed(
    ctx: click.Context, rebuild: bool, progress: bool | None, memory_file: str | None, strict: bool | None
) -> None:
    """Embed the texts of the memory that have no vector yet, for search by meaning.

    A server does this by itself, in the background; this does it now, with progress, and
    is the way to (re)build the vectors of a large memory before serving it. Ctrl-C stops
    it safely: what is done stays done.
    """
    settings = _settings(ctx, memory_file, strict, semantic=True)
    if settings.backend == "jsonl":
        raise click.ClickException(
            f"{settings.memory_path} is a JSONL file, which keeps no vectors: search by meaning needs a "
            ".db memory (graphmem import it into one)."
        )
    graph = _open_graph(settings)
    try:
        vectors = graph.meaning.vectors
        if vectors is None:
            # A PostgreSQL database without pgvector: the store says why and what to do.
            raise click.ClickException(f"Cannot embed {settings.location}: {graph.meaning.why_off}.")
        if rebuild:
            vectors.drop_vectors()
        before = vectors.vector_progress()
        click.echo(f"{before.embedded:,} texts have vectors, {before.waiting:,} wait.")
        _embed_waiting(graph, progress)
        after = vectors.vector_progress()
        click.echo(f"{after.embedded:,} texts have vectors; {after.waiting:,} wait.")
    finally:
        graph.store.close()


@cli.command(name="export")
@memory_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(EXPORT_FORMATS),
    default="jsonl",
    show_default=True,
    help=(
        "jsonl: the official server's memory file, byte for byte; json: one indented JSON document; "
        "mermaid: a flowchart; dot: a Graphviz digraph; graphml: GraphML for graph tools."
    ),
)
@click.option(
    "--output",
    "-o",
    type=click.Path(path_type=Path, allow_dash=True),
    default=None,
    help="Write to this file (atomically: a temp file renamed into place) instead of stdout.",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help=_PROGRESS_HELP.format(what="memory", size=f"{LARGE_GRAPH_RECORDS:,} records"),
)
@click.option(
    "--project",
    "project",
    metavar="NAME",
    default=None,
    help="Write one project alone (not the shared space): its name or key, as `graphmem projects` shows it.",
)
@click.pass_context
def export(
    ctx: click.Context,
    fmt: ExportFormat,
    output: Path | None,
    progress: bool | None,
    memory_file: str | None,
    strict: bool | None,
    project: str | None,
) -> None:
    """Write the memory out as JSONL, JSON or a diagram (Mermaid, DOT, GraphML).

    JSONL is exactly the file the official server writes (entities, then relations, one
    compact object per line), so `graphmem export -o memory.jsonl` gives a file it can load.
    Keys from other formats (a fork's aliases, createdAt, version) follow the official keys.
    In diagrams every name is escaped, so no quote, newline or bracket can break them.
    """
    settings = _settings(ctx, memory_file, strict)
    to_stdout = output is None or str(output) == "-"
    if settings.database_url is None and not settings.memory_path.exists():
        raise click.ClickException(
            f"There is no memory at {settings.memory_path}; nothing to export. "
            "Check --memory-file or MEMORY_FILE_PATH (graphmem info shows the path in use)."
        )
    if output is not None and not to_stdout:
        if _is_dir(output):
            raise click.ClickException(f"{output} is a directory; give the name of the file to write.")
        if settings.database_url is None and _same_file(output, settings.memory_path):
            raise click.ClickException(f"{output} is the memory file itself; refusing to overwrite it.")
    # A damaged memory opens: the export is how to save what can still be read.
    graph = _open_for_reading(settings, check_for_damage=False)
    try:
        only = None if project is None else _one_project(graph, project)
        # Counted apart from the export's own snapshot: the bar only needs a size, and an
        # error writing the output must not surface through the store's error mapping.
        counts = graph.counts()
        total = counts.entities + counts.relations
        with _progress_bar(progress, total, LARGE_GRAPH_RECORDS, "Exporting") as advance:
            if output is None or to_stdout:
                report = export_graph(graph, sys.stdout.buffer, fmt=fmt, progress=advance, project=only)
            else:
                report = write_atomically(
                    output, lambda file: export_graph(graph, file, fmt=fmt, progress=advance, project=only)
                )
    except GraphmemError as error:
        raise click.ClickException(str(error)) from error
    except BrokenPipeError:
        # `graphmem export | head`: the reader has what it wanted. Point stdout at devnull so
        # the interpreter's final flush does not complain, and exit quietly.
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    except OSError as error:
        target = "standard output" if to_stdout else str(output)
        raise click.ClickException(f"Cannot write {target}: {error.strerror or error}.") from error
    finally:
        graph.store.close()
    if not to_stdout:
        click.echo(f"Wrote {report.entities} entities and {report.relations} relations to {output} ({fmt}).")


def _one_project(graph: KnowledgeGraph, given: str) -> str:
    """The key of the project `--project` names for an export (a project, not every one or the shared space)."""
    from graphmem.core.projects import SHARED
    from graphmem.domain import projects

    scope = projects.scope_named(graph, given)
    if scope.project in (None, SHARED):
        raise click.ClickException(f"{given!r} is not one project; give a name `graphmem projects` lists.")
    return scope.project


def _same_memory(first: Settings, second: Settings) -> bool:
    if first.database_url is not None or second.database_url is not None:
        return first.location == second.location
    return _same_file(first.memory_path, second.memory_path)


@cli.command(name="migrate")
@click.option(
    "--from",
    "source",
    metavar="MEMORY",
    required=True,
    help="The memory to copy: a SQLite or JSONL file, or a postgresql:// URL. It is only read.",
)
@click.option(
    "--to",
    "target",
    metavar="MEMORY",
    required=True,
    help="Where to copy it: a new file or an empty PostgreSQL database (a postgresql:// URL).",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help=_PROGRESS_HELP.format(what="memory", size=f"{LARGE_GRAPH_RECORDS:,} records"),
)
@click.pass_context
def migrate_(ctx: click.Context, source: str, target: str, progress: bool | None) -> None:
    """Copy a whole memory into a new one, as it is: a SQLite file into PostgreSQL, say.

    Every entity with its observations, aliases, timestamps, fact versions and authors,
    and every relation, in their order. The target must be empty; the source is not
    changed. It is one transaction: on any error the target stays empty.

    Vectors for search by meaning are not copied: the first server on the new memory
    embeds its texts in the background (or run `graphmem embed` on it).
    """
    from_settings = _settings(ctx, source, None)
    to_settings = _settings(ctx, target, None)
    if _same_memory(from_settings, to_settings):
        raise click.ClickException(
            f"{from_settings.location} and {to_settings.location} are the same memory; give a new one to --to."
        )
    if from_settings.database_url is None and not from_settings.memory_path.exists():
        raise click.ClickException(f"There is no memory at {from_settings.location}; nothing to migrate.")
    reading = _open_for_reading(from_settings, check_for_damage=False)
    try:
        counts = reading.counts()
        if not counts.entities and not counts.relations:
            raise click.ClickException(
                f"{reading.store.location} holds no entities or relations; there is nothing to migrate. "
                "Check --from (graphmem info --memory-file … shows what a memory holds)."
            )
        try:
            writing = open_checked_store(to_settings)
        except GraphmemError as error:
            raise click.ClickException(str(error)) from error
        try:
            started = time.perf_counter()
            with _progress_bar(progress, counts.entities + counts.relations, LARGE_GRAPH_RECORDS, "Migrating") as bar:
                # Logged as one change a batch, made through `migrate` (domain/change_log.py).
                recorder = RecordingStore(writing, lambda: (None, "migrate"))
                recorder.secrets = cast(Policy, to_settings.secrets)  # what migrates is cleaned as any write
                report = migrate(reading.store, cast(Store, recorder), secrets=recorder.secrets, progress=bar)
                redacted = [*report.redacted_names, *recorder.take_redactions()]
            seconds = time.perf_counter() - started
        except GraphmemError as error:
            raise click.ClickException(str(error)) from error
        finally:
            writing.close()
    finally:
        reading.store.close()
    click.echo(f"Migrated {reading.store.location} into {writing.location} in {seconds:.1f} s:")
    click.echo(
        f"entities: {report.entities} ({report.observations} current observations, "
        f"{report.earlier_versions} earlier fact versions kept in their history)"
    )
    click.echo(f"relations: {report.relations}")
    if report.merged:
        click.echo(
            f"merged: {report.merged} entities that repeated an earlier one's name (as the official server reads them)"
        )
    if redacted:
        click.echo(redaction_note(redacted))
    click.echo(
        "Search by meaning: the new memory's texts are embedded by its first server, or now by `graphmem embed`."
    )


@cli.command(name="projects")
@memory_options
@project_options
@click.pass_context
def projects_(
    ctx: click.Context, memory_file: str | None, strict: bool | None, project: str | None, workspace: str | None
) -> None:
    """List the memory's projects (and the shared space every project sees) with what each holds."""
    from graphmem.cli_projects import project_table
    from graphmem.domain import projects

    settings = _settings(ctx, memory_file, strict, project=project, workspace=workspace)
    graph = _open_for_reading(settings)
    try:
        listed = projects.list_projects(graph)
    except GraphmemError as error:
        raise click.ClickException(str(error)) from error
    finally:
        graph.store.close()
    for line in project_table(listed, None if settings.project is None else settings.project.id):
        click.echo(line)


@cli.group(name="project")
def project_group() -> None:
    """Move entities between projects, or delete a project."""


@project_group.command(name="move")
@memory_options
@click.argument("names", nargs=-1, required=True)
@click.option("--to", "to", required=True, metavar="PROJECT", help='The project to move them to, or "shared".')
@click.option(
    "--from",
    "source",
    metavar="PROJECT",
    default=None,
    help="The project they are in, when another project holds a name too (default: wherever they are).",
)
@click.pass_context
def project_move(
    ctx: click.Context,
    names: tuple[str, ...],
    to: str,
    source: str | None,
    memory_file: str | None,
    strict: bool | None,
) -> None:
    """Move entities (with their facts, and the relations that go with them) to another project."""
    from graphmem.core.projects import project_name
    from graphmem.domain import projects

    graph = _open_graph(_settings(ctx, memory_file, strict))
    try:
        scope = graph.scope if source is None else projects.scope_named(graph, source)
        with graph.working_in(scope), graph.through("project move"):
            target = projects.target_named(graph, to)
            moved = projects.move(graph, list(names), target)
    except GraphmemError as error:
        raise click.ClickException(str(error)) from error
    finally:
        graph.store.close()
    click.echo(
        f"Moved {len(moved.moved)} entities and {moved.relations} relations to {project_name(target)}."
        + (f" Not found: {', '.join(moved.missing)}." if moved.missing else "")
    )


@project_group.command(name="delete")
@memory_options
@click.argument("name")
@click.option("--yes", is_flag=True, help="Delete without asking.")
@click.pass_context
def project_delete(ctx: click.Context, name: str, yes: bool, memory_file: str | None, strict: bool | None) -> None:
    """Delete a project: every entity and relation in it (the shared space and other projects stay)."""
    from graphmem.core.projects import SHARED, project_name
    from graphmem.domain import projects

    graph = _open_graph(_settings(ctx, memory_file, strict))
    try:
        scope = projects.scope_named(graph, name)
        if scope.project in (None, SHARED):
            raise click.ClickException(
                f"{name!r} is not a project; give the name of one (graphmem projects lists them)."
            )
        held = next(counts for counts in projects.list_projects(graph) if counts.project == scope.project)
        if not yes:
            click.confirm(
                f"Delete project {project_name(held.project)} ({held.project}): {held.entities} entities, "
                f"{held.observations} facts and {held.relations} relations?",
                abort=True,
            )
        with graph.through("project delete"):
            entities, relations = projects.delete_project(graph, scope.project)
    except GraphmemError as error:
        raise click.ClickException(str(error)) from error
    finally:
        graph.store.close()
    click.echo(f"Deleted project {project_name(scope.project)}: {entities} entities and {relations} relations.")


@cli.command(name="view")
@memory_options
@semantic_option
@click.option("--port", type=click.IntRange(0, 65535), default=0, help="The loopback port (default: a free one).")
@click.option("--no-browser", is_flag=True, help="Print the page's address instead of opening a browser.")
@click.option("--read-only", is_flag=True, help="Look without changing: the page offers no edits and refuses them.")
@click.pass_context
def view(
    ctx: click.Context,
    memory_file: str | None,
    strict: bool | None,
    semantic: bool | None,
    port: int,
    no_browser: bool,
    read_only: bool,
) -> None:
    """Open the memory in the browser: see it, search it, follow paths, correct it. Ctrl-C stops."""
    from graphmem.cli_view import LOOPBACK, run_view

    settings = _settings(ctx, memory_file, strict, semantic=semantic)
    _log_to_stderr("warning")
    try:
        run_view(
            settings,
            port=port,
            browser=not no_browser,
            read_only=read_only,
            say=lambda line: click.echo(line, err=True),
        )
    except GraphmemError as error:
        raise click.ClickException(str(error)) from error
    except (OSError, BaseExceptionGroup) as error:
        problem = _cannot_listen(LOOPBACK, port, error)
        if problem is None:
            raise
        raise problem from error


def main() -> None:
    """Entry point of the `graphmem` console script."""
    cli()


@cli.command(name="history")
@memory_options
@project_options
@click.option("--since", help="Changes at or after this time (ISO 8601: 2026-11-28, 2026-11-28T14:30Z).")
@click.option("--until", help="Changes before this time.")
@click.option("--author", help='Changes made with this token (its name); "" for local ones.')
@click.option("--tool", help="Changes made through this tool or command (add_observations, import, explorer, ...).")
@click.option("--entity", help="Changes that named this entity.")
@click.option("--before", type=int, help="Changes numbered below this one: the next page.")
@click.option("--limit", type=int, default=DEFAULT_CHANGES, show_default=True, help="Changes to show at most.")
@click.pass_context
def history_(
    ctx: click.Context,
    memory_file: str | None,
    strict: bool | None,
    project: str | None,
    workspace: str | None,
    since: str | None,
    until: str | None,
    author: str | None,
    tool: str | None,
    entity: str | None,
    before: int | None,
    limit: int,
) -> None:
    """Show the change log, newest first: what was written, when, by whom and through what.

    With --project, the changes that named the project's entities or the shared space's.
    """
    settings = _settings(ctx, memory_file, strict, project=project, workspace=workspace)
    graph = _open_for_reading(settings)
    scope = EVERY if settings.project is None else Scope(settings.project.id)
    try:
        with graph.working_in(scope):
            page = list_changes(graph, ChangeQuery(since, until, author, tool, entity, before, limit))
    except GraphmemError as error:
        raise click.ClickException(str(error)) from error
    finally:
        graph.store.close()
    if not page.changes:
        click.echo("No change matches." if any((since, until, author, tool, entity, before)) else "No change recorded.")
        return
    for change in page.changes:
        where = "" if change.project is None else f"  in {project_name(change.project)}"
        click.echo(f"change {change.seq}  {change.at}  {change.author or 'local'}  via {change.via}{where}")
        for line in describe(change):
            click.echo(f"    {line}")
    if page.more:
        click.echo(f"Older changes: --before {page.changes[-1].seq}")


@cli.command(name="undo")
@memory_options
@project_options
@click.argument("changes", nargs=-1, type=int)
@click.option("--since", help="Undo every change at or after this time (ISO 8601), instead of numbered ones.")
@click.option("--author", help='With --since: only this token\'s changes ("" for local ones).')
@click.option("--tool", help="With --since: only the changes made through this tool or command.")
@click.option("--dry-run", is_flag=True, help="Say what would be undone, and change nothing.")
@click.option("--yes", is_flag=True, help="Do not ask first.")
@click.pass_context
def undo_(
    ctx: click.Context,
    memory_file: str | None,
    strict: bool | None,
    project: str | None,
    workspace: str | None,
    changes: tuple[int, ...],
    since: str | None,
    author: str | None,
    tool: str | None,
    dry_run: bool,
    yes: bool,
) -> None:
    """Take back changes of the log (graphmem history shows their numbers) as one new change.

    Refused, naming it, when a later change touched what they did: undo it with them.
    """
    from graphmem.domain.undo import UndoAsk, undo

    settings = _settings(ctx, memory_file, strict, project=project, workspace=workspace)
    graph = _open_graph(settings)
    scope = EVERY if settings.project is None else Scope(settings.project.id)
    ask = UndoAsk(changes, since, author, tool, dry_run=True)
    try:
        with graph.working_in(scope):
            plan = undo(graph, ask)
            for line in plan.lines:
                click.echo(line)
            if dry_run:
                click.echo(f"Would undo {_changes_count(len(plan.undone))}; nothing was changed (--dry-run).")
                return
            if not yes:
                click.confirm(f"Undo {_changes_count(len(plan.undone))}?", abort=True)
            done = undo(graph, UndoAsk(changes, since, author, tool))
    except GraphmemError as error:
        raise click.ClickException(str(error)) from error
    finally:
        graph.store.close()
    click.echo(f"Undid {_changes_count(len(done.undone))}, as a new change (graphmem history shows it).")


def _changes_count(count: int) -> str:
    return f"{count} change{'' if count == 1 else 's'}"


@cli.command(name="diff")
@memory_options
@project_options
@click.option("--since", required=True, help="The earlier time (ISO 8601: 2026-11-20, 2026-11-20T14:30Z).")
@click.option("--until", help="The later time; now when left out.")
@click.pass_context
def diff_(
    ctx: click.Context,
    memory_file: str | None,
    strict: bool | None,
    project: str | None,
    workspace: str | None,
    since: str,
    until: str | None,
) -> None:
    """Show what changed between two times: entities added, removed or changed, relations added and removed."""
    from graphmem.domain.diff import diff_memory

    settings = _settings(ctx, memory_file, strict, project=project, workspace=workspace)
    graph = _open_graph(settings)
    scope = EVERY if settings.project is None else Scope(settings.project.id)
    try:
        with graph.working_in(scope):
            diff = diff_memory(graph, since, until)
    except GraphmemError as error:
        raise click.ClickException(str(error)) from error
    finally:
        graph.store.close()
    click.echo(f"From {diff.since} to {diff.until}: {_changes_count(diff.changes)}.")
    for entity in diff.added:
        click.echo(f"+ {entity.name} ({entity.entity_type})")
    for entity in diff.removed:
        click.echo(f"- {entity.name} ({entity.entity_type})")
    for difference in diff.changed:
        click.echo(f"~ {difference.name}")
        if difference.type_before != difference.type_after:
            click.echo(f"    type: {difference.type_before} -> {difference.type_after}")
        for fact in difference.added:
            click.echo(f"    + {fact}")
        for fact in difference.removed:
            click.echo(f"    - {fact}")
    for relation in diff.related:
        click.echo(f"+ {relation.from_} -{relation.relation_type}-> {relation.to}")
    for relation in diff.unrelated:
        click.echo(f"- {relation.from_} -{relation.relation_type}-> {relation.to}")
