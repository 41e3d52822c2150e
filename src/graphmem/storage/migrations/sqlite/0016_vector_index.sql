-- Search by meaning at scale: which approximate index of the vectors is in use, and which
-- build is under way (graphmem.storage.sqlite.vector_index).
--
-- The index itself is a file beside the memory, <memory>-ivf-<token>, written whole by one
-- build and never changed; `token` names the one to use, and covers the vectors with an id
-- up to `covered_up_to` (later ones are searched exactly). A file that does not match is
-- not used: a memory copied without its index, or restored from an older copy, is searched
-- exactly and indexed again. `building` and `building_until` are a build's claim, so two
-- processes do not build at once (a claim whose process died lapses).

CREATE TABLE IF NOT EXISTS vector_index (
    id             INTEGER PRIMARY KEY CHECK (id = 1),
    token          TEXT,
    covered_up_to  INTEGER NOT NULL DEFAULT 0,
    building       TEXT,
    building_until REAL NOT NULL DEFAULT 0
);
