"""The offline fusion tuner (benchmarks/retrieval/tune.py) measures the fusion search_nodes ships.

Its table is only worth reading if its `shipped` row is what `python -m benchmarks.retrieval`
measures through `search_nodes`: same word ranking, same fusion, same model (float32 cosines
where the store keeps int8 vectors, hence a tolerance of one question in a hundred).
"""

from __future__ import annotations

import pytest
from benchmarks.retrieval.evaluate import evaluate, missing_meaning_search
from benchmarks.retrieval.sets import load_meaning
from benchmarks.retrieval.tune import VARIANTS, build_features, score_variant

pytestmark = pytest.mark.skipif(missing_meaning_search() is not None, reason=str(missing_meaning_search()))


def test_the_tuners_shipped_row_is_the_recall_search_nodes_gets_on_the_meaning_set():
    meaning = load_meaning()
    offline, _ = score_variant(VARIANTS["shipped"], build_features(meaning, through_tools=False), every_answer=False)
    served = evaluate(meaning, ["hybrid"]).modes["hybrid"].summary()["overall"]["recall@5"]
    assert offline == pytest.approx(served, abs=0.01)


def test_the_tuners_word_row_is_the_recall_of_lexical_search_on_the_meaning_set():
    meaning = load_meaning()
    offline, _ = score_variant(VARIANTS["words only"], build_features(meaning, through_tools=False), every_answer=False)
    served = evaluate(meaning, ["lexical"], embed=False).modes["lexical"].summary()["overall"]["recall@5"]
    assert offline == pytest.approx(served, abs=1e-9)
