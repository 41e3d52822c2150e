"""Settings: everything graphmem is told by its environment and flags, read in one place.

Only the composition root (`cli.py`) calls `Settings.from_env`; every other module
receives the frozen `Settings` it builds.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import platformdirs

from graphmem.core.errors import ConfigError
from graphmem.core.identity import Identity
from graphmem.core.limits import Limits
from graphmem.core.paths import check_path_length
from graphmem.credentials import (
    MIN_TOKEN_LENGTH,
    NEW_TOKEN,
    UNSENDABLE,
    Credential,
    read_token_file,
    read_tokens_file,
    sendable_token,
)
from graphmem.project_resolution import AUTO, NoProject, ProjectChoice, resolve_project

__all__ = [
    "DEFAULT_HTTP_PORT",
    "DEFAULT_RESPONSE_BUDGET",
    "DEFAULT_SEARCH_BUDGET",
    "DEFAULT_TCP_PORT",
    "MIN_TOKEN_LENGTH",
    "TOOLSET_NAMES",
    "Credential",
    "Identity",
    "NetworkSettings",
    "ProjectChoice",
    "Settings",
    "default_memory_path",
    "is_database_url",
    "is_loopback",
    "malloc_arenas_chosen_by_user",
    "read_tokens_file",
    "redact_url",
]

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}

# About what a client takes in one tool answer (Claude Code warns past 25,000 tokens).
DEFAULT_RESPONSE_BUDGET = 25_000

# A search without a limit is a question, not a dump: about 10,000 tokens (the size past which
# Claude Code warns about a tool answer) holds the best few dozen entities.
DEFAULT_SEARCH_BUDGET = 10_000

# The toolsets a server can list (their members are chosen in tools/toolsets.py).
TOOLSET_NAMES = ("official", "default", "all")

# Suffixes that keep the memory in the official JSONL format instead of SQLite.
JSONL_SUFFIXES = (".jsonl", ".json")


def malloc_arenas_chosen_by_user(environ: Mapping[str, str] | None = None) -> bool:
    """The user set glibc's own MALLOC_ARENA_MAX, which graphmem then leaves as it is."""
    return "MALLOC_ARENA_MAX" in (os.environ if environ is None else environ)


def default_memory_path() -> Path:
    """The memory file when nothing is configured: in the user's data directory.

    Never next to the package, where the official server keeps it and an upgrade
    (or an npx/uvx cache clean) deletes it.
    """
    return Path(platformdirs.user_data_dir("graphmem", appauthor=False)) / "memory.db"


DATABASE_SCHEMES = ("postgresql://", "postgres://")
"""A memory given as one of these URLs lives in PostgreSQL."""


def is_database_url(value: str) -> bool:
    """Whether `value` names a PostgreSQL database rather than a file."""
    return value.strip().lower().startswith(DATABASE_SCHEMES)


# Query parameters of a libpq URL that hold secrets.
_SECRET_PARAMETERS = {"password", "sslpassword"}


_USER_PASSWORD = re.compile(r"(://[^/?#@:]*):[^/?#]*@")
_PASSWORD_PARAMETER = re.compile(r"(?<=[?&])(?:ssl)?password=[^&#]*&?", re.IGNORECASE)


def redact_url(url: str) -> str:
    """The URL as it may be shown to people: without its password (in the user part or the query).

    Never raises, whatever the text: it is used on URLs that failed to parse too. The parts of
    the URL keep their spelling (`postgresql:///db?host=/tmp` stays as it is)."""
    try:
        parts = urlsplit(url)
    except ValueError:  # a malformed URL (an unclosed IPv6 bracket): scrub it as text
        return _PASSWORD_PARAMETER.sub("", _USER_PASSWORD.sub(r"\1@", url)).rstrip("?&")
    netloc = parts.netloc
    if "@" in netloc:
        user, _, host = netloc.rpartition("@")
        netloc = f"{user.partition(':')[0]}@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(key in _SECRET_PARAMETERS for key, _ in pairs):
            query = urlencode([(key, value) for key, value in pairs if key not in _SECRET_PARAMETERS])
    shown = f"{parts.scheme}://{netloc}{parts.path}" if parts.scheme else urlunsplit(parts._replace(netloc=netloc))
    if parts.scheme:
        shown += f"?{query}" if query else ""
        shown += f"#{parts.fragment}" if parts.fragment else ""
    return shown


