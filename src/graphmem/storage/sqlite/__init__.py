"""The SQLite backend (the default): one SQLite file in WAL mode.

    store.py        SQLiteStore: opening, migrating, transactions
    schema.py       the migration scripts, read-only connections, private files
    reads.py        rows to entities and relations, pages, counts, analytics rows
    writes.py       inserts, updates, deletes
    search.py       the official substring search and ranked word search
    query.py        query_nodes as SQL over indexed columns
    ranking.py      ranked word search over the FTS5 word index
    text.py         texts with U+0000 kept exact through JSON functions and FTS5
    checkpoints.py  write-ahead-log checkpoints on a thread of their own

Its migrations are the numbered scripts in `graphmem/storage/migrations/sqlite/`.
"""

from graphmem.storage.sqlite.store import SQLiteStore

__all__ = ["SQLiteStore"]
