-- The trigram indexes know each text's project, so that the substring search of one project
-- reads what the project holds rather than every project's matches (storage/sqlite/scoping.py).
--
-- A text of a project is indexed with the project's mark before it: three characters of
-- Unicode's private use area, one trigram that only that project's texts hold. A search in
-- the project adds an AND of that trigram to its FTS5 query, which FTS5 answers by
-- intersecting lists: at 1,000,000 entities a rare word in a project of 2,000 cost 20 ms
-- walked through every project and costs what it does in a memory of those 2,000 alone.
-- The shared space has no mark: a memory without projects is indexed as it always was.
--
-- FTS5 must be told the exact text it indexed to delete a row, so every trigger that removes
-- a text from an index says its mark too: an entity's from its own row, an observation's from
-- its entity's. An entity deleted with its observations still in place (ON DELETE CASCADE,
-- where the observations' trigger no longer finds the entity) removes their texts first,
-- in a BEFORE trigger. An entity that moves to another project leaves the indexes under its
-- old mark and comes back through the pending tables under the new one.

CREATE TABLE IF NOT EXISTS project_marks (
    id      INTEGER PRIMARY KEY,
    project TEXT NOT NULL UNIQUE,
    mark    TEXT NOT NULL
);

-- A mark from the project's number: three characters of U+E000-U+E7FF, 11 bits each.
INSERT OR IGNORE INTO project_marks (id, project, mark)
SELECT n, project, char(57344 + ((n >> 22) & 2047), 57344 + ((n >> 11) & 2047), 57344 + (n & 2047))
FROM (SELECT row_number() OVER (ORDER BY project) AS n, project
      FROM (SELECT DISTINCT project FROM entities WHERE project <> ''));

CREATE TRIGGER IF NOT EXISTS project_marks_ai AFTER INSERT ON entities
WHEN new.project <> '' AND NOT EXISTS (SELECT 1 FROM project_marks WHERE project = new.project) BEGIN
    INSERT INTO project_marks (id, project, mark)
    SELECT n, new.project, char(57344 + ((n >> 22) & 2047), 57344 + ((n >> 11) & 2047), 57344 + (n & 2047))
    FROM (SELECT coalesce(max(id), 0) + 1 AS n FROM project_marks);
END;
CREATE TRIGGER IF NOT EXISTS project_marks_au AFTER UPDATE OF project ON entities
WHEN new.project <> '' AND NOT EXISTS (SELECT 1 FROM project_marks WHERE project = new.project) BEGIN
    INSERT INTO project_marks (id, project, mark)
    SELECT n, new.project, char(57344 + ((n >> 22) & 2047), 57344 + ((n >> 11) & 2047), 57344 + (n & 2047))
    FROM (SELECT coalesce(max(id), 0) + 1 AS n FROM project_marks);
END;

-- The texts of projects, indexed before this without a mark, are taken out of the indexes
-- as they were indexed and left pending: the store indexes them again, marked, moments after.
INSERT INTO entity_text (entity_text, rowid, name_lc, type_lc)
SELECT 'delete', e.id,
    CASE WHEN instr(e.name_lc, char(0)) THEN json_quote(e.name_lc) ELSE e.name_lc END,
    CASE WHEN instr(e.type_lc, char(0)) THEN json_quote(e.type_lc) ELSE e.type_lc END
FROM entities AS e
WHERE e.project <> '' AND NOT EXISTS (SELECT 1 FROM entity_text_pending AS p WHERE p.id = e.id);
INSERT OR IGNORE INTO entity_text_pending (id) SELECT id FROM entities WHERE project <> '';

INSERT INTO observation_text (observation_text, rowid, content_lc)
SELECT 'delete', o.id, CASE WHEN instr(o.content_lc, char(0)) THEN json_quote(o.content_lc) ELSE o.content_lc END
FROM entities AS e JOIN observations AS o ON o.entity_id = e.id
WHERE e.project <> '' AND NOT EXISTS (SELECT 1 FROM observation_text_pending AS p WHERE p.id = o.id);
INSERT OR IGNORE INTO observation_text_pending (id)
SELECT o.id FROM entities AS e JOIN observations AS o ON o.entity_id = e.id WHERE e.project <> '';

-- Each project's own word index (storage/sqlite/project_words.py) is made when its entities'
-- documents are next rebuilt: the store rebuilds the stale ones once the migration is done.
INSERT OR IGNORE INTO entity_words_stale (entity_id) SELECT id FROM entities WHERE project <> '';

-- Migration 0015's triggers, each text with its mark.
DROP TRIGGER IF EXISTS entities_ad;
CREATE TRIGGER entities_ad AFTER DELETE ON entities BEGIN
    INSERT INTO entity_text (entity_text, rowid, name_lc, type_lc) SELECT
        'delete', old.id,
        coalesce((SELECT mark FROM project_marks WHERE project = old.project), '')
            || CASE WHEN instr(old.name_lc, char(0)) THEN json_quote(old.name_lc) ELSE old.name_lc END,
        CASE WHEN instr(old.type_lc, char(0)) THEN json_quote(old.type_lc) ELSE old.type_lc END
    WHERE NOT EXISTS (SELECT 1 FROM entity_text_pending WHERE id = old.id);
    DELETE FROM entity_text_pending WHERE id = old.id;
END;

