-- Valid time (graphmem.core.validity): when the first current fact of the memory stops holding,
-- so a call can tell in one row whether a fact has ended since and must leave the current ones.
-- The domain keeps it in the write transactions that give a fact an end; it may be early
-- (a fact since removed), never late.
CREATE TABLE IF NOT EXISTS fact_ends (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    next_end TEXT  -- an instant, ISO 8601 UTC; NULL: no current fact ends
);
