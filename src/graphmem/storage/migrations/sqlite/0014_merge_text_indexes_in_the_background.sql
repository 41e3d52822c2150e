-- FTS5 merged each text index's segments inside the writes that added them (automerge 8,
-- migration 0009): at 40,000 entities that merging was about two thirds of the work of a
-- 100-entity create_entities, counted over many calls (callgrind: 158 million
-- instructions a call with it, 48 million without), and the calls that paid for it wrote
-- ten times the pages of the others. The store's background thread now does it between
-- writes (checkpoints.merge_text_indexes, the 'merge' command, at eight segments to a
-- level as before); a call only writes its own new segment. If no thread ever gets to it
-- (a flood of writes), FTS5's crisis merge at 16 segments to a level still bounds them.
INSERT INTO entity_text (entity_text, rank) VALUES ('automerge', 0);
INSERT INTO observation_text (observation_text, rank) VALUES ('automerge', 0);
INSERT INTO entity_words (entity_words, rank) VALUES ('automerge', 0);
INSERT INTO entity_text (entity_text, rank) VALUES ('usermerge', 8);
INSERT INTO observation_text (observation_text, rank) VALUES ('usermerge', 8);
INSERT INTO entity_words (entity_words, rank) VALUES ('usermerge', 8);

-- A new entity's alias rows: the trigger read every new entity's extra (the observation
-- records included) three times over with replace() and once more with json_each, 7% of a
-- 100-entity create_entities (callgrind), although few entities have aliases. It now runs
-- only for an extra that holds an `aliases` key; the body is 0012's.
DROP TRIGGER entity_aliases_ai;
CREATE TRIGGER entity_aliases_ai AFTER INSERT ON entities
WHEN new.extra IS NOT NULL AND json_valid(new.extra) AND json_type(new.extra, '$.aliases') IS NOT NULL BEGIN
    INSERT INTO entity_aliases (alias, entity_id)
    SELECT replace(replace(value, char(1, 3), char(0)), char(1, 2), char(1)), new.id
    FROM json_each(
        replace(replace(replace(new.extra, '\\', '\u005c'), '\u0001', '\u0001\u0002'), '\u0000', '\u0001\u0003'),
        '$.aliases'
    ) WHERE type = 'text';
END;
