"""How the word and meaning rankings are added (`graphmem.domain.fusion.fuse`), on scores as the
stores give them: the arithmetic alone, for what the real model does see test_search_meaning.py
and test_search_while_embedding.py."""

from __future__ import annotations

import pytest

from graphmem.domain.fusion import Fusion, fuse
from graphmem.storage.vectors import NearEntity
from graphmem.storage.words import SearchHit


def _background(count: int, cosine: float) -> list[NearEntity]:
    return [NearEntity(f"other {number}", cosine) for number in range(count)]


SHIPPED = Fusion()


def _order(lexical: list[SearchHit], semantic: list[NearEntity], fusion: Fusion = SHIPPED) -> list[str]:
    return [hit.name for hit in fuse(lexical, semantic, fusion)][:3]


def test_meaning_that_cannot_tell_entities_apart_does_not_reorder_a_clear_word_match():
    # One long conversation: every excerpt is about as close to the question (0.40 to 0.44).
    # "session 2" holds the question's words; "session 7" is closer by a few hundredths only.
    words = [SearchHit("session 2", False, 10.0), SearchHit("session 7", False, 7.0)]
    near = [NearEntity("session 7", 0.44), NearEntity("session 2", 0.41), *_background(40, 0.40)]

    assert _order(words, near)[:2] == ["session 2", "session 7"]
    # Stretched to the full scale, those hundredths put session 7 first (the fusion before the floor).
    assert _order(words, near, Fusion(min_spread=0.0))[:2] == ["session 7", "session 2"]


def test_a_clear_answer_by_meaning_still_counts_in_full():
    # A paraphrase: the answer shares no word with the question and stands far above the others,
    # so it counts as much as the best word match, and comes before the weaker ones.
    words = [SearchHit("Marathon club", False, 3.0), SearchHit("Running shoes", False, 2.5)]
    near = [NearEntity("Tom Okafor", 0.62), *_background(40, 0.25)]

    assert _order(words, near) == ["Marathon club", "Tom Okafor", "Running shoes"]
    scores = {hit.name: hit.score for hit in fuse(words, near)}
    assert scores["Tom Okafor"] == pytest.approx(1.0)


@pytest.mark.parametrize("min_spread", [0.0, 0.2])
def test_a_memory_whose_entities_are_all_equally_close_ranks_by_words(min_spread: float):
    words = [SearchHit("b", False, 5.0), SearchHit("a", False, 4.0)]
    near = [NearEntity("a", 0.5), NearEntity("b", 0.5), *_background(40, 0.5)]

    assert _order(words, near, Fusion(min_spread=min_spread))[:2] == ["b", "a"]
