"""The offline fusion tuner (benchmarks/retrieval/tune.py) measures the fusion search_nodes ships.

Its table is only worth reading if its `shipped` row is what `python -m benchmarks.retrieval`
measures through `search_nodes`: same word ranking, same fusion, same model (float32 cosines
where the store keeps int8 vectors, hence a tolerance of one question in a hundred).
"""

from __future__ import annotations

import numpy as np
import pytest
from benchmarks.retrieval.evaluate import evaluate, missing_meaning_search
from benchmarks.retrieval.sets import load_meaning
from benchmarks.retrieval.tune import VARIANTS, Case, Features, Meaning, Score, build_features, pick, score_variant

from graphmem.storage.vectors import ENTITY_TEXT, OBSERVATION_TEXT

needs_meaning = pytest.mark.skipif(missing_meaning_search() is not None, reason=str(missing_meaning_search()))


@needs_meaning
def test_the_tuners_shipped_row_is_the_recall_search_nodes_gets_on_the_meaning_set():
    meaning = load_meaning()
    offline = score_variant(VARIANTS["shipped"], build_features(meaning, through_tools=False))
    served = evaluate(meaning, ["hybrid"]).modes["hybrid"].summary()["overall"]
    assert offline.recall_5 == pytest.approx(served["recall@5"], abs=0.01)
    assert offline.recall_10 == pytest.approx(served["recall@10"], abs=0.01)


@needs_meaning
def test_the_tuners_word_row_is_the_recall_of_lexical_search_on_the_meaning_set():
    meaning = load_meaning()
    offline = score_variant(VARIANTS["words only"], build_features(meaning, through_tools=False))
    served = evaluate(meaning, ["lexical"], embed=False).modes["lexical"].summary()["overall"]["recall@5"]
    assert offline.recall_5 == pytest.approx(served, abs=1e-9)


def _case(types: list[str], cosines: list[float], context: list[float] | None = None) -> Case:
    # Two entities: "a" with its name text and two observations, "b" with its name text and one.
    features = Features(
        names=["a", "b"],
        types=types,
        owner=np.array([0, 0, 0, 1, 1]),
        kinds=np.array([ENTITY_TEXT, OBSERVATION_TEXT, OBSERVATION_TEXT, ENTITY_TEXT, OBSERVATION_TEXT]),
        texts=["a", "a1", "a2", "b", "b1"],
        text_vectors=np.zeros((5, 2)),
        context_vectors=np.zeros((5, 2)),
        question_vectors=np.zeros((1, 2)),
        questions=[("q", ("a",), "c")],
        words=[[]],
    )
    own = np.array(cosines)
    return Case(features, 0, [], own, own if context is None else np.array(context))


def test_an_entity_means_its_best_text_or_the_mean_of_its_best_two():
    case = _case(["t", "t"], [0.1, 0.6, 0.4, 0.55, 0.2])
    assert [(n.name, round(n.score, 3)) for n in Meaning().near(case)] == [("a", 0.6), ("b", 0.55)]
    assert [(n.name, round(n.score, 3)) for n in Meaning(best=2).near(case)] == [("a", 0.5), ("b", 0.375)]


def test_context_cosines_count_only_where_they_are_closer():
    case = _case(["t", "t"], [0.1, 0.3, 0.4, 0.2, 0.2], context=[0.1, 0.3, 0.2, 0.2, 0.7])
    assert [(n.name, round(n.score, 3)) for n in Meaning(context=True).near(case)] == [("b", 0.7), ("a", 0.4)]


def test_an_excerpts_name_text_can_be_left_out_of_its_meaning():
    case = _case(["conversation excerpt", "person"], [0.9, 0.3, 0.4, 0.8, 0.2])
    assert [(n.name, round(n.score, 3)) for n in Meaning(names="no excerpts").near(case)] == [("b", 0.8), ("a", 0.4)]
    assert [(n.name, round(n.score, 3)) for n in Meaning(names="none").near(case)] == [("a", 0.4), ("b", 0.2)]


def test_the_winner_is_the_best_first_half_that_keeps_the_hand_written_sets():
    def score(first: float, meaning: float) -> dict[str, Score]:
        return {s: Score(v, v, {}) for s, v in {"first": first, "second": 0, "meaning": meaning, "quality": 1}.items()}

    scores = {
        "words only": score(0.9, 0.5),
        "shipped": score(0.7, 0.917),
        "lower meaning": score(0.85, 0.9),
        "simple": score(0.8, 0.913),
        "complex": score(0.8004, 0.92),
    }
    assert pick(scores) == "simple"
