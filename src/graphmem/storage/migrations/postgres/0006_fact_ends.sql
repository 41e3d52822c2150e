-- Valid time (graphmem.core.validity): when the first current fact of the memory stops holding,
-- so a call can tell in one row whether a fact has ended since and must leave the current ones.
-- The domain keeps it in the write transactions that give a fact an end; it may be early
-- (a fact since removed), never late.
ALTER TABLE graphmem_state ADD COLUMN IF NOT EXISTS next_fact_end text COLLATE "C";
