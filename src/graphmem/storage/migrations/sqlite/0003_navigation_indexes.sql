-- Indexes for the navigation tools: counting entities per type and relations per type,
-- and finding relations by type, read an index instead of scanning the tables.
-- Relations by source are already indexed by the UNIQUE (from_name, ...) constraint.

CREATE INDEX entities_by_type ON entities (entity_type);
CREATE INDEX relations_by_type ON relations (relation_type);
