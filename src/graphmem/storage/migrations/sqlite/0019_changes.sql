-- The change log (graphmem.core.changes): every write transaction that changed the memory, as
-- one row, written in that same transaction. `at` is the server's time (ISO 8601 UTC), never
-- earlier than the row before it; `ops` the operations, a JSON array.
CREATE TABLE IF NOT EXISTS changes (
    seq     INTEGER PRIMARY KEY AUTOINCREMENT,
    at      TEXT NOT NULL,
    author  TEXT,  -- the token's name; NULL for a local caller
    via     TEXT NOT NULL,
    project TEXT,  -- the project the write ran in; NULL for every project
    ops     TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS changes_by_time ON changes (at);

-- Each entity a change names, by (project, name): an entity's changes, and a project's.
CREATE TABLE IF NOT EXISTS change_entities (
    project TEXT NOT NULL,
    name    TEXT NOT NULL,
    seq     INTEGER NOT NULL REFERENCES changes (seq) ON DELETE CASCADE,
    PRIMARY KEY (project, name, seq)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS change_entities_by_change ON change_entities (seq);
-- An entity's changes whatever its project (a timeline names it, not its project).
CREATE INDEX IF NOT EXISTS change_entities_by_name ON change_entities (name, seq);

-- Where the kept history starts, once changes older than the retention were forgotten
-- (compact): the memory as it stood before that cannot be seen any more.
CREATE TABLE IF NOT EXISTS history_kept (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    since TEXT NOT NULL
);
