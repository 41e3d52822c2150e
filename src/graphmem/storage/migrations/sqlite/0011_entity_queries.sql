-- What query_nodes filters and sorts on, as indexed generated columns read from extra:
-- createdAt and updatedAt as instants (UTC to the millisecond, so '...T17:30:00+02:00' and
-- '...T15:30:00.000Z' compare as the same moment; anything else is NULL), and importance
-- only when it is a JSON number (0005's column also holds true and strings, which the
-- analytics never compare). entities_by_type and entities_by_thread (0003, 0005) already
-- serve the type and thread filters.
--
-- strftime() sees only text that starts with a date: given 'now' (any text may sit in an
-- imported file) it fails the whole write with "non-deterministic use of strftime() in a
-- generated column", and a bare number would be read as a Julian day.

ALTER TABLE entities ADD COLUMN created_utc TEXT
    GENERATED ALWAYS AS (CASE WHEN json_valid(extra) AND json_type(extra, '$.createdAt') = 'text'
        AND json_extract(extra, '$.createdAt') GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*'
        THEN strftime('%Y-%m-%dT%H:%M:%fZ', json_extract(extra, '$.createdAt')) END) VIRTUAL;
ALTER TABLE entities ADD COLUMN updated_utc TEXT
    GENERATED ALWAYS AS (CASE WHEN json_valid(extra) AND json_type(extra, '$.updatedAt') = 'text'
        AND json_extract(extra, '$.updatedAt') GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*'
        THEN strftime('%Y-%m-%dT%H:%M:%fZ', json_extract(extra, '$.updatedAt')) END) VIRTUAL;
ALTER TABLE entities ADD COLUMN importance_number REAL
    GENERATED ALWAYS AS (CASE WHEN json_valid(extra) AND json_type(extra, '$.importance') IN ('integer', 'real')
        THEN json_extract(extra, '$.importance') END) VIRTUAL;
CREATE INDEX entities_by_created ON entities (created_utc);
CREATE INDEX entities_by_updated_utc ON entities (updated_utc);
CREATE INDEX entities_by_importance_number ON entities (importance_number);
