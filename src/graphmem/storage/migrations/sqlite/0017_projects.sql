-- Projects (graphmem.core.projects): every entity and relation belongs to a project, or to
-- the shared space (project ''). The tables themselves are made anew before this script
-- (storage/sqlite/projects_schema.py), since SQLite cannot change a UNIQUE constraint: a name
-- is unique within its project, a relation within its project.
--
-- A project's entities in creation order (a page of one project, its counts), and its relations.
CREATE INDEX IF NOT EXISTS entities_by_project ON entities (project);
CREATE INDEX IF NOT EXISTS relations_by_project ON relations (project);
-- The vectors of a project's entities, for a search by meaning in a small project of a large memory.
CREATE INDEX IF NOT EXISTS vectors_by_entity ON vectors (entity_id);

-- The word index holds each entity's project as one word in a fifth column
-- (storage/sqlite/scoping.py: project_token), so that a search in a project is one more AND
-- inside FTS5 rather than a filter after it; it weighs 0 in bm25(). Every document is made
-- again when the store refreshes the index after migrating.
DROP TABLE IF EXISTS entity_words;
CREATE VIRTUAL TABLE entity_words USING fts5 (
    name, aliases, entity_type, observations, project,
    tokenize = 'porter unicode61 remove_diacritics 2', prefix = '3'
);
-- As 0014 left the old one: merged in the background, eight segments to a level.
INSERT INTO entity_words (entity_words, rank) VALUES ('automerge', 0);
INSERT INTO entity_words (entity_words, rank) VALUES ('usermerge', 8);
DELETE FROM entity_words_stale;
INSERT INTO entity_words_stale (entity_id) SELECT id FROM entities;
