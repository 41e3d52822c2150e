"""The substring search reads the trigram index by a needle's rare piece, and stays exact."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

from graphmem.core.models import Entity
from graphmem.domain.search import word_search
from graphmem.storage.sqlite import SQLiteStore
from graphmem.storage.sqlite.trigrams import TrigramSamples, narrow_query

_COMMON = "the of and sastea most on".split()


def _memory(path: Path, size: int) -> SQLiteStore:
    """Facts of common words, some holding a rare one ("zqxv") at the start of a word or inside one."""
    rng = random.Random(5)
    store = SQLiteStore(path)
    with store.write():
        store.insert_entities(
            Entity(
                f"thing {index}",
                "note",
                tuple(
                    " ".join(rng.choices(_COMMON, k=6))
                    + (
                        rng.choice([" the zqxv", " zqxv the", " bathe zqxvy", " thezqxv"])
                        if rng.random() < 0.05
                        else ""
                    )
                    for _ in range(3)
                ),
            )
            for index in range(size)
        )
    return store


def test_a_needle_is_looked_up_by_its_rare_piece_not_by_its_common_words(tmp_path: Path):
    _memory(tmp_path / "memory.db", 400).close()
    conn = sqlite3.connect(tmp_path / "memory.db")

    query = narrow_query(conn, TrigramSamples(narrow_from=0), "observation_text", "sastea the zqxv")

    (candidates,) = conn.execute(
        "SELECT count(*) FROM observation_text WHERE observation_text MATCH ?", (query,)
    ).fetchone()
    (rare,) = conn.execute("SELECT count(*) FROM observations WHERE instr(content_lc, 'zqxv')").fetchone()
    assert query.strip('"') in "sastea the zqxv"
    assert "sastea" not in query
    assert candidates <= rare


def test_a_substring_search_finds_exactly_the_entities_containing_the_needle(tmp_path: Path):
    store = _memory(tmp_path / "memory.db", 400)
    store._trigram_samples = TrigramSamples(narrow_from=0)  # narrowed however small the memory
    texts = {entity.name: entity for entity in store.get_entities([f"thing {index}" for index in range(400)])}

    for needle in ["the zqxv", "e zqxv", "zqxv the", "he zqxvy", "thezqxv", "sastea the zqxv", "most on"]:
        containing = {
            name
            for name, entity in texts.items()
            if any(needle in text.lower() for text in (name, entity.entity_type, *entity.observations))
        }
        found = store.find_text(needle)
        result = store.search_entities(word_search([needle]))

        assert set(found) == containing, needle
        assert {hit.name for hit in result.hits if hit.official} == containing or result.more, needle
