-- FTS5 merges an index's segments as writes add them: with its default (4 segments to a
-- level) one write in about twenty paid for a merge, and at 40,000 entities a single
-- create_entities took 5 ms at p95 and up to 230 ms at worst instead of 0.4 ms. Merging
-- at 8 segments a level does the same work in larger, rarer steps: p95 0.7 ms and at worst
-- 31 ms over 300 writes, with searches reading at most 8 segments a level instead of 4.
INSERT INTO entity_text (entity_text, rank) VALUES ('automerge', 8);
INSERT INTO observation_text (observation_text, rank) VALUES ('automerge', 8);
INSERT INTO entity_words (entity_words, rank) VALUES ('automerge', 8);
