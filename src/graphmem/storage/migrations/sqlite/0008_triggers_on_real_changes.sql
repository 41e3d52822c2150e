-- Every write to an entity's facts rewrites its row (its extra holds the observation records
-- and metadata) with the same name and type, and an UPDATE OF trigger fires whenever its
-- columns are set, changed or not: the trigram index of the name and type was rewritten,
-- and the alias index too, on every add_observations. These fire only on a real change.

DROP TRIGGER entities_au;
CREATE TRIGGER entities_au AFTER UPDATE OF name_lc, type_lc ON entities
WHEN old.name_lc IS NOT new.name_lc OR old.type_lc IS NOT new.type_lc BEGIN
    INSERT INTO entity_text (entity_text, rowid, name_lc, type_lc) VALUES ('delete', old.id, old.name_lc, old.type_lc);
    INSERT INTO entity_text (rowid, name_lc, type_lc) VALUES (new.id, new.name_lc, new.type_lc);
END;

DROP TRIGGER entity_aliases_au;
CREATE TRIGGER entity_aliases_au AFTER UPDATE OF extra ON entities
WHEN (CASE WHEN json_valid(old.extra) THEN json_extract(old.extra, '$.aliases') END)
    IS NOT (CASE WHEN json_valid(new.extra) THEN json_extract(new.extra, '$.aliases') END) BEGIN
    DELETE FROM entity_aliases WHERE entity_id = old.id;
    INSERT INTO entity_aliases (alias, entity_id)
    SELECT value, new.id FROM json_each(CASE WHEN json_valid(new.extra) THEN new.extra ELSE '{}' END, '$.aliases')
    WHERE type = 'text';
END;

DROP TRIGGER entity_type_counts_au;
CREATE TRIGGER entity_type_counts_au AFTER UPDATE OF entity_type ON entities
WHEN old.entity_type IS NOT new.entity_type BEGIN
    UPDATE entity_type_counts SET count = count - 1 WHERE entity_type = old.entity_type;
    DELETE FROM entity_type_counts WHERE entity_type = old.entity_type AND count <= 0;
    INSERT INTO entity_type_counts (entity_type, count) VALUES (new.entity_type, 1)
        ON CONFLICT (entity_type) DO UPDATE SET count = count + 1;
END;
