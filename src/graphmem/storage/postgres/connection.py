"""Connections to PostgreSQL: how they are made, the pool's settings, and the mapping of driver
errors to graphmem's (lending.py lends them to transactions, and gets through outages).

Everything here works through PgBouncer in transaction mode: no server-side prepared statements
(`prepare_threshold=None`), and every setting a transaction needs is made inside it with
`SET LOCAL`, never once per session. TLS comes from the URL (`sslmode=require`, `sslrootcert=...`)
and libpq does the rest.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import psycopg
from psycopg import errors as pg_errors
from psycopg_pool import ConnectionPool, PoolTimeout

from graphmem.core.errors import MemoryOpenError, StorageBusyError, StorageError, TimeLimitError

__all__ = ["CONNECT_OPTIONS", "connect_pool", "map_postgres_errors", "new_pool", "open_error", "unreachable_reason"]

# Small: graphmem serves one client per process (stdio) or a few calls at once (HTTP), and a
# team's database is shared by many servers.
POOL_MIN = 1
POOL_MAX = 4

CONNECT_TIMEOUT_SECONDS = 5
"""How long making one connection may take (libpq's connect_timeout, for each address of the
host): during an outage, how long a call waits at most to learn the database does not answer."""

POOL_WAIT_SECONDS = 5.0
"""How long a call waits for a free connection of the pool before it makes one of its own
(lending.py): a server's calls reach the store one at a time, so the pool is seldom all lent."""

_UNACKNOWLEDGED_MS = 10_000
"""A connection whose sent data the server has not acknowledged for this long is given up (a
network that drops everything), rather than waiting the system's many minutes."""

CONNECT_OPTIONS: dict[str, Any] = {
    "autocommit": True,
    "prepare_threshold": None,
    "connect_timeout": CONNECT_TIMEOUT_SECONDS,
    "tcp_user_timeout": _UNACKNOWLEDGED_MS,
}
"""How every connection is made: autocommit (transactions are begun by hand, see store.py)."""

IDLE_IN_TRANSACTION_MS = 60_000
"""A transaction left open by a stuck graphmem is ended by the server after this long."""

_CHOOSE_ANOTHER = "or give another database URL with --memory-file, MEMORY_FILE_PATH or GRAPHMEM_DATABASE_URL"

_BUSY = (
    "Another graphmem server was changing the same entities at the same moment (PostgreSQL {what}); "
    "nothing was changed. Retry the call."
)


_URL_PASSWORD = re.compile(r"://[^/?#@:]*:([^/?#@]+)@")
"""The password of a URL too malformed for urlsplit (an unclosed IPv6 bracket, say)."""


def _check_server(url: str, location: str) -> None:
    """Open one connection now, so that a wrong URL says why at once (the pool only times out)."""
    try:
        with psycopg.connect(url, **CONNECT_OPTIONS):
            pass
    except psycopg.Error as error:
        raise open_error(location, error, url) from error


def new_pool(url: str) -> ConnectionPool:
    """A pool of connections to `url`, filling in the background."""
    pool = ConnectionPool(
        url,
        min_size=POOL_MIN,
        max_size=POOL_MAX,
        kwargs=CONNECT_OPTIONS,
        # No check before lending a connection (a round trip of its own, a third of a point
        # read): a connection the server or a proxy closed meanwhile fails the transaction's
        # first statement instead, which changed nothing (lending.py).
        timeout=POOL_WAIT_SECONDS,
        name="graphmem",
        open=False,
    )
    pool.open(wait=False)
    return pool


def connect_pool(url: str, location: str) -> ConnectionPool:
    """A pool of autocommit connections to `url`, with its first connection made.

    Raises:
        MemoryOpenError: the server cannot be reached or refuses us; the message says why and what to do.
    """
    _check_server(url, location)
    pool = new_pool(url)
    try:
        pool.wait(timeout=CONNECT_TIMEOUT_SECONDS * 2)
    except PoolTimeout as error:
        pool.close()
        raise MemoryOpenError(
            location,
            f"the server answered one connection, then none within {CONNECT_TIMEOUT_SECONDS * 2} s",
            "Check that PostgreSQL is running and has connections to spare (max_connections), then start again.",
        ) from error
    except BaseException:
        pool.close()
        raise
    return pool


