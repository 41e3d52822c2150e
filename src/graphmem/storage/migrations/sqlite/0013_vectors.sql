-- Search by meaning: a vector for each text that can answer a question (an entity's name
-- with its aliases, each observation), and the queue of texts not yet embedded.
--
-- The queue is filled here, by triggers, in the write's own transaction, so a write costs
-- one small insert more and no model time; a worker (any graphmem process on this file)
-- takes texts from it in batches, embeds them off the request path and stores the vectors.
-- What a crash interrupts stays queued; `claimed_until` keeps two processes from embedding
-- the same text (a claim that outlives its process simply expires).
--
-- A vector's id only grows (AUTOINCREMENT), so a process's in-memory index catches up
-- with what other processes stored by reading the ids past the last it saw. `code` is the
-- vector's sign bits (the index's first, coarse pass); `vector` the int8 vector with its
-- scale (the exact pass over the best candidates).

CREATE TABLE IF NOT EXISTS vectors (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    kind      INTEGER NOT NULL,  -- 0: an entity's name and aliases, 1: an observation
    row_id    INTEGER NOT NULL,  -- entities.id or observations.id
    entity_id INTEGER NOT NULL,
    code      BLOB NOT NULL,
    vector    BLOB NOT NULL,
    UNIQUE (kind, row_id)
);

CREATE TABLE IF NOT EXISTS vectors_stale (
    kind          INTEGER NOT NULL,
    row_id        INTEGER NOT NULL,
    claimed_until REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (kind, row_id)
) WITHOUT ROWID;

-- Which model made the vectors: another model's vectors cannot be compared with this one's.
CREATE TABLE IF NOT EXISTS vector_model (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    fingerprint TEXT NOT NULL
);

CREATE TRIGGER IF NOT EXISTS vectors_observations_ai AFTER INSERT ON observations BEGIN
    INSERT OR IGNORE INTO vectors_stale (kind, row_id) VALUES (1, new.id);
END;
CREATE TRIGGER IF NOT EXISTS vectors_observations_ad AFTER DELETE ON observations BEGIN
    DELETE FROM vectors WHERE kind = 1 AND row_id = old.id;
    DELETE FROM vectors_stale WHERE kind = 1 AND row_id = old.id;
END;
CREATE TRIGGER IF NOT EXISTS vectors_observations_au AFTER UPDATE OF content, entity_id ON observations
WHEN old.content IS NOT new.content OR old.entity_id IS NOT new.entity_id BEGIN
    DELETE FROM vectors WHERE kind = 1 AND row_id = old.id;
    INSERT OR REPLACE INTO vectors_stale (kind, row_id, claimed_until) VALUES (1, new.id, 0);
END;

CREATE TRIGGER IF NOT EXISTS vectors_entities_ai AFTER INSERT ON entities BEGIN
    INSERT OR IGNORE INTO vectors_stale (kind, row_id) VALUES (0, new.id);
END;
CREATE TRIGGER IF NOT EXISTS vectors_entities_ad AFTER DELETE ON entities BEGIN
    DELETE FROM vectors WHERE kind = 0 AND row_id = old.id;
    DELETE FROM vectors_stale WHERE kind = 0 AND row_id = old.id;
END;
-- A rename, or new aliases (the same test as the alias index's trigger): the entity's own
-- text changed. Most updates touch only extra's timestamps and queue nothing.
CREATE TRIGGER IF NOT EXISTS vectors_entities_au AFTER UPDATE OF name, extra ON entities
WHEN old.name IS NOT new.name
    OR (CASE WHEN json_valid(old.extra) THEN json_extract(old.extra, '$.aliases') END)
    IS NOT (CASE WHEN json_valid(new.extra) THEN json_extract(new.extra, '$.aliases') END) BEGIN
    DELETE FROM vectors WHERE kind = 0 AND row_id = old.id;
    INSERT OR REPLACE INTO vectors_stale (kind, row_id, claimed_until) VALUES (0, new.id, 0);
END;

-- A memory written before this version: everything in it waits to be embedded. (Safe to run
-- again, as every statement here is: a memory's last migration may be re-run after a downgrade.)
INSERT OR IGNORE INTO vectors_stale (kind, row_id) SELECT 0, id FROM entities AS e
    WHERE NOT EXISTS (SELECT 1 FROM vectors AS v WHERE v.kind = 0 AND v.row_id = e.id);
INSERT OR IGNORE INTO vectors_stale (kind, row_id) SELECT 1, id FROM observations AS o
    WHERE NOT EXISTS (SELECT 1 FROM vectors AS v WHERE v.kind = 1 AND v.row_id = o.id);
