"""Settings: everything graphmem is told by its environment and flags, read in one place.

Only the composition root (`cli.py`) calls `Settings.from_env`; every other module
receives the frozen `Settings` it builds.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs

from graphmem.errors import ConfigError
from graphmem.limits import Limits

__all__ = ["DEFAULT_RESPONSE_BUDGET", "TOOLSET_NAMES", "Settings", "default_memory_path"]

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}

# About what a client takes in one tool answer (Claude Code warns past 25,000 tokens).
DEFAULT_RESPONSE_BUDGET = 25_000

# The toolsets a server can list (their members are chosen in tools/toolsets.py).
TOOLSET_NAMES = ("official", "default", "all")

# Suffixes that keep the memory in the official JSONL format instead of SQLite.
JSONL_SUFFIXES = (".jsonl", ".json")


def default_memory_path() -> Path:
    """The memory file when nothing is configured: in the user's data directory.

    Never next to the package, where the official server keeps it and an upgrade
    (or an npx/uvx cache clean) deletes it.
    """
    return Path(platformdirs.user_data_dir("graphmem", appauthor=False)) / "memory.db"


def _parse_bool(key: str, value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ConfigError(key, value, "Not a valid bool; use true or false.")


_BUDGET_HINT = "Give a whole number of tokens, 0 or more (0 means unlimited)."


def _parse_budget(value: str) -> int:
    if not value:
        return DEFAULT_RESPONSE_BUDGET
    try:
        budget = int(value)
    except ValueError:
        raise ConfigError("GRAPHMEM_RESPONSE_BUDGET", value, _BUDGET_HINT) from None
    if budget < 0:
        raise ConfigError("GRAPHMEM_RESPONSE_BUDGET", value, _BUDGET_HINT)
    return budget


@dataclass(frozen=True, slots=True)
class Settings:
    """How this graphmem runs.

    Attributes:
        memory_path: the memory file, absolute.
        strict: reject relations to entities that do not exist.
        limits: per-call limits.
        response_budget: about how many tokens of text one read answer may hold before it is
            cut at an entity boundary (and says how to get the rest); 0 means unlimited.
        toolset: which tools the server lists: `official`, `default` or `all`.
        tools: an exact list of tool names to list instead of a toolset.
    """

    memory_path: Path = field(default_factory=default_memory_path)
    strict: bool = False
    limits: Limits = field(default_factory=Limits)
    response_budget: int = DEFAULT_RESPONSE_BUDGET
    toolset: str = "default"
    tools: tuple[str, ...] | None = None

    @property
    def backend(self) -> str:
        """`jsonl` for the official file format, `sqlite` otherwise; the suffix decides."""
        return "jsonl" if self.memory_path.suffix.lower() in JSONL_SUFFIXES else "sqlite"

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
        cwd: Path | None = None,
    ) -> Settings:
        """Build settings from flags (which win) and the environment.

        Args:
            environ: the environment to read; `os.environ` when None.
            memory_file: the `--memory-file` flag, if given.
            strict: the `--strict` flag, if given.
            response_budget: the `--response-budget` flag, if given.
            toolset: the `--toolset` flag, if given.
            tools: the `--tools` flag (comma-separated names), if given.
            cwd: the directory relative paths resolve against; the working directory when None.
        """
        env = os.environ if environ is None else environ
        raw_path = memory_file or env.get("MEMORY_FILE_PATH", "").strip() or None
        if raw_path is None:
            path = default_memory_path()
        else:
            path = Path(raw_path).expanduser()
            if not path.is_absolute():
                # Relative to the working directory, as users expect (the official
                # server joins it to its own package folder instead).
                path = (cwd or Path.cwd()) / path
            if raw_path.endswith(("/", os.sep)) or path.is_dir():
                raise ConfigError(
                    "MEMORY_FILE_PATH" if memory_file is None else "--memory-file",
                    raw_path,
                    "It names a directory; give a file path such as memory.db or memory.jsonl.",
                )
        if strict is None:
            strict = _parse_bool("GRAPHMEM_STRICT", env.get("GRAPHMEM_STRICT", ""))
        if response_budget is None:
            response_budget = _parse_budget(env.get("GRAPHMEM_RESPONSE_BUDGET", "").strip())
        elif response_budget < 0:
            raise ConfigError("--response-budget", str(response_budget), _BUDGET_HINT)
        toolset_key = "--toolset" if toolset else "GRAPHMEM_TOOLSET"
        toolset = (toolset or env.get("GRAPHMEM_TOOLSET", "").strip() or "default").lower()
        if toolset not in TOOLSET_NAMES:
            raise ConfigError(toolset_key, toolset, f"Choose one of: {', '.join(TOOLSET_NAMES)}.")
        raw_tools = tools if tools is not None else env.get("GRAPHMEM_TOOLS", "").strip() or None
        tool_names = None if raw_tools is None else tuple(name.strip() for name in raw_tools.split(",") if name.strip())
        return cls(memory_path=path, strict=strict, response_budget=response_budget, toolset=toolset, tools=tool_names)
