"""The SQLite backend (the default): one SQLite file in WAL mode.

    store.py        SQLiteStore
    query.py        query_nodes as SQL over indexed columns
    ranking.py      ranked word search over the FTS5 word index
    text.py         texts with U+0000 kept exact through JSON functions and FTS5
    checkpoints.py  write-ahead-log checkpoints on a thread of their own

Its migrations are the numbered scripts in `graphmem/storage/migrations/sqlite/`.
"""

from graphmem.storage.sqlite.store import SQLiteStore

__all__ = ["SQLiteStore"]
