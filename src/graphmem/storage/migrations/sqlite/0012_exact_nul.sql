-- Texts holding U+0000 (NUL), kept exact everywhere (see storage/sqlite/text.py).
--
-- SQLite's trigram tokenizer stops at a NUL: "nul\0name" was indexed as "nul", and a search
-- for "name" missed it. The trigram indexes now hold a text with a NUL as its JSON string
-- (json_quote spells NUL "\u0000"), and a search looks for the needle spelled both ways
-- (text.trigram_query); instr() on the exact *_lc columns keeps the answer exact.
-- replace() cannot do this: it takes a pattern starting with NUL for an empty one.
-- The expression is text.TRIGRAM_FORM, which the bulk import repeats.
--
-- json_each() ends a string at "\u0000": an alias "al\0ias" was indexed as "al", and
-- resolving "al\0ias" failed. The alias triggers now read extra in text.py's escaped
-- code (text.escaped_json), which replace() undoes on each alias (text.exact).

DROP TRIGGER entities_ai;
CREATE TRIGGER entities_ai AFTER INSERT ON entities BEGIN
    INSERT INTO entity_text (rowid, name_lc, type_lc) VALUES (
        new.id,
        CASE WHEN instr(new.name_lc, char(0)) THEN json_quote(new.name_lc) ELSE new.name_lc END,
        CASE WHEN instr(new.type_lc, char(0)) THEN json_quote(new.type_lc) ELSE new.type_lc END
    );
END;
DROP TRIGGER entities_ad;
CREATE TRIGGER entities_ad AFTER DELETE ON entities BEGIN
    INSERT INTO entity_text (entity_text, rowid, name_lc, type_lc) VALUES (
        'delete', old.id,
        CASE WHEN instr(old.name_lc, char(0)) THEN json_quote(old.name_lc) ELSE old.name_lc END,
        CASE WHEN instr(old.type_lc, char(0)) THEN json_quote(old.type_lc) ELSE old.type_lc END
    );
END;
DROP TRIGGER entities_au;
CREATE TRIGGER entities_au AFTER UPDATE OF name_lc, type_lc ON entities
WHEN old.name_lc IS NOT new.name_lc OR old.type_lc IS NOT new.type_lc BEGIN
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

DROP TRIGGER observations_ai;
CREATE TRIGGER observations_ai AFTER INSERT ON observations BEGIN
    INSERT INTO observation_text (rowid, content_lc) VALUES (
        new.id, CASE WHEN instr(new.content_lc, char(0)) THEN json_quote(new.content_lc) ELSE new.content_lc END
    );
END;
DROP TRIGGER observations_ad;
CREATE TRIGGER observations_ad AFTER DELETE ON observations BEGIN
    INSERT INTO observation_text (observation_text, rowid, content_lc) VALUES (
        'delete', old.id, CASE WHEN instr(old.content_lc, char(0)) THEN json_quote(old.content_lc) ELSE old.content_lc END
    );
END;
DROP TRIGGER observations_au;
CREATE TRIGGER observations_au AFTER UPDATE ON observations BEGIN
    INSERT INTO observation_text (observation_text, rowid, content_lc) VALUES (
        'delete', old.id, CASE WHEN instr(old.content_lc, char(0)) THEN json_quote(old.content_lc) ELSE old.content_lc END
    );
    INSERT INTO observation_text (rowid, content_lc) VALUES (
        new.id, CASE WHEN instr(new.content_lc, char(0)) THEN json_quote(new.content_lc) ELSE new.content_lc END
    );
END;

-- Rows indexed before: a 'delete' with the text as it was indexed (cut at the NUL, as
-- then), and the row again as the triggers now index it. Rows without NUL are unchanged.
INSERT INTO entity_text (entity_text, rowid, name_lc, type_lc)
SELECT 'delete', id, name_lc, type_lc FROM entities WHERE instr(name_lc, char(0)) OR instr(type_lc, char(0));
INSERT INTO entity_text (rowid, name_lc, type_lc)
SELECT id, CASE WHEN instr(name_lc, char(0)) THEN json_quote(name_lc) ELSE name_lc END, CASE WHEN instr(type_lc, char(0)) THEN json_quote(type_lc) ELSE type_lc END
FROM entities WHERE instr(name_lc, char(0)) OR instr(type_lc, char(0));
INSERT INTO observation_text (observation_text, rowid, content_lc)
SELECT 'delete', id, content_lc FROM observations WHERE instr(content_lc, char(0));
INSERT INTO observation_text (rowid, content_lc)
SELECT id, json_quote(content_lc) FROM observations WHERE instr(content_lc, char(0));

-- Aliases: extra as text.escaped_json() rewrites it, each alias as exact() undoes it.
DROP TRIGGER entity_aliases_ai;
CREATE TRIGGER entity_aliases_ai AFTER INSERT ON entities WHEN new.extra IS NOT NULL AND json_valid(new.extra) BEGIN
    INSERT INTO entity_aliases (alias, entity_id)
    SELECT replace(replace(value, char(1, 3), char(0)), char(1, 2), char(1)), new.id
    FROM json_each(
        replace(replace(replace(new.extra, '\\', '\u005c'), '\u0001', '\u0001\u0002'), '\u0000', '\u0001\u0003'),
        '$.aliases'
    ) WHERE type = 'text';
END;
DROP TRIGGER entity_aliases_au;
CREATE TRIGGER entity_aliases_au AFTER UPDATE OF extra ON entities
WHEN (CASE WHEN json_valid(old.extra) THEN json_extract(old.extra, '$.aliases') END)
    IS NOT (CASE WHEN json_valid(new.extra) THEN json_extract(new.extra, '$.aliases') END) BEGIN
    DELETE FROM entity_aliases WHERE entity_id = old.id;
    INSERT INTO entity_aliases (alias, entity_id)
    SELECT replace(replace(value, char(1, 3), char(0)), char(1, 2), char(1)), new.id
    FROM json_each(
        CASE WHEN json_valid(new.extra) THEN
            replace(replace(replace(new.extra, '\\', '\u005c'), '\u0001', '\u0001\u0002'), '\u0000', '\u0001\u0003')
        ELSE '{}' END,
        '$.aliases'
    ) WHERE type = 'text';
END;

-- The aliases cut at a NUL before, read again; and their entities' word documents rebuilt.
DELETE FROM entity_aliases WHERE entity_id IN (
    SELECT id FROM entities WHERE instr(extra, '\u0000') OR instr(extra, '\u0001')
);
INSERT INTO entity_aliases (alias, entity_id)
SELECT replace(replace(a.value, char(1, 3), char(0)), char(1, 2), char(1)), e.id
FROM entities AS e, json_each(
    replace(replace(replace(e.extra, '\\', '\u005c'), '\u0001', '\u0001\u0002'), '\u0000', '\u0001\u0003'),
    '$.aliases'
) AS a
WHERE (instr(e.extra, '\u0000') OR instr(e.extra, '\u0001')) AND json_valid(e.extra) AND a.type = 'text';
INSERT OR IGNORE INTO entity_words_stale (entity_id)
SELECT id FROM entities WHERE instr(extra, '\u0000') OR instr(extra, '\u0001');
