-- New texts reach the trigram indexes after the write, not inside it (issue 17, item 2).
--
-- Indexing the trigrams of a 100-entity create_entities (100 names, 300 facts) was about
-- half of SQLite's work in that call at 40,000 entities. A new row is now only recorded
-- as pending, in the write's own transaction (nothing is ever lost); the store's
-- background thread moves pending rows into the trigram index moments later, in its own
-- transactions (storage/sqlite/pending.py), and every search reads the few pending rows
-- exactly with instr(), so a search right after a write finds what it wrote.
--
-- A pending row is not in its index, so FTS5 must not be asked to delete it (FTS5
-- deletes the terms it is given, from whatever rows hold them): the delete and update
-- triggers touch the index only for rows that are not pending. A pending row that
-- changes stays pending and is indexed as it then is; one deleted is simply forgotten.

CREATE TABLE IF NOT EXISTS entity_text_pending (id INTEGER PRIMARY KEY);
CREATE TABLE IF NOT EXISTS observation_text_pending (id INTEGER PRIMARY KEY);

DROP TRIGGER IF EXISTS entities_ai;
CREATE TRIGGER entities_ai AFTER INSERT ON entities BEGIN
    INSERT INTO entity_text_pending (id) VALUES (new.id);
END;
DROP TRIGGER IF EXISTS entities_ad;
CREATE TRIGGER entities_ad AFTER DELETE ON entities BEGIN
    INSERT INTO entity_text (entity_text, rowid, name_lc, type_lc) SELECT
        'delete', old.id,
        CASE WHEN instr(old.name_lc, char(0)) THEN json_quote(old.name_lc) ELSE old.name_lc END,
        CASE WHEN instr(old.type_lc, char(0)) THEN json_quote(old.type_lc) ELSE old.type_lc END
    WHERE NOT EXISTS (SELECT 1 FROM entity_text_pending WHERE id = old.id);
    DELETE FROM entity_text_pending WHERE id = old.id;
END;
DROP TRIGGER IF EXISTS entities_au;
CREATE TRIGGER entities_au AFTER UPDATE OF name_lc, type_lc ON entities
WHEN (old.name_lc IS NOT new.name_lc OR old.type_lc IS NOT new.type_lc)
    AND NOT EXISTS (SELECT 1 FROM entity_text_pending WHERE id = old.id) BEGIN
    INSERT INTO entity_text (entity_text, rowid, name_lc, type_lc) VALUES (
        'delete', old.id,
        CASE WHEN instr(old.name_lc, char(0)) THEN json_quote(old.name_lc) ELSE old.name_lc END,
        CASE WHEN instr(old.type_lc, char(0)) THEN json_quote(old.type_lc) ELSE old.type_lc END
    );
    INSERT INTO entity_text (rowid, name_lc, type_lc) VALUES (
        new.id,
        CASE WHEN instr(new.name_lc, char(0)) THEN json_quote(new.name_lc) ELSE new.name_lc END,
        CASE WHEN instr(new.type_lc, char(0)) THEN json_quote(new.type_lc) ELSE new.type_lc END
    );
END;

DROP TRIGGER IF EXISTS observations_ai;
CREATE TRIGGER observations_ai AFTER INSERT ON observations BEGIN
    INSERT INTO observation_text_pending (id) VALUES (new.id);
END;
DROP TRIGGER IF EXISTS observations_ad;
CREATE TRIGGER observations_ad AFTER DELETE ON observations BEGIN
    INSERT INTO observation_text (observation_text, rowid, content_lc) SELECT
        'delete', old.id, CASE WHEN instr(old.content_lc, char(0)) THEN json_quote(old.content_lc) ELSE old.content_lc END
    WHERE NOT EXISTS (SELECT 1 FROM observation_text_pending WHERE id = old.id);
    DELETE FROM observation_text_pending WHERE id = old.id;
END;
DROP TRIGGER IF EXISTS observations_au;
CREATE TRIGGER observations_au AFTER UPDATE ON observations
WHEN NOT EXISTS (SELECT 1 FROM observation_text_pending WHERE id = old.id) BEGIN
    INSERT INTO observation_text (observation_text, rowid, content_lc) VALUES (
        'delete', old.id, CASE WHEN instr(old.content_lc, char(0)) THEN json_quote(old.content_lc) ELSE old.content_lc END
    );
    INSERT INTO observation_text (rowid, content_lc) VALUES (
        new.id, CASE WHEN instr(new.content_lc, char(0)) THEN json_quote(new.content_lc) ELSE new.content_lc END
    );
END;
