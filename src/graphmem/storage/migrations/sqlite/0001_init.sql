-- The knowledge graph. Entities and observations keep their insertion order through
-- their integer ids; relations refer to entity names (not ids) because the official
-- server accepts relations whose endpoints do not exist.
--
-- The *_lc columns hold Python's str.lower() of the text, which matches JavaScript's
-- toLowerCase() that the official substring search uses; SQLite's own lower() only
-- folds ASCII. The trigram FTS5 tables index them so a substring search is an index
-- look-up instead of a scan.

CREATE TABLE entities (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    entity_type TEXT NOT NULL,
    name_lc     TEXT NOT NULL,
    type_lc     TEXT NOT NULL,
    extra       TEXT  -- JSON object of keys from other formats (aliases, createdAt, ...), or NULL
);

CREATE TABLE observations (
    id         INTEGER PRIMARY KEY,
    entity_id  INTEGER NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    content    TEXT NOT NULL,
    content_lc TEXT NOT NULL
);
CREATE INDEX observations_by_entity ON observations (entity_id, id);

CREATE TABLE relations (
    id            INTEGER PRIMARY KEY,
    from_name     TEXT NOT NULL,
    to_name       TEXT NOT NULL,
    relation_type TEXT NOT NULL,
    extra         TEXT,  -- as entities.extra
    UNIQUE (from_name, to_name, relation_type)
);
CREATE INDEX relations_by_target ON relations (to_name);

CREATE VIRTUAL TABLE entity_text USING fts5 (
    name_lc, type_lc, content = 'entities', content_rowid = 'id', tokenize = 'trigram case_sensitive 1'
);
CREATE TRIGGER entities_ai AFTER INSERT ON entities BEGIN
    INSERT INTO entity_text (rowid, name_lc, type_lc) VALUES (new.id, new.name_lc, new.type_lc);
END;
CREATE TRIGGER entities_ad AFTER DELETE ON entities BEGIN
    INSERT INTO entity_text (entity_text, rowid, name_lc, type_lc) VALUES ('delete', old.id, old.name_lc, old.type_lc);
END;
CREATE TRIGGER entities_au AFTER UPDATE ON entities BEGIN
    INSERT INTO entity_text (entity_text, rowid, name_lc, type_lc) VALUES ('delete', old.id, old.name_lc, old.type_lc);
    INSERT INTO entity_text (rowid, name_lc, type_lc) VALUES (new.id, new.name_lc, new.type_lc);
END;

CREATE VIRTUAL TABLE observation_text USING fts5 (
    content_lc, content = 'observations', content_rowid = 'id', tokenize = 'trigram case_sensitive 1'
);
CREATE TRIGGER observations_ai AFTER INSERT ON observations BEGIN
    INSERT INTO observation_text (rowid, content_lc) VALUES (new.id, new.content_lc);
END;
CREATE TRIGGER observations_ad AFTER DELETE ON observations BEGIN
    INSERT INTO observation_text (observation_text, rowid, content_lc) VALUES ('delete', old.id, old.content_lc);
END;
CREATE TRIGGER observations_au AFTER UPDATE ON observations BEGIN
    INSERT INTO observation_text (observation_text, rowid, content_lc) VALUES ('delete', old.id, old.content_lc);
    INSERT INTO observation_text (rowid, content_lc) VALUES (new.id, new.content_lc);
END;
