"""npm packages some slow tests run in Node (the official server, Mermaid), cached once per machine.

They are installed on first use under `$XDG_CACHE_HOME/graphmem-tests` (or `~/.cache`), never
in the repo. The pytest header says before the run which of them it will download, and an
install holds a file lock, so parallel test workers (pytest-xdist) install a package once
instead of racing npm into one folder.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest


def cache_root() -> Path:
    """The folder that holds every npm package the tests install."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "graphmem-tests"


@dataclass(frozen=True)
class NpmPackages:
    """npm packages installed together under one folder of the cache; `check` proves them installed."""

    folder: str
    specs: tuple[str, ...]
    check: str
    """Package whose package.json must exist (and match `version`, when set)."""
    version: str | None = None
    why: str = ""

    @property
    def prefix(self) -> Path:
        return cache_root() / self.folder

    def installed(self) -> bool:
        manifest = self.prefix / "node_modules" / self.check / "package.json"
        if not manifest.exists():
            return False
        return self.version is None or json.loads(manifest.read_text(encoding="utf-8"))["version"] == self.version

    def ensure(self) -> Path:
        """The install prefix, installing the packages first if they are not there (skips without npm)."""
        npm = shutil.which("npm")
        if shutil.which("node") is None or npm is None:
            pytest.skip(f"node and npm are not on PATH ({self.why})")
        self.prefix.mkdir(parents=True, exist_ok=True)
        with (self.prefix / ".install-lock").open("w", encoding="utf-8") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not self.installed():
                subprocess.run(
                    [npm, "install", "--no-audit", "--no-fund", "--prefix", str(self.prefix), *self.specs],
                    check=True,
                    capture_output=True,
                    timeout=600,
                )
        return self.prefix


OFFICIAL_PACKAGE = "@modelcontextprotocol/server-memory"
OFFICIAL_VERSION = "2026.8.31"

OFFICIAL = NpmPackages(
    "official",
    (f"{OFFICIAL_PACKAGE}@{OFFICIAL_VERSION}",),
    OFFICIAL_PACKAGE,
    OFFICIAL_VERSION,
    why="the differential test runs the official server",
)
MERMAID = NpmPackages("mermaid", ("mermaid@11", "jsdom@26"), "mermaid", why="the Mermaid tests run its parser")

TYPESCRIPT_SDK_VERSION = "1.32.2"

TYPESCRIPT_SDK = NpmPackages(
    "typescript-sdk",
    (f"@modelcontextprotocol/sdk@{TYPESCRIPT_SDK_VERSION}",),
    "@modelcontextprotocol/sdk",
    TYPESCRIPT_SDK_VERSION,
    why="the TypeScript SDK's client is tested on graphmem",
)

ALL = (OFFICIAL, MERMAID, TYPESCRIPT_SDK)


def download_notice() -> list[str]:
    """One line per package set the run will download, with where it is cached; none when all are."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        return []
    return [
        f"npm: {p.why}: its first run downloads {' '.join(p.specs)} once, cached in {p.prefix}"
        for p in ALL
        if not p.installed()
    ]
