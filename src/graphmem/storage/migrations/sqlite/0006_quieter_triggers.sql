-- Observation records and spec 002's metadata rewrite an entity's extra on every change.
-- The trigram index of names and types needs updating only when those change.

DROP TRIGGER entities_au;
CREATE TRIGGER entities_au AFTER UPDATE OF name_lc, type_lc ON entities BEGIN
    INSERT INTO entity_text (entity_text, rowid, name_lc, type_lc) VALUES ('delete', old.id, old.name_lc, old.type_lc);
    INSERT INTO entity_text (rowid, name_lc, type_lc) VALUES (new.id, new.name_lc, new.type_lc);
END;