def _home() -> Path | None:
    try:
        return Path.home()
    except RuntimeError:  # no HOME and no entry in the password database: a bare container
        return None


def _parse_bool(key: str, value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ConfigError(key, value, "Not a valid bool; use true or false.")


_BUDGET_HINT = "Give a whole number of tokens, 0 or more (0 means unlimited)."
_TIME_LIMIT_HINT = "Give a number of seconds, 0 or more (0 means no limit)."

DEFAULT_CALL_TIME_LIMIT = 60.0
"""Seconds a tool call may take before it is stopped (compact is exempt)."""


def _parse_time_limit(key: str, value: str) -> float:
    if not value:
        return DEFAULT_CALL_TIME_LIMIT
    try:
        seconds = float(value)
    except ValueError:
        raise ConfigError(key, value, _TIME_LIMIT_HINT) from None
    if not seconds >= 0 or seconds == float("inf"):
        raise ConfigError(key, value, _TIME_LIMIT_HINT)
    return seconds


def _parse_budget(value: str, key: str = "GRAPHMEM_RESPONSE_BUDGET", default: int = DEFAULT_RESPONSE_BUDGET) -> int:
    if not value:
        return default
    try:
        budget = int(value)
    except ValueError:
        raise ConfigError(key, value, _BUDGET_HINT) from None
    if budget < 0:
        raise ConfigError(key, value, _BUDGET_HINT)
    return budget


@dataclass(frozen=True, slots=True)
class Settings:
    """How this graphmem runs.

    Attributes:
        memory_path: the memory file, absolute (unused when `database_url` is set).
        database_url: the PostgreSQL database holding the memory (a `postgresql://` URL, its
            password included: show `location` instead), or None for a file.
        strict: reject relations to entities that do not exist.
        limits: per-call limits.
        response_budget: about how many tokens of text one read answer may hold before it is
            cut at an entity boundary (and says how to get the rest); 0 means unlimited.
        search_budget: the same for a `search_nodes` call without `limit`; 0 means unlimited.
        toolset: which tools the server lists: `official`, `default` or `all`.
        tools: an exact list of tool names to list instead of a toolset.
        call_time_limit: seconds a tool call may run before it is stopped and rolled back;
            0 means no limit.
        semantic: search by meaning: texts are embedded in the background and searches
            fuse meaning with words; off, graphmem never loads the model.
        project: the project this server works in, resolved once at start; None when
            projects are off (one memory for all work) or `auto` found none.
        why_no_project: why `--project auto` found no project (the server then works in the
            whole memory); None when projects are off or one was found.
    """

    memory_path: Path = field(default_factory=default_memory_path)
    database_url: str | None = field(default=None, repr=False)
    strict: bool = False
    limits: Limits = field(default_factory=Limits)
    response_budget: int = DEFAULT_RESPONSE_BUDGET
    search_budget: int = DEFAULT_SEARCH_BUDGET
    toolset: str = "default"
    tools: tuple[str, ...] | None = None
    call_time_limit: float = DEFAULT_CALL_TIME_LIMIT
    semantic: bool = True
    history_days: int | None = None
    """How many days of the change log `compact` keeps (GRAPHMEM_HISTORY_DAYS); None: all of it."""
    secrets: str = "redact"
    """What is done with a secret written: redact, refuse or allow (--secrets, GRAPHMEM_SECRETS;
    domain/secret_policy.py)."""
    project: ProjectChoice | None = None
    why_no_project: str | None = None
    roots_may_choose: bool = False
    """`--project auto` without a workspace the client named: the root the client offers over
    MCP (`roots/list`), when it does, names the folder instead of the working directory."""
    home: Path | None = None
    """The user's home directory, which `--project auto` never takes for a project (a client's
    root there included); None when projects are off or it is unknown."""

    @property
    def backend(self) -> str:
        """`postgres` for a database URL; else `jsonl` for the official file format, `sqlite`
        otherwise (the file's suffix decides)."""
        if self.database_url is not None:
            return "postgres"
        return "jsonl" if self.memory_path.suffix.lower() in JSONL_SUFFIXES else "sqlite"

    @property
    def location(self) -> str:
        """Where the memory lives, for people: the file's path, or the database URL without its password."""
        return str(self.memory_path) if self.database_url is None else redact_url(self.database_url)

    @classmethod
    def from_env(
        cls,
        environ: Mapping[str, str] | None = None,
        *,
        memory_file: str | None = None,
        strict: bool | None = None,
        response_budget: int | None = None,
        toolset: str | None = None,
        tools: str | None = None,
        call_time_limit: float | None = None,
        search_budget: int | None = None,
        semantic: bool | None = None,
        project: str | None = None,
        workspace: str | None = None,
        secrets: str | None = None,
        cwd: Path | None = None,
        home: Path | None = None,
    ) -> Settings:
        """Build settings from flags (which win) and the environment.

        Args:
            environ: the environment to read; `os.environ` when None.
            memory_file: the `--memory-file` flag, if given: a file, or a `postgresql://` URL.
                Without it, MEMORY_FILE_PATH (a file or a URL), then GRAPHMEM_DATABASE_URL.
            strict: the `--strict` flag, if given.
            response_budget: the `--response-budget` flag, if given.
            toolset: the `--toolset` flag, if given.
            tools: the `--tools` flag (comma-separated names), if given.
            call_time_limit: the `--call-time-limit` flag, if given.
            search_budget: the `--search-budget` flag, if given.
            semantic: the `--semantic/--no-semantic` flag, if given.
            project: the `--project` flag (a name, or `auto`), if given; "" turns projects off
                whatever GRAPHMEM_PROJECT says.
            workspace: the `--workspace` flag (the folder a client works in), if given.
            secrets: the `--secrets` flag (redact, refuse or allow), if given.
            cwd: the directory relative paths resolve against; the working directory when None.
            home: the user's home directory, never a project of its own; `Path.home()` when None.
        """
        env = os.environ if environ is None else environ
        raw_path = memory_file or env.get("MEMORY_FILE_PATH", "").strip() or None
        database_url: str | None = None
        if memory_file is None and raw_path is not None and env.get("GRAPHMEM_DATABASE_URL", "").strip():
            # Two places name the memory: an old MEMORY_FILE_PATH left in a client's config
            # would quietly keep one person off the team's database.
            raise ConfigError(
                "GRAPHMEM_DATABASE_URL",
                redact_url(env["GRAPHMEM_DATABASE_URL"].strip()),
                f"MEMORY_FILE_PATH names a memory too ({redact_url(raw_path)}); keep one of the two "
                "(or give --memory-file, which wins over both).",
            )
        if raw_path is None and env.get("GRAPHMEM_DATABASE_URL", "").strip():
            database_url = env["GRAPHMEM_DATABASE_URL"].strip()
            if not is_database_url(database_url):
                raise ConfigError(
                    "GRAPHMEM_DATABASE_URL",
                    redact_url(database_url),
                    "Give a PostgreSQL URL such as postgresql://user@host/dbname (a file goes in MEMORY_FILE_PATH).",
                )
        elif raw_path is not None and is_database_url(raw_path):
            database_url = raw_path.strip()
        if database_url is not None or raw_path is None:
            path = default_memory_path()
        else:
            path = Path(raw_path).expanduser()
            if not path.is_absolute():
                # Relative to the working directory, as users expect (the official
                # server joins it to its own package folder instead).
                path = (cwd or Path.cwd()) / path
            key = "MEMORY_FILE_PATH" if memory_file is None else "--memory-file"
            check_path_length(key, raw_path, path)
            try:
                is_dir = path.is_dir()
            except OSError as error:
                # Whatever else the system refuses in a path: said in one line, not a traceback.
                raise ConfigError(key, raw_path, f"It cannot be used ({error.strerror or error}).") from None
            if raw_path.endswith(("/", os.sep)) or is_dir:
                raise ConfigError(
                    key, raw_path, "It names a directory; give a file path such as memory.db or memory.jsonl."
                )
        if strict is None:
            strict = _parse_bool("GRAPHMEM_STRICT", env.get("GRAPHMEM_STRICT", ""))
        if response_budget is None:
            response_budget = _parse_budget(env.get("GRAPHMEM_RESPONSE_BUDGET", "").strip())
        elif response_budget < 0:
            raise ConfigError("--response-budget", str(response_budget), _BUDGET_HINT)
        if search_budget is None:
            search_budget = _parse_budget(
                env.get("GRAPHMEM_SEARCH_BUDGET", "").strip(), "GRAPHMEM_SEARCH_BUDGET", DEFAULT_SEARCH_BUDGET
            )
        elif search_budget < 0:
            raise ConfigError("--search-budget", str(search_budget), _BUDGET_HINT)
        if semantic is None:
            semantic = _parse_bool("GRAPHMEM_SEMANTIC", env.get("GRAPHMEM_SEMANTIC", "") or "on")
        toolset_key = "--toolset" if toolset else "GRAPHMEM_TOOLSET"
        toolset = (toolset or env.get("GRAPHMEM_TOOLSET", "").strip() or "default").lower()
        if toolset not in TOOLSET_NAMES:
            raise ConfigError(toolset_key, toolset, f"Choose one of: {', '.join(TOOLSET_NAMES)}.")
        raw_tools = tools if tools is not None else env.get("GRAPHMEM_TOOLS", "").strip() or None
        tool_names = None if raw_tools is None else tuple(name.strip() for name in raw_tools.split(",") if name.strip())
        if call_time_limit is None:
            call_time_limit = _parse_time_limit(
                "GRAPHMEM_CALL_TIME_LIMIT", env.get("GRAPHMEM_CALL_TIME_LIMIT", "").strip()
            )
        elif not call_time_limit >= 0:
            raise ConfigError("--call-time-limit", str(call_time_limit), _TIME_LIMIT_HINT)
        history = env.get("GRAPHMEM_HISTORY_DAYS", "").strip()
        if history and not (history.isdigit() and int(history) > 0):
            raise ConfigError(
                "GRAPHMEM_HISTORY_DAYS", history, "Give a whole number of days (365), or leave it unset to keep all."
            )
        secrets_key = "--secrets" if secrets else "GRAPHMEM_SECRETS"
        secrets = (secrets or env.get("GRAPHMEM_SECRETS", "").strip() or "redact").lower()
        if secrets not in ("redact", "refuse", "allow"):
            raise ConfigError(
                secrets_key,
                secrets,
                "Choose redact (secrets replaced by a marker: the default), refuse (a write holding one is "
                "refused) or allow (kept as written).",
            )
        project_setting = project if project is not None else env.get("GRAPHMEM_PROJECT", "")
        workspace_source = "--workspace" if workspace is not None else "GRAPHMEM_WORKSPACE"
        workspace = workspace if workspace is not None else env.get("GRAPHMEM_WORKSPACE")
        # A folder the client named (expanded, and there): it wins over the client's roots.
        named_workspace = bool(workspace and "${" not in workspace and Path(workspace).expanduser().is_dir())
        chosen: ProjectChoice | NoProject | None = None
        if project_setting.strip():
            home = home or _home()
            # Only when asked for: with projects off, start-up looks at no folder at all.
            chosen = resolve_project(
                project_setting,
                setting_source="--project" if project is not None else "GRAPHMEM_PROJECT",
                workspace=workspace,
                workspace_source=workspace_source,
                cwd=cwd or Path.cwd(),
                home=home,
            )
        return cls(
            memory_path=path,
            database_url=database_url,
            strict=strict,
            response_budget=response_budget,
            search_budget=search_budget,
            toolset=toolset,
            tools=tool_names,
            call_time_limit=call_time_limit,
            semantic=semantic,
            history_days=int(history) if history else None,
            secrets=secrets,
            project=chosen if isinstance(chosen, ProjectChoice) else None,
            why_no_project=chosen.reason if isinstance(chosen, NoProject) else None,
            roots_may_choose=chosen is not None and project_setting.strip().lower() == AUTO and not named_workspace,
            home=home,
        )


DEFAULT_HTTP_PORT = 8765
DEFAULT_TCP_PORT = 8766

DEFAULT_REQUEST_TIMEOUT = 10.0
"""Seconds to send a complete request: long enough for any client, too short to hold a slot for long."""

DEFAULT_IDLE_TIMEOUT = 600.0
"""Seconds a TCP connection may stay silent with nothing in flight."""

DEFAULT_SESSION_TIMEOUT = 600.0
"""Seconds an HTTP session may go unused before it is ended (its client initializes again)."""

DEFAULT_MAX_SESSIONS = 1000
"""HTTP sessions open at once; a new one then ends the least recently used idle one."""

_TOKEN_HINT = (
    "Give the token in --token-file (a file only you can read) or in GRAPHMEM_TOKEN, or named tokens in --tokens-file."
)


def is_loopback(host: str) -> bool:
    """Whether `host` names this machine only (127.0.0.0/8, ::1 or localhost), so no other one can connect."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        # A host name other than localhost may resolve to any address.
        return False


@dataclass(frozen=True, slots=True)
class NetworkSettings:
    """How `graphmem serve --http` or `--tcp` listens, and whom it lets in.

    Attributes:
        host: the address to bind; loopback unless a token is set.
        port: the port to bind; 0 picks a free one (the server says which on stderr).
        credentials: the bearer tokens a client may present, each with whose it is and whether
            it may write; none means no token is asked for (allowed on loopback only).
        allowed_hosts: host names, besides loopback and the bind address, that HTTP clients
            may use in their Host header (and in an Origin header), against DNS rebinding.
        allowed_origins: exact browser origins (such as https://app.example.com) allowed besides those.
        json_response: answer HTTP POSTs with one JSON body instead of an SSE stream.
        request_timeout: seconds a connection may take to send a complete request: an HTTP
            request's head and body, or a TCP connection's first lines (token, `initialize`).
        idle_timeout: seconds a TCP connection may stay silent with no call in flight before it is closed.
        session_timeout: seconds an HTTP session may go unused (no request in flight, no open
            GET stream) before it is ended.
        max_sessions: HTTP sessions open at once; past it the least recently used idle one is ended.
    """

    host: str = "127.0.0.1"
    port: int = DEFAULT_HTTP_PORT
    credentials: tuple[Credential, ...] = ()
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    json_response: bool = False
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    session_timeout: float = DEFAULT_SESSION_TIMEOUT
    max_sessions: int = DEFAULT_MAX_SESSIONS

    @property
    def token(self) -> str | None:
        """The single token of --token-file or GRAPHMEM_TOKEN, when that is how access is given."""
        if len(self.credentials) == 1 and self.credentials[0].identity.name is None:
            return self.credentials[0].token
        return None

    @classmethod
    def from_env(
        cls,
        environ: Mapping[str, str] | None = None,
        *,
        host: str | None = None,
        port: int | None = None,
        default_port: int = DEFAULT_HTTP_PORT,
        token_file: str | None = None,
        tokens_file: str | None = None,
        allowed_hosts: Sequence[str] = (),
        allowed_origins: Sequence[str] = (),
        json_response: bool | None = None,
    ) -> NetworkSettings:
        """Build the network settings from flags (which win) and the environment.

        The single token comes from `token_file`, else the file in GRAPHMEM_TOKEN_FILE, else
        GRAPHMEM_TOKEN itself; it may write and records no author. Named tokens come from
        `tokens_file`, else the file in GRAPHMEM_TOKENS_FILE (see `read_tokens_file`). The two
        kinds are never mixed: given both, this refuses.

        The time limits and the session limit come from GRAPHMEM_REQUEST_TIMEOUT,
        GRAPHMEM_IDLE_TIMEOUT, GRAPHMEM_SESSION_TIMEOUT and GRAPHMEM_MAX_SESSIONS.

        Raises:
            ConfigError: the token file is readable by others, empty or unreadable; the token
                is too short; the tokens file is refused (`read_tokens_file`); both kinds of
                token are given; the host is not loopback and there is no token; or a limit is
                not a positive number.
        """
        env = os.environ if environ is None else environ
        host = host or env.get("GRAPHMEM_HOST", "").strip() or "127.0.0.1"
        if port is None:
            raw_port = env.get("GRAPHMEM_PORT", "").strip()
            try:
                port = int(raw_port) if raw_port else default_port
            except ValueError:
                raise ConfigError("GRAPHMEM_PORT", raw_port, "Give a port number from 0 to 65535.") from None
        if not 0 <= port <= 65535:
            raise ConfigError("--port", str(port), "Give a port number from 0 to 65535.")
        credentials = _credentials(env, token_file, tokens_file)
        if not credentials and not is_loopback(host):
            raise ConfigError(
                "--host",
                host,
                "Listening on an address other machines can reach needs a bearer token, so that "
                f"only your clients get in. {_TOKEN_HINT}",
            )
        hosts = tuple(allowed_hosts) or _split(env.get("GRAPHMEM_ALLOWED_HOSTS", ""))
        origins = tuple(allowed_origins) or _split(env.get("GRAPHMEM_ALLOWED_ORIGINS", ""))
        if json_response is None:
            json_response = _parse_bool("GRAPHMEM_HTTP_JSON", env.get("GRAPHMEM_HTTP_JSON", ""))
        return cls(
            host=host,
            port=port,
            credentials=credentials,
            allowed_hosts=hosts,
            allowed_origins=origins,
            json_response=json_response,
            request_timeout=_positive(env, "GRAPHMEM_REQUEST_TIMEOUT", DEFAULT_REQUEST_TIMEOUT),
            idle_timeout=_positive(env, "GRAPHMEM_IDLE_TIMEOUT", DEFAULT_IDLE_TIMEOUT),
            session_timeout=_positive(env, "GRAPHMEM_SESSION_TIMEOUT", DEFAULT_SESSION_TIMEOUT),
            max_sessions=int(_positive(env, "GRAPHMEM_MAX_SESSIONS", DEFAULT_MAX_SESSIONS, whole=True)),
        )


def _credentials(env: Mapping[str, str], token_file: str | None, tokens_file: str | None) -> tuple[Credential, ...]:
    """The tokens the server accepts: the named ones of a tokens file, or the single token, or none."""
    tokens_key = "--tokens-file" if tokens_file else "GRAPHMEM_TOKENS_FILE"
    tokens_file = tokens_file or env.get("GRAPHMEM_TOKENS_FILE", "").strip() or None
    token_key = "--token-file" if token_file else "GRAPHMEM_TOKEN_FILE"
    token_file = token_file or env.get("GRAPHMEM_TOKEN_FILE", "").strip() or None
    if token_file is None and env.get("GRAPHMEM_TOKEN", "").strip():
        token_key = "GRAPHMEM_TOKEN"
    single = token_file is not None or token_key == "GRAPHMEM_TOKEN"
    if tokens_file is not None:
        if single:
            # Refused rather than merged: a forgotten GRAPHMEM_TOKEN in a shell would
            # otherwise keep granting write access, under no name, beside the team's tokens.
            raise ConfigError(
                tokens_key,
                tokens_file,
                f"{token_key} gives a single token too; use one or the other. To keep that token, "
                "add it to the tokens file as a line such as `default TOKEN write` and unset "
                f"{token_key}.",
            )
        return read_tokens_file(tokens_file, tokens_key)
    if token_file is not None:
        token = read_token_file(token_file, token_key)
    elif single:
        token = env.get("GRAPHMEM_TOKEN", "").strip()
    else:
        return ()
    if len(token) < MIN_TOKEN_LENGTH:
        # The value is never echoed: it is a secret, even a weak one.
        raise ConfigError(
            token_key,
            "(hidden)",
            f"The token is shorter than {MIN_TOKEN_LENGTH} characters; {NEW_TOKEN}",
        )
    if not sendable_token(token):
        raise ConfigError(token_key, "(hidden)", f"The token {UNSENDABLE}")
    return (Credential(token, Identity(None, can_write=True)),)


def _positive(env: Mapping[str, str], key: str, default: float, *, whole: bool = False) -> float:
    """A positive, finite number from `env[key]`, or `default` when it is unset or empty."""
    raw = env.get(key, "").strip()
    if not raw:
        return default
    hint = "Give a whole number, 1 or more." if whole else "Give a number of seconds above 0."
    try:
        value = int(raw) if whole else float(raw)
    except ValueError:
        raise ConfigError(key, raw, hint) from None
    if not 0 < value < float("inf"):
        raise ConfigError(key, raw, hint)
    return value


def _split(value: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in value.split(",") if part.strip())
