"""Search by meaning: the hand-written evaluation set of issue 17 and the figures it must reach.

`fixtures/search/meaning.json` is a memory of 123 entities written the way an agent writes
one, and 146 plain-language questions, each with the entities that hold its answer, the
observations that are its evidence, and a category: `paraphrase` (no meaningful word in
common with the evidence), `synonym` (the key word is another word for it), `indirect`
(the answer sits in another entity's facts), `multi_hop` (two facts, both entities
expected) and `lexical` (shared key words: fusion must not lose these). Distractors share
words with questions and answer none. `python -m benchmarks.retrieval` prints the figures.

Recall@5 measured (python -m benchmarks.retrieval): lexical 0.54 overall (paraphrase 0.07,
synonym 0.45, indirect 0.59, multi_hop 0.77, lexical 0.99); semantic 0.89; hybrid 0.86.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from benchmarks.retrieval.evaluate import Report, evaluate, missing_meaning_search
from benchmarks.retrieval.sets import FIXTURES, load_meaning

from graphmem.domain.search import query_terms
from graphmem.storage.words import index_words, stem

MEANING: dict[str, Any] = json.loads((FIXTURES / "meaning.json").read_text(encoding="utf-8"))
QUESTIONS: list[dict[str, Any]] = MEANING["questions"]
CATEGORIES = ("paraphrase", "synonym", "indirect", "multi_hop", "lexical")


def _shared_words(question: str, texts: list[str]) -> list[str]:
    """The question's words that lexical search would find in `texts`: same stem, or a stem they start with."""
    words = {word for text in texts for word in index_words(text)}
    shared = []
    for term in query_terms(question):
        stemmed = stem(term)
        prefix = len(term) >= 3 and not term.isdigit()  # as graphmem.domain.search looks words up
        if any(word == stemmed or (prefix and word.startswith(stemmed)) for word in words):
            shared.append(term)
    return shared


def test_the_meaning_set_is_a_fair_size_and_every_answer_holds_its_evidence():
    entities = {item["name"]: item for item in MEANING["entities"]}
    assert 120 <= len(entities) <= 200
    assert len(QUESTIONS) >= 120
    assert {item["category"] for item in QUESTIONS} == set(CATEGORIES)
    for item in QUESTIONS:
        held = {observation for name in item["answers"] for observation in entities[name]["observations"]}
        assert set(item["evidence"]) <= held, item["question"]
    multi_hop = [item for item in QUESTIONS if item["category"] == "multi_hop"]
    assert all(len(item["answers"]) >= 2 for item in multi_hop)


@pytest.mark.parametrize(
    "item", [item for item in QUESTIONS if item["category"] == "paraphrase"], ids=lambda item: item["question"]
)
def test_a_paraphrase_question_shares_no_word_with_its_answer(item: dict[str, Any]):
    entities = {entity["name"]: entity for entity in MEANING["entities"]}
    names = [text for name in item["answers"] for text in [name, *entities[name].get("aliases", [])]]
    assert _shared_words(item["question"], item["evidence"] + names) == []


# -- with the embedding model ---------------------------------------------------------------

meaning_search = pytest.mark.skipif(missing_meaning_search() is not None, reason=str(missing_meaning_search()))


@pytest.fixture(scope="module")
def report() -> Report:
    return evaluate(load_meaning())


def _recall_at_5(report: Report, mode: str, category: str = "overall") -> float:
    summary = report.modes[mode].summary()
    row = summary["overall"] if category == "overall" else summary["categories"][category]
    return float(row["recall@5"])


def test_lexical_search_alone_misses_most_paraphrases():
    report = evaluate(load_meaning(), ["lexical"], embed=False)
    assert _recall_at_5(report, "lexical", "paraphrase") <= 0.25
    assert _recall_at_5(report, "lexical", "lexical") >= 0.95


# A little under the figures measured with all-MiniLM-L6-v2 and the fusion's weights (25 Nov 2026),
# recall@5: hybrid overall 0.917, paraphrase 0.794, synonym 0.939, indirect 0.941, lexical 0.987;
# semantic paraphrase 0.824 (hybrid gives up a little there for the lexical and LoCoMo questions).
HYBRID_RECALL_AT_5 = {"overall": 0.89, "paraphrase": 0.76, "synonym": 0.90, "indirect": 0.88, "lexical": 0.95}
SEMANTIC_PARAPHRASE_RECALL_AT_5 = 0.79
LEXICAL_MARGIN = 0.03
"""How far hybrid may fall below lexical on the `lexical` questions (one question in 38 is 0.026)."""


@pytest.mark.slow
@meaning_search
@pytest.mark.parametrize("category", sorted(HYBRID_RECALL_AT_5))
def test_hybrid_search_finds_answers_phrased_in_other_words(report: Report, category: str):
    assert _recall_at_5(report, "hybrid", category) >= HYBRID_RECALL_AT_5[category]


@pytest.mark.slow
@meaning_search
def test_hybrid_search_is_at_least_as_good_as_lexical_overall(report: Report):
    assert _recall_at_5(report, "hybrid") >= _recall_at_5(report, "lexical")


@pytest.mark.slow
@meaning_search
def test_fusion_does_not_pull_down_strong_word_matches(report: Report):
    assert _recall_at_5(report, "hybrid", "lexical") >= _recall_at_5(report, "lexical", "lexical") - LEXICAL_MARGIN


@pytest.mark.slow
@meaning_search
def test_semantic_search_finds_most_paraphrases(report: Report):
    assert _recall_at_5(report, "semantic", "paraphrase") >= SEMANTIC_PARAPHRASE_RECALL_AT_5
