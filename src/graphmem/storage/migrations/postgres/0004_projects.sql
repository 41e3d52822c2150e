-- Projects (graphmem.core.projects): every entity and relation belongs to a project, or to the
-- shared space (project ''), where every row written before this migration stays. The key is
-- stored escaped, as every text is (0001), and compared in code-point order.
--
-- Safe to run again (every statement is IF [NOT] EXISTS): a test takes a memory back to an
-- older version by deleting its graphmem_schema rows, and the scripts after it run once more.
--
-- ADD COLUMN with a constant default rewrites nothing (PostgreSQL 11 and later): the rows
-- read the default from the catalog until they are next written.
ALTER TABLE entities ADD COLUMN IF NOT EXISTS project text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE relations ADD COLUMN IF NOT EXISTS project text COLLATE "C" NOT NULL DEFAULT '';

-- A name is unique within its project, a relation's key within its project. Kept on md5 of
-- the names, as before (a name may be longer than a btree entry holds). The project comes
-- last, as in SQLite's; look-ups by name or by endpoint go through the hash indexes of 0001
-- whatever the scope, and these only refuse a second row.
CREATE UNIQUE INDEX IF NOT EXISTS entities_name_in_project_key ON entities (md5(name), project);
DROP INDEX IF EXISTS entities_name_key;
CREATE UNIQUE INDEX IF NOT EXISTS relations_key_in_project
    ON relations (md5(from_name), md5(to_name), md5(relation_type), project);
DROP INDEX IF EXISTS relations_key;

-- A project's entities and relations in creation order: a scoped page, count or search starts
-- from the few rows of a small project instead of reading every project's. (A project's vectors
-- are found through these and `vectors_by_entity`, made with the vectors table.)
CREATE INDEX IF NOT EXISTS entities_by_project ON entities (project, id);
CREATE INDEX IF NOT EXISTS relations_by_project ON relations (project, id);

-- The planner's statistics for the new column now, not at autovacuum's next visit: without
-- them it cannot tell that a small project's rows are few.
ANALYZE entities, relations;
