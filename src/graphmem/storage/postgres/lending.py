"""Connections for the store's transactions: from the pool while the database answers, made
one by one while it does not, so that an outage costs a call seconds, not minutes.

    borrow ─► a pool? ─ yes ─► a pooled connection, its first statements run ─► lent
                │                 │ found closed, or none free within POOL_WAIT_SECONDS
                │ no (down)       ▼
                └──────────► one connection made now (CONNECT_TIMEOUT_SECONDS at most)
                                  │ made: lent; the pool is made anew
                                  │ refused, timed out: the pool is closed, the call fails
                                  ▼   ("the database at ... is unreachable; nothing was changed")

Why not leave it all to psycopg_pool: while the database is down, a pool with no connection
makes each call wait its whole timeout for one, so calls queue behind each other's waits;
and its reconnection attempts back off exponentially (1, 2, 4, ... s), so after an outage
of a minute it may take half a minute more to notice the database is back (issue 27: calls
failed for 38 s after PostgreSQL returned). A connection made for the call itself answers
both questions at once, and a pool made anew when one succeeds is ready at once. A
connection lost while lent (the server stopped mid-call) closes the pool the same way, so
the next call does not wait for the pool to make one.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout

from graphmem.core.errors import StorageError
from graphmem.storage.postgres.connection import (
    CONNECT_OPTIONS,
    POOL_WAIT_SECONDS,
    connect_pool,
    new_pool,
    unreachable_reason,
)

__all__ = ["ConnectionLender"]

Lent = tuple[psycopg.Connection[Any], psycopg.Cursor[Any]]


class ConnectionLender:
    """Lends the store's transactions a connection each, and gets through the database's outages.

    Args:
        url: the libpq URL.
        location: the URL without its password, for messages.

    Raises:
        MemoryOpenError: the database cannot be reached now (at start, nothing is retried).
    """

    def __init__(self, url: str, location: str) -> None:
        self._url = url
        self._location = location
        self._lock = threading.Lock()
        self._closed = False
        self._pool: ConnectionPool | None = connect_pool(url, location)
        """None while the database is down: every call makes a connection of its own."""

    @contextmanager
    def first_statement(self, query: str) -> Iterator[Lent]:
        """A connection, and the cursor of `query` run on it (a transaction's BEGIN, settings and
        reads, nothing that writes), for the block; the connection goes back as the block ends.

        Raises:
            StorageError: the database is unreachable; nothing was sent that could change anything.
        """
        conn, cursor, pool = self._borrow(query)
        try:
            yield conn, cursor
        finally:
            if pool is None:
                conn.close()
            else:
                # Read before giving it back: the pool itself closes healthy connections it
                # retires (past their max_lifetime), which says nothing about the database.
                lost = conn.broken
                _give_back(pool, conn)
                if lost:
                    # Lost while lent (the server stopped, a network cut): the next call makes
                    # a connection of its own rather than wait for the pool to make one.
                    self._lost(pool)

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection for a statement that runs outside a transaction (VACUUM), or a setup."""
        with self.first_statement("SELECT 1") as (conn, _):
            yield conn

    def close(self) -> None:
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def _borrow(self, query: str) -> tuple[psycopg.Connection[Any], psycopg.Cursor[Any], ConnectionPool | None]:
        with self._lock:
            pool = self._pool
        if pool is not None:
            lent = _from_pool(pool, query)
            if lent is not None:
                return (*lent, pool)
        try:
            conn = psycopg.connect(self._url, **CONNECT_OPTIONS)
        except psycopg.OperationalError as error:
            self._lost(pool)
            raise self._unreachable(error) from error
        try:
            cursor = conn.execute(query.encode("utf-8"))
        except psycopg.OperationalError as error:
            lost = conn.closed  # the server went away as it answered; else the statement itself failed
            conn.close()
            if not lost:
                raise
            self._lost(pool)
            raise self._unreachable(error) from error
        except BaseException:
            conn.close()
            raise
        # The database answers, and the pool could not lend a connection that works: a restart
        # ended its sessions, or it is still waiting out its reconnection backoff (or, seldom,
        # every connection stayed lent for POOL_WAIT_SECONDS: a new pool costs one connection).
        self._renew(pool)
        return conn, cursor, None

    def _unreachable(self, error: psycopg.Error) -> StorageError:
        return StorageError(
            f"The database at {self._location} is unreachable ({unreachable_reason(error, self._url)}); "
            "nothing was changed. Retry the call: graphmem reconnects by itself as soon as the database answers."
        )

    def _lost(self, pool: ConnectionPool | None) -> None:
        """The database did not answer, or a lent connection was lost: stop the pool's own
        reconnection attempts; each call tries a connection of its own until one is made."""
        with self._lock:
            if self._pool is not pool or pool is None:
                return
            self._pool = None
        _close_soon(pool)

    def _renew(self, broken: ConnectionPool | None) -> None:
        """The database answers again: a new pool in place of the one that could not lend."""
        with self._lock:
            if self._closed or self._pool is not broken:
                return  # another call renewed it already
            self._pool = new_pool(self._url)
        if broken is not None:
            _close_soon(broken)


def _from_pool(pool: ConnectionPool, query: str) -> Lent | None:
    """A pooled connection with `query` run on it, or None when the pool has none that works
    within `POOL_WAIT_SECONDS`, or the first it lends was closed (by a restart, an idle timeout,
    a proxy): the caller then makes one, which tells whether the database is there at all."""
    try:
        conn = pool.getconn(timeout=POOL_WAIT_SECONDS)
    except (PoolTimeout, PoolClosed):
        return None
    try:
        return conn, conn.execute(query.encode("utf-8"))
    except psycopg.OperationalError:
        lost = conn.broken  # before giving it back, which may close a healthy connection
        _give_back(pool, conn)
        if not lost:
            raise  # the server answered: the statement itself failed
        return None
    except BaseException:
        _give_back(pool, conn)
        raise


def _give_back(pool: ConnectionPool, conn: psycopg.Connection[Any]) -> None:
    """Return a pooled connection, its transaction (if one is still open) ended first."""
    if not conn.closed and conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        with contextlib.suppress(psycopg.Error):
            conn.rollback()
    pool.putconn(conn)


def _close_soon(pool: ConnectionPool) -> None:
    """Close a pool on a thread of its own: its workers may be inside a connection attempt."""
    threading.Thread(target=pool.close, name="graphmem-pool-close", daemon=True).start()