def unreachable_reason(error: psycopg.Error, url: str) -> str:
    """libpq's reason a connection failed, on one line, without the URL's password or the
    "connection to server at ..." the caller names itself."""
    message = _without_secrets(str(error).strip(), url)
    first_line = message.splitlines()[0] if message else type(error).__name__
    # libpq pads its severity ("FATAL:  the database system is shutting down").
    return " ".join(_LIBPQ_PREFIX.sub("", first_line).split()) or first_line


def _without_secrets(message: str, url: str | None) -> str:
    """libpq's message with the URL and its password taken out (it quotes the part it could not
    parse, which may be the password itself)."""
    if not url:
        return message
    secrets = [url]
    try:
        password = urlsplit(url).password
    except ValueError:
        password = None
    secrets += [password] if password else []
    secrets += [match.group(1) for match in _URL_PASSWORD.finditer(url)]
    for secret in sorted(set(secrets), key=len, reverse=True):
        message = message.replace(secret, "***")
    return message


def open_error(location: str, error: psycopg.Error, url: str | None = None) -> MemoryOpenError:
    """Why a connection to the database failed, and what to do, from libpq's message (with the
    URL's password, if `url` is given, never repeated)."""
    message = _without_secrets(str(error).strip(), url)
    lowered = message.lower()
    first_line = message.splitlines()[0] if message else type(error).__name__
    # What libpq says went wrong, without "connection to server at "host", port N failed: ":
    # keywords are looked for there, not in a host name (a host called "ssl-db" is no TLS failure).
    reason = _LIBPQ_PREFIX.sub("", first_line)
    if "password authentication failed" in lowered or "no password supplied" in lowered:
        return MemoryOpenError(
            location,
            "the server refused the user name or password",
            "Check the user and password (in the URL, PGPASSWORD or ~/.pgpass) with the database's owner.",
        )
    tls = _tls_error(location, reason)
    if tls is not None:
        return tls
    if "does not exist" in lowered and "database" in lowered:
        return MemoryOpenError(
            location,
            "there is no such database on that server",
            f"Create it first (createdb, or CREATE DATABASE as its owner), {_CHOOSE_ANOTHER}.",
        )
    if any(sign in lowered for sign in _UNREACHABLE):
        return MemoryOpenError(
            location,
            f"the server cannot be reached ({first_line})",
            f"Check the host and port and that PostgreSQL is running there, {_CHOOSE_ANOTHER}.",
        )
    if "ssl" in reason.lower() or "certificate" in reason.lower():
        return MemoryOpenError(
            location,
            f"the TLS connection failed ({reason})",
            "Check sslmode and sslrootcert in the URL against what the server offers.",
        )
    if "no pg_hba.conf entry" in lowered or "permission denied" in lowered:
        return MemoryOpenError(
            location,
            f"the server does not let this user in ({first_line})",
            "Ask the database's owner to allow this user and host (pg_hba.conf, GRANT CONNECT).",
        )
    return MemoryOpenError(location, f"PostgreSQL refused the connection ({first_line})", "Check the URL.")


_LIBPQ_PREFIX = re.compile(r"^(connection failed: |connection is bad: )?(connection to server .*? failed: )?")

# "failed to resolve host" is psycopg's own: it looks host names up before libpq does.
_UNREACHABLE = ("connection refused", "could not translate host name", "failed to resolve host", "timeout")

_GIVE_CA = (
    "Give sslrootcert=<the file with the certificate authority your database provider publishes> "
    "in the URL, or sslrootcert=system for a certificate signed by an authority the system trusts."
)

_SSLMODES = "disable, allow, prefer, require (encrypts), verify-ca or verify-full (also checks the server's name)"


