-- Search by meaning on PostgreSQL: the queue of texts waiting for a vector, and the triggers
-- that keep it (storage/postgres/vectors.py).
--
-- The vectors themselves need the pgvector extension, which a database may not have (not
-- installed on the server, or this user may not create it). So this migration, applied to
-- every database, holds only what needs no extension; the `vectors` table, its HNSW index
-- and the extension are made by `prepare_vectors` at each start, once pgvector can be had,
-- and the queue is filled with every text then. Until `vectors` exists the triggers queue
-- nothing: a database without pgvector keeps no queue nobody would ever empty.
--
-- The triggers fill the queue in the write's own transaction, for every write path (COPY
-- included: statement triggers with transition tables see its rows), and empty it as texts
-- go. A queued text is handed out with a lease (`claimed_until`, the database's clock, so
-- servers on machines with different clocks agree): several graphmem servers on one database
-- share the work, and the lease of a server that died lapses. Deleted texts' vectors go by
-- ON DELETE CASCADE (see prepare_vectors); a changed text loses its vector and waits again.

CREATE TABLE vector_queue (
    kind          smallint NOT NULL,  -- 0: an entity's name and aliases, 1: an observation
    row_id        bigint NOT NULL,    -- entities.id or observations.id
    claimed_until timestamptz NOT NULL DEFAULT '-infinity',
    PRIMARY KEY (kind, row_id)
);

-- Which model made the vectors: another model's vectors cannot be compared with this one's.
CREATE TABLE vector_model (
    id          integer PRIMARY KEY CHECK (id = 1),
    fingerprint text NOT NULL
);

-- The aliases in an entity's extra (JSON text, written by graphmem), as JSON text: what the
-- entity's own embedded text depends on besides its name. An extra that spells U+0000 as
-- \u0000 cannot be taken apart (PostgreSQL's JSON functions refuse it): the whole extra then
-- stands for its aliases, and any change to it queues the entity again, a rare extra vector.
CREATE FUNCTION graphmem_aliases_json(extra text) RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    RETURN (extra::json -> 'aliases')::text;
EXCEPTION WHEN untranslatable_character OR invalid_text_representation THEN
    RETURN extra;
END $$;

CREATE FUNCTION graphmem_queue_new_entities() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF to_regclass('vectors') IS NOT NULL THEN
        INSERT INTO vector_queue (kind, row_id) SELECT 0, id FROM new_rows ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION graphmem_queue_new_observations() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF to_regclass('vectors') IS NOT NULL THEN
        INSERT INTO vector_queue (kind, row_id) SELECT 1, id FROM new_rows ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END $$;

-- The vectors of deleted rows go by cascade; their queue entries go here.
CREATE FUNCTION graphmem_unqueue_entities() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM vector_queue AS q USING old_rows AS o WHERE q.kind = 0 AND q.row_id = o.id;
    RETURN NULL;
END $$;

CREATE FUNCTION graphmem_unqueue_observations() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM vector_queue AS q USING old_rows AS o WHERE q.kind = 1 AND q.row_id = o.id;
    RETURN NULL;
END $$;

-- A rename or new aliases: the entity's own text changed, its vector is dropped and it waits
-- again. (Most updates touch only extra's timestamps: the trigger's WHEN lets them pass.)
CREATE FUNCTION graphmem_requeue_entity() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF to_regclass('vectors') IS NOT NULL THEN
        DELETE FROM vectors WHERE kind = 0 AND row_id = new.id;
        INSERT INTO vector_queue (kind, row_id) VALUES (0, new.id)
            ON CONFLICT (kind, row_id) DO UPDATE SET claimed_until = '-infinity';
    END IF;
    RETURN NULL;
END $$;

-- An observation whose text changed waits again; one moved to another entity (a merge) keeps
-- its vector, which now counts for the entity it moved to.
CREATE FUNCTION graphmem_requeue_observation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF to_regclass('vectors') IS NOT NULL THEN
        IF old.content IS DISTINCT FROM new.content THEN
            DELETE FROM vectors WHERE kind = 1 AND row_id = new.id;
            INSERT INTO vector_queue (kind, row_id) VALUES (1, new.id)
                ON CONFLICT (kind, row_id) DO UPDATE SET claimed_until = '-infinity';
        ELSE
            UPDATE vectors SET entity_id = new.entity_id WHERE kind = 1 AND row_id = new.id;
        END IF;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER vectors_entities_ai AFTER INSERT ON entities
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION graphmem_queue_new_entities();
CREATE TRIGGER vectors_entities_ad AFTER DELETE ON entities
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION graphmem_unqueue_entities();
CREATE TRIGGER vectors_entities_au AFTER UPDATE OF name, extra ON entities FOR EACH ROW
    WHEN (old.name IS DISTINCT FROM new.name
          OR graphmem_aliases_json(old.extra) IS DISTINCT FROM graphmem_aliases_json(new.extra))
    EXECUTE FUNCTION graphmem_requeue_entity();

CREATE TRIGGER vectors_observations_ai AFTER INSERT ON observations
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION graphmem_queue_new_observations();
CREATE TRIGGER vectors_observations_ad AFTER DELETE ON observations
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION graphmem_unqueue_observations();
CREATE TRIGGER vectors_observations_au AFTER UPDATE OF content, entity_id ON observations FOR EACH ROW
    WHEN (old.content IS DISTINCT FROM new.content OR old.entity_id IS DISTINCT FROM new.entity_id)
    EXECUTE FUNCTION graphmem_requeue_observation();