-- A change of project is left to entities_text_project_au, which indexes the row again whole.
DROP TRIGGER IF EXISTS entities_au;
CREATE TRIGGER entities_au AFTER UPDATE OF name_lc, type_lc ON entities
WHEN (old.name_lc IS NOT new.name_lc OR old.type_lc IS NOT new.type_lc)
    AND old.project IS new.project
    AND NOT EXISTS (SELECT 1 FROM entity_text_pending WHERE id = old.id) BEGIN
    INSERT INTO entity_text (entity_text, rowid, name_lc, type_lc) VALUES (
        'delete', old.id,
        coalesce((SELECT mark FROM project_marks WHERE project = old.project), '')
            || CASE WHEN instr(old.name_lc, char(0)) THEN json_quote(old.name_lc) ELSE old.name_lc END,
        CASE WHEN instr(old.type_lc, char(0)) THEN json_quote(old.type_lc) ELSE old.type_lc END
    );
    INSERT INTO entity_text (rowid, name_lc, type_lc) VALUES (
        new.id,
        coalesce((SELECT mark FROM project_marks WHERE project = new.project), '')
            || CASE WHEN instr(new.name_lc, char(0)) THEN json_quote(new.name_lc) ELSE new.name_lc END,
        CASE WHEN instr(new.type_lc, char(0)) THEN json_quote(new.type_lc) ELSE new.type_lc END
    );
END;

CREATE TRIGGER IF NOT EXISTS entities_text_project_au AFTER UPDATE OF project ON entities
WHEN old.project IS NOT new.project BEGIN
    INSERT INTO entity_text (entity_text, rowid, name_lc, type_lc) SELECT
        'delete', old.id,
        coalesce((SELECT mark FROM project_marks WHERE project = old.project), '')
            || CASE WHEN instr(old.name_lc, char(0)) THEN json_quote(old.name_lc) ELSE old.name_lc END,
        CASE WHEN instr(old.type_lc, char(0)) THEN json_quote(old.type_lc) ELSE old.type_lc END
    WHERE NOT EXISTS (SELECT 1 FROM entity_text_pending WHERE id = old.id);
    INSERT OR IGNORE INTO entity_text_pending (id) VALUES (new.id);
    INSERT INTO observation_text (observation_text, rowid, content_lc) SELECT
        'delete', o.id,
        coalesce((SELECT mark FROM project_marks WHERE project = old.project), '')
            || CASE WHEN instr(o.content_lc, char(0)) THEN json_quote(o.content_lc) ELSE o.content_lc END
    FROM observations AS o
    WHERE o.entity_id = old.id AND NOT EXISTS (SELECT 1 FROM observation_text_pending AS p WHERE p.id = o.id);
    INSERT OR IGNORE INTO observation_text_pending (id) SELECT id FROM observations WHERE entity_id = old.id;
END;

-- Before the entity goes, while its observations can still find it: their texts leave the
-- index (and the pending table, so that their own trigger below finds nothing left to do).
CREATE TRIGGER IF NOT EXISTS entities_observation_text_bd BEFORE DELETE ON entities BEGIN
    INSERT INTO observation_text (observation_text, rowid, content_lc) SELECT
        'delete', o.id,
        coalesce((SELECT mark FROM project_marks WHERE project = old.project), '')
            || CASE WHEN instr(o.content_lc, char(0)) THEN json_quote(o.content_lc) ELSE o.content_lc END
    FROM observations AS o
    WHERE o.entity_id = old.id AND NOT EXISTS (SELECT 1 FROM observation_text_pending AS p WHERE p.id = o.id);
    INSERT OR IGNORE INTO observation_text_pending (id) SELECT id FROM observations WHERE entity_id = old.id;
END;

-- An observation whose entity is gone was taken out by the trigger above; its pending
-- record (which that trigger left to stop this one) goes with it.
DROP TRIGGER IF EXISTS observations_ad;
CREATE TRIGGER observations_ad AFTER DELETE ON observations BEGIN
    INSERT INTO observation_text (observation_text, rowid, content_lc) SELECT
        'delete', old.id,
        coalesce(
            (SELECT m.mark FROM entities AS e JOIN project_marks AS m ON m.project = e.project WHERE e.id = old.entity_id),
            ''
        ) || CASE WHEN instr(old.content_lc, char(0)) THEN json_quote(old.content_lc) ELSE old.content_lc END
    WHERE NOT EXISTS (SELECT 1 FROM observation_text_pending WHERE id = old.id);
    DELETE FROM observation_text_pending WHERE id = old.id;
END;

DROP TRIGGER IF EXISTS observations_au;
CREATE TRIGGER observations_au AFTER UPDATE ON observations
WHEN NOT EXISTS (SELECT 1 FROM observation_text_pending WHERE id = old.id) BEGIN
    INSERT INTO observation_text (observation_text, rowid, content_lc) VALUES (
        'delete', old.id,
        coalesce(
            (SELECT m.mark FROM entities AS e JOIN project_marks AS m ON m.project = e.project WHERE e.id = old.entity_id),
            ''
        ) || CASE WHEN instr(old.content_lc, char(0)) THEN json_quote(old.content_lc) ELSE old.content_lc END
    );
    INSERT INTO observation_text (rowid, content_lc) VALUES (
        new.id,
        coalesce(
            (SELECT m.mark FROM entities AS e JOIN project_marks AS m ON m.project = e.project WHERE e.id = new.entity_id),
            ''
        ) || CASE WHEN instr(new.content_lc, char(0)) THEN json_quote(new.content_lc) ELSE new.content_lc END
    );
END;