def _tls_error(location: str, reason: str) -> MemoryOpenError | None:
    """The error for libpq's TLS failures it can tell apart (messages of libpq 15 to 18), else None."""
    failed = "the TLS connection failed"
    if match := re.search(r'root certificate file "(.*?)" does not exist', reason):
        # Without sslrootcert libpq reads ~/.postgresql/root.crt, never the system's authorities.
        return MemoryOpenError(
            location,
            f"{failed}: there is no certificate authority file at {match[1]} to check the server's certificate with",
            _GIVE_CA,
        )
    if "certificate verify failed" in reason:
        return MemoryOpenError(
            location,
            f"{failed}: the server's certificate is not signed by the certificate authority in sslrootcert, "
            f"or has expired ({reason})",
            _GIVE_CA,
        )
    if "does not match host name" in reason:
        return MemoryOpenError(
            location,
            f"{failed}: the server's certificate is not for the host name in the URL ({reason})",
            "Connect with the host name the certificate names (the one your database provider gives), "
            "or use sslmode=verify-ca to check the certificate authority only.",
        )
    if "server does not support ssl" in reason.lower():
        return MemoryOpenError(
            location,
            f"{failed}: the server does not offer TLS, and the URL's sslmode requires it",
            "Ask the database's owner to turn TLS on (ssl = on, with a certificate), "
            "or, on a network you trust, use sslmode=prefer.",
        )
    if match := re.search(r'invalid sslmode value: "(.*?)"', reason):
        return MemoryOpenError(
            location, f"the URL's sslmode={match[1]} is not a TLS mode libpq knows", f"Use {_SSLMODES}."
        )
    return None


@contextmanager
def map_postgres_errors(timed: bool = False) -> Iterator[None]:
    """Turn psycopg errors into `StorageError`s, so no driver type or SQL leaves storage/.

    A serialization failure, a deadlock or a lock not granted in time is `StorageBusyError`:
    the transaction changed nothing and the whole call may be made again. A statement stopped
    by `statement_timeout` is `TimeLimitError` when the store set one (`timed`).
    """
    try:
        yield
    except (pg_errors.SerializationFailure, pg_errors.DeadlockDetected) as exc:
        what = "serialization failure" if isinstance(exc, pg_errors.SerializationFailure) else "deadlock"
        raise StorageBusyError(_BUSY.format(what=what)) from exc
    except pg_errors.LockNotAvailable as exc:
        raise StorageBusyError(
            "The memory stayed locked by another graphmem server for too long; nothing was changed. Retry the call."
        ) from exc
    except pg_errors.QueryCanceled as exc:
        if timed:
            raise TimeLimitError(
                "The call ran past the server's time limit and was stopped; nothing was changed. "
                "Ask for less at once (a limit, fewer names, a narrower query) and call again."
            ) from exc
        raise StorageError(f"The database stopped the call ({exc.diag.message_primary}); nothing was changed.") from exc
    except pg_errors.InsufficientPrivilege as exc:
        raise StorageError(
            f"The database user may not do this ({exc.diag.message_primary}); nothing was changed. "
            "Ask the database's owner for the privileges graphmem needs on its tables."
        ) from exc
    except PoolTimeout as exc:
        # No statement was sent: the pool could not lend a connection in time.
        raise StorageError(
            f"No connection to the database could be had within {POOL_WAIT_SECONDS:.0f} s (the server cannot "
            "be reached, or all connections are busy); nothing was changed. Retry the call, and check the "
            "server and its max_connections."
        ) from exc
    except psycopg.OperationalError as exc:
        if exc.sqlstate is not None and not exc.sqlstate.startswith(("08", "57P")):
            # The server answered (out of memory or locks, disk full, ...): the transaction rolled back.
            raise StorageError(
                f"The memory database failed ({exc.diag.message_primary}); nothing was changed."
            ) from exc
        raise StorageError(
            f"The connection to the database failed ({str(exc).strip().splitlines()[0] if str(exc) else exc!r}); "
            "the call may not have been saved: check with a read before repeating it."
        ) from exc
    except psycopg.Error as exc:
        primary = exc.diag.message_primary or str(exc).strip().splitlines()[0]
        raise StorageError(f"The memory database failed ({primary}); nothing was changed.") from exc
