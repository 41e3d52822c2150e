-- The change log (graphmem.core.changes): every write transaction that changed the memory, as
-- one row, written in that same transaction. `at` is the server's time (ISO 8601 UTC), never
-- earlier than the row before it; `ops` the operations, a JSON array (text, as written).
-- Safe to run again, as 0004 is.
CREATE TABLE IF NOT EXISTS changes (
    seq     bigserial PRIMARY KEY,
    at      text COLLATE "C" NOT NULL,
    author  text COLLATE "C",
    via     text COLLATE "C" NOT NULL,
    project text COLLATE "C",
    ops     text NOT NULL
);
CREATE INDEX IF NOT EXISTS changes_by_time ON changes (at);

-- Each entity a change names, by (project, name), both escaped as every text is (0001).
CREATE TABLE IF NOT EXISTS change_entities (
    project text COLLATE "C" NOT NULL,
    name    text COLLATE "C" NOT NULL,
    seq     bigint NOT NULL REFERENCES changes (seq) ON DELETE CASCADE,
    PRIMARY KEY (project, name, seq)
);
CREATE INDEX IF NOT EXISTS change_entities_by_change ON change_entities (seq);
-- An entity's changes whatever its project (a timeline names it, not its project).
CREATE INDEX IF NOT EXISTS change_entities_by_name ON change_entities (name, seq);

-- Where the kept history starts, once changes older than the retention were forgotten.
CREATE TABLE IF NOT EXISTS history_kept (
    id    integer PRIMARY KEY CHECK (id = 1),
    since text COLLATE "C" NOT NULL
);
