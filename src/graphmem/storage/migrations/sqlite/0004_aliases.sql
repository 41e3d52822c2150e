-- Aliases: other names an entity answers to, kept in entities.extra as the fork format
-- keeps them ("aliases": a list of names, or a single name). This table indexes them so
-- a name that is not an entity's can be looked up as an alias without reading every
-- entity. Triggers keep it in step with entities.extra; an alias two entities share
-- (possible in an imported file) resolves to the older entity.

CREATE TABLE entity_aliases (
    alias     TEXT NOT NULL,
    entity_id INTEGER NOT NULL
);
CREATE INDEX entity_aliases_by_alias ON entity_aliases (alias, entity_id);
CREATE INDEX entity_aliases_by_entity ON entity_aliases (entity_id);

INSERT INTO entity_aliases (alias, entity_id)
SELECT a.value, e.id FROM entities AS e, json_each(e.extra, '$.aliases') AS a
WHERE e.extra IS NOT NULL AND json_valid(e.extra) AND a.type = 'text';

CREATE TRIGGER entity_aliases_ai AFTER INSERT ON entities WHEN new.extra IS NOT NULL AND json_valid(new.extra) BEGIN
    INSERT INTO entity_aliases (alias, entity_id)
    SELECT value, new.id FROM json_each(new.extra, '$.aliases') WHERE type = 'text';
END;
CREATE TRIGGER entity_aliases_au AFTER UPDATE OF extra ON entities BEGIN
    DELETE FROM entity_aliases WHERE entity_id = old.id;
    INSERT INTO entity_aliases (alias, entity_id)
    SELECT value, new.id FROM json_each(CASE WHEN json_valid(new.extra) THEN new.extra ELSE '{}' END, '$.aliases')
    WHERE type = 'text';
END;
CREATE TRIGGER entity_aliases_ad AFTER DELETE ON entities BEGIN
    DELETE FROM entity_aliases WHERE entity_id = old.id;
END;
