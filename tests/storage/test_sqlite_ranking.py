"""Pruned ranking over the SQLite word index gives exactly what FTS5's own ranking gives."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from graphmem.core.models import Entity
from graphmem.domain.search import word_search
from graphmem.storage.sqlite import SQLiteStore
from graphmem.storage.sqlite import ranking as sqlite_ranking
from graphmem.storage.words import WordDocument

_VOCABULARY = "berlin paris tea coffee project release moved moving works zoë café acme".split()


def _memory(path: Path, size: int) -> SQLiteStore:
    rng = random.Random(3)
    store = SQLiteStore(path)
    with store.write():
        store.insert_entities(
            Entity(
                f"thing-{index}" if index % 7 else f"Berlin office {index}",
                rng.choice(["person", "place", "project"]),
                tuple(
                    " ".join(rng.choices(_VOCABULARY, k=4)) + f" #{index} tag{index % 60}"
                    for _ in range(rng.randint(0, 3))
                ),
                {"aliases": [f"alias {index % 50}"]} if index % 11 == 0 else None,
            )
            for index in range(size)
        )
    store.index_pending_texts()  # the tests read the indexes themselves
    return store


def test_pruned_ranking_answers_exactly_what_fts5_ranking_answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    store = _memory(tmp_path / "memory.db", 1500)
    pruned = []
    best_matches = sqlite_ranking.best_matches

    def counting(*args: object, **options: object) -> object:
        found = best_matches(*args, **options)  # type: ignore[arg-type]
        if sqlite_ranking.MIN_MATCHES == 0:
            pruned.append(found is not None)
        return found

    monkeypatch.setattr(sqlite_ranking, "best_matches", counting)
    by_word_sets = []
    best_by_word_sets = sqlite_ranking._best_by_word_sets

    def counting_sets(*args: object, **options: object) -> object:
        found = best_by_word_sets(*args, **options)  # type: ignore[arg-type]
        by_word_sets.append(found is not None)
        return found

    monkeypatch.setattr(sqlite_ranking, "_best_by_word_sets", counting_sets)
    rng = random.Random(8)
    for _ in range(300):
        # Common words, and a rare one: an entity's number (fewer entities than most
        # limits), or a tag some 25 entities share; or common words only.
        rare = rng.choice([str(rng.randrange(1500)), f"tag{rng.randrange(60)}", None])
        words = [*rng.sample(_VOCABULARY, rng.randint(1, 4)), *([rare] if rare else [])]
        plan = word_search(
            [" ".join(rng.sample(words, len(words)))],
            limit=rng.choice([None, 1, 5, 10, 10, 40]),
            offset=rng.choice([0, 0, 2]),
            entity_type=rng.choice([None, None, "person"]),
        )
        answers = []
        for least in (0, 10**12):  # always prune, never prune
            monkeypatch.setattr(sqlite_ranking, "MIN_MATCHES", least)
            with store.read():
                answers.append(store.search_entities(plan).hits)
        assert answers[0] == answers[1], plan
    # A good share were answered by pruning, not by falling back to FTS5's ranking.
    assert sum(pruned) > len(pruned) / 4
    # Many of those found their rare words' entities too few and let FTS5 score word sets.
    assert sum(by_word_sets) > 20
    store.close()


def test_the_index_size_is_the_row_and_word_count_fts5_ranks_with(tmp_path: Path):
    store = _memory(tmp_path / "memory.db", 300)
    conn = store._conn
    rows, words = sqlite_ranking.index_size(conn, "entity_words")
    documents = conn.execute("SELECT name, aliases, entity_type, observations FROM entity_words").fetchall()
    assert rows == len(documents) == 300
    assert words == sum(WordDocument(name, [a], t, [o]).length for name, a, t, o in documents)
    store.close()


def test_varints_are_read_as_sqlite_writes_them():
    assert sqlite_ranking._varints(b"") == []
    assert sqlite_ranking._varints(b"\x00\x7f\x81\x00\x82\xb8\x40") == [0, 127, 128, 40_000]
    assert sqlite_ranking._varints(b"\xff" * 8 + b"\x01") == [(2**56 - 1) << 8 | 1]


def test_remembered_term_counts_follow_writes_of_this_store_and_of_another(tmp_path: Path):
    path = tmp_path / "memory.db"
    store = SQLiteStore(path)
    with store.write():
        store.insert_entities([Entity("Alice", "person", ("drinks tea",)), Entity("Bob", "person", ("likes tea",))])
        store.insert_entities([Entity(f"filler {i}", "thing") for i in range(4)])

    def names(query: str) -> list[str]:
        with store.read():
            return [hit.name for hit in store.search_entities(word_search([query], limit=10)).hits]

    # "tea" is in 2 of 6 entities: it ranks.
    assert names("bob tea?") == ["Bob", "Alice"]
    with store.write():
        store.insert_entities([Entity(f"tea fan {i}", "person", ("tea",)) for i in range(10)])
    # Now in 12 of 16: too common to rank when a rarer word is asked.
    assert names("bob tea?") == ["Bob"]
    other = SQLiteStore(path)
    with other.write():
        other.delete_entities([f"tea fan {i}" for i in range(10)])
    other.close()
    assert names("bob tea?") == ["Bob", "Alice"]
    store.close()
