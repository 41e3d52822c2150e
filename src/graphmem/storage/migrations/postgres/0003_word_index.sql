-- Ranked search from an inverted index: which entities hold each index word.
--
-- 0001 found the entities holding a word with LIKE on each entity's `words` blob through a
-- pg_trgm index: counting a common word ("entiti" in every `entity-N` name) rechecked every
-- entity, 20 to 70 ms at 40,000 entities, several times a search. Here each entity's
-- distinct index words (storage/words.py: tokenized, stemmed) are rows of their own, written
-- by graphmem with the entity's word document (storage/postgres/writes.py). A btree on the
-- word finds the entities of a word, or of every word starting with a prefix (a range: the
-- words are COLLATE "C", code-point order), and counts them, from the index alone.
--
-- Words are indexed by their first 256 characters: a btree entry holds at most 2,704 bytes,
-- and a "word" of a few thousand letters is possible. A longer word is compared whole too.

CREATE TABLE entity_words (
    word      text COLLATE "C" NOT NULL,
    entity_id bigint NOT NULL REFERENCES entities (id) ON DELETE CASCADE
);
-- Built after the rows are in (faster than row by row), from the documents 0001 kept.
INSERT INTO entity_words (word, entity_id)
    SELECT DISTINCT w.word, e.id FROM entities AS e, unnest(string_to_array(e.words, ' ')) AS w (word)
    WHERE w.word <> '';
CREATE INDEX entity_words_by_word ON entity_words ((left(word, 256)), entity_id);
-- Whether one entity holds a word (or a prefix): the newest entities holding a query's words
-- are walked and each is looked up here. Also what a cascading delete needs.
CREATE INDEX entity_words_by_entity ON entity_words (entity_id, (left(word, 256)));

-- The blob's trigram index served only the search this table replaces; every write paid for it.
DROP INDEX entities_words_trgm;
ANALYZE entity_words;
