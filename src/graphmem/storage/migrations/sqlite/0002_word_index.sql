-- The word index for ranked search: one FTS5 document per entity (rowid = entities.id)
-- with its name, its aliases (the `aliases` list kept in `extra`), its type and all its
-- observations, ranked with bm25(). unicode61 folds case and diacritics ("Zoë" finds
-- "zoe"), porter stems English ("moved" finds "moving"), and the prefix index makes
-- three-letter prefix queries ("ber*") one look-up. The trigram tables of 0001 keep
-- answering exact substring searches, the official semantics.
--
-- One document per entity (not per observation) lets SQLite rank and cut with ORDER BY
-- bm25() LIMIT n, with no grouping: a limited search never touches more than the rows
-- its words match. The table keeps its own copy of the text, because FTS5 needs a
-- row's old text to delete it, and the old text is gone once a trigger could know it.
--
-- Triggers only record which entities changed (entity_words_stale); the store rebuilds
-- their documents once, just before its write transaction commits (SQLiteStore
-- ._refresh_word_index). Rebuilding on every observation instead would re-index an
-- entity once per observation, which is quadratic for a batch of many observations and
-- triples the time of a bulk import. A writer that bypasses graphmem leaves its changes
-- stale until graphmem's next write.

CREATE VIRTUAL TABLE entity_words USING fts5 (
    name, aliases, entity_type, observations,
    tokenize = 'porter unicode61 remove_diacritics 2', prefix = '3'
);

CREATE TABLE entity_words_stale (entity_id INTEGER PRIMARY KEY);

CREATE TRIGGER entity_words_entities_ai AFTER INSERT ON entities BEGIN
    INSERT OR IGNORE INTO entity_words_stale (entity_id) VALUES (new.id);
END;
CREATE TRIGGER entity_words_entities_au AFTER UPDATE ON entities BEGIN
    INSERT OR IGNORE INTO entity_words_stale (entity_id) VALUES (old.id), (new.id);
END;
CREATE TRIGGER entity_words_entities_ad AFTER DELETE ON entities BEGIN
    INSERT OR IGNORE INTO entity_words_stale (entity_id) VALUES (old.id);
END;
CREATE TRIGGER entity_words_observations_ai AFTER INSERT ON observations BEGIN
    INSERT OR IGNORE INTO entity_words_stale (entity_id) VALUES (new.entity_id);
END;
CREATE TRIGGER entity_words_observations_au AFTER UPDATE ON observations BEGIN
    INSERT OR IGNORE INTO entity_words_stale (entity_id) VALUES (old.entity_id), (new.entity_id);
END;
CREATE TRIGGER entity_words_observations_ad AFTER DELETE ON observations BEGIN
    INSERT OR IGNORE INTO entity_words_stale (entity_id) VALUES (old.entity_id);
END;

-- Every existing entity gets its document when the store refreshes after migrating.
INSERT INTO entity_words_stale (entity_id) SELECT id FROM entities;
