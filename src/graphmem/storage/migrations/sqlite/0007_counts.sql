-- How many rows each table holds, and how many entities (relations) each type has, kept
-- by triggers. count(*) reads every row of a table's smallest index: at 1,000,000
-- entities that is 2 to 5 ms for each page of read_graph, and the type listings'
-- GROUP BY read all 3,000,000 relations (145 ms). These answer from a few rows.

CREATE TABLE row_counts (
    name  TEXT PRIMARY KEY,  -- 'entities', 'relations' or 'observations'
    count INTEGER NOT NULL
) WITHOUT ROWID;

INSERT INTO row_counts (name, count) VALUES
    ('entities', (SELECT count(*) FROM entities)),
    ('relations', (SELECT count(*) FROM relations)),
    ('observations', (SELECT count(*) FROM observations));

CREATE TABLE entity_type_counts (
    entity_type TEXT PRIMARY KEY,
    count       INTEGER NOT NULL
) WITHOUT ROWID;

INSERT INTO entity_type_counts (entity_type, count) SELECT entity_type, count(*) FROM entities GROUP BY entity_type;

CREATE TABLE relation_type_counts (
    relation_type TEXT PRIMARY KEY,
    count         INTEGER NOT NULL
) WITHOUT ROWID;

INSERT INTO relation_type_counts (relation_type, count)
SELECT relation_type, count(*) FROM relations GROUP BY relation_type;

-- One trigger per effect, so a bulk insert can suspend each and catch it up in one statement.
CREATE TRIGGER entities_count_ai AFTER INSERT ON entities BEGIN
    UPDATE row_counts SET count = count + 1 WHERE name = 'entities';
END;
CREATE TRIGGER entities_count_ad AFTER DELETE ON entities BEGIN
    UPDATE row_counts SET count = count - 1 WHERE name = 'entities';
END;
CREATE TRIGGER observations_count_ai AFTER INSERT ON observations BEGIN
    UPDATE row_counts SET count = count + 1 WHERE name = 'observations';
END;
CREATE TRIGGER observations_count_ad AFTER DELETE ON observations BEGIN
    UPDATE row_counts SET count = count - 1 WHERE name = 'observations';
END;
CREATE TRIGGER relations_count_ai AFTER INSERT ON relations BEGIN
    UPDATE row_counts SET count = count + 1 WHERE name = 'relations';
END;
CREATE TRIGGER relations_count_ad AFTER DELETE ON relations BEGIN
    UPDATE row_counts SET count = count - 1 WHERE name = 'relations';
END;

CREATE TRIGGER entity_type_counts_ai AFTER INSERT ON entities BEGIN
    INSERT INTO entity_type_counts (entity_type, count) VALUES (new.entity_type, 1)
        ON CONFLICT (entity_type) DO UPDATE SET count = count + 1;
END;
CREATE TRIGGER entity_type_counts_ad AFTER DELETE ON entities BEGIN
    UPDATE entity_type_counts SET count = count - 1 WHERE entity_type = old.entity_type;
    DELETE FROM entity_type_counts WHERE entity_type = old.entity_type AND count <= 0;
END;
CREATE TRIGGER entity_type_counts_au AFTER UPDATE OF entity_type ON entities BEGIN
    UPDATE entity_type_counts SET count = count - 1 WHERE entity_type = old.entity_type;
    DELETE FROM entity_type_counts WHERE entity_type = old.entity_type AND count <= 0;
    INSERT INTO entity_type_counts (entity_type, count) VALUES (new.entity_type, 1)
        ON CONFLICT (entity_type) DO UPDATE SET count = count + 1;
END;

CREATE TRIGGER relation_type_counts_ai AFTER INSERT ON relations BEGIN
    INSERT INTO relation_type_counts (relation_type, count) VALUES (new.relation_type, 1)
        ON CONFLICT (relation_type) DO UPDATE SET count = count + 1;
END;
CREATE TRIGGER relation_type_counts_ad AFTER DELETE ON relations BEGIN
    UPDATE relation_type_counts SET count = count - 1 WHERE relation_type = old.relation_type;
    DELETE FROM relation_type_counts WHERE relation_type = old.relation_type AND count <= 0;
END;
CREATE TRIGGER relation_type_counts_au AFTER UPDATE OF relation_type ON relations BEGIN
    UPDATE relation_type_counts SET count = count - 1 WHERE relation_type = old.relation_type;
    DELETE FROM relation_type_counts WHERE relation_type = old.relation_type AND count <= 0;
    INSERT INTO relation_type_counts (relation_type, count) VALUES (new.relation_type, 1)
        ON CONFLICT (relation_type) DO UPDATE SET count = count + 1;
END;
