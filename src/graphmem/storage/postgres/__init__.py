"""The PostgreSQL backend: one database shared by many graphmem servers (issue 18).

Imported only when a memory is a `postgresql://` URL: psycopg is an optional dependency
(`pip install 'graphmem[postgres]'`).
"""

from graphmem.storage.postgres.store import SCHEMA_VERSION, PostgresStore

__all__ = ["SCHEMA_VERSION", "PostgresStore"]
