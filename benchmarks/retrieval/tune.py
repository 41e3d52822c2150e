"""Fusion variants measured offline, on halves of LoCoMo and on the hand-written sets.

    python -m benchmarks.retrieval.tune /path/to/locomo10_v2 [--cache /tmp/fusion-features.pkl]

Asking `search_nodes` per variant would embed every memory again (four minutes for LoCoMo on
two cores). Instead each memory is loaded once through the tools, as `benchmarks.retrieval`
loads it, and what any fusion can see is kept (`Features`): the word ranking the store answers
each question with, and the cosine of each question with every embedded text (float32, where
the store keeps int8; the `shipped` variant reproduces the command's figures to the third
decimal all the same). A variant is then a function from one question's evidence to a ranking,
scored in a second.

LoCoMo is scored on its even and odd conversations apart as well as whole (tune on one half,
look at the other), all evidence sessions in the top 5; the meaning and quality sets by
recall@5, which no variant may lower.
"""

from __future__ import annotations

import argparse
import math
import pickle
import statistics
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.retrieval.evaluate import load, open_memory
from benchmarks.retrieval.locomo import load_locomo
from benchmarks.retrieval.sets import EvalSet, load_meaning, load_quality
from graphmem.domain import search
from graphmem.domain.fusion import Fusion, fuse
from graphmem.domain.meaning import embedding_text
from graphmem.storage.vectors import ENTITY_TEXT, OBSERVATION_TEXT, NearEntity, PendingText
from graphmem.storage.words import SearchHit, index_words, stem

__all__ = ["VARIANTS", "Case", "Features", "answer_scores", "build_features", "score_variant", "summarise"]

WORD_DEPTH = 50
"""How many word matches each question keeps: every session of a LoCoMo conversation."""


@dataclass
class Features:
    """One memory as a fusion sees it."""

    names: list[str]
    owner: np.ndarray
    """For each embedded text, the index of its entity in `names`."""
    kinds: np.ndarray
    """For each text, ENTITY_TEXT (its name and aliases) or OBSERVATION_TEXT."""
    texts: list[str]
    text_vectors: np.ndarray
    question_vectors: np.ndarray
    questions: list[tuple[str, tuple[str, ...], str]]
    """(text, answer entity names, category) per question."""
    words: list[list[tuple[str, bool, float]]]
    """The store's word ranking per question: (name, official, BM25)."""
    _index_words: list[list[str]] | None = field(default=None, repr=False)
    _counts: dict[tuple[str, bool], np.ndarray] = field(default_factory=dict, repr=False)

    def index_words(self) -> list[list[str]]:
        """Each text's index words (tokenized and stemmed as the word index does)."""
        if self._index_words is None:
            self._index_words = [index_words(text) for text in self.texts]
        return self._index_words

    def term_counts(self, stemmed: str, prefix: bool) -> np.ndarray:
        """How often each text holds the index word `stemmed` (or, for a prefix, words it starts)."""
        key = (stemmed, prefix)
        # Through __dict__: features pickled before this cache existed have no `_counts`.
        counts: dict[tuple[str, bool], np.ndarray] = self.__dict__.setdefault("_counts", {})
        if key not in counts:
            counts[key] = np.array(
                [
                    sum(1 for t in words if (t.startswith(stemmed) if prefix else t == stemmed))
                    for words in self.index_words()
                ],
                dtype=float,
            )
        return counts[key]


@dataclass
class Case:
    """One question: its word hits, and each entity's text cosines (best first)."""

    features: Features
    number: int
    words: list[SearchHit]
    cosines: dict[str, np.ndarray]

    @property
    def text(self) -> str:
        return self.features.questions[self.number][0]

    def observation_bm25(self) -> dict[str, np.ndarray]:
        """Each entity's observations scored alone by BM25 (IDF over all observations), best first."""
        features = self.features
        documents = features.index_words()
        rows = np.flatnonzero(features.kinds == OBSERVATION_TEXT)
        lengths = np.array([len(documents[row]) for row in rows], dtype=float)
        average = lengths.mean() if len(rows) else 1.0
        total = np.zeros(len(rows))
        for word in search.query_terms(self.text):
            stemmed, prefix = stem(word), len(word) >= 3 and not word.isdigit()
            counts = features.term_counts(stemmed, prefix)[rows]
            found = int((counts > 0).sum())
            if not found:
                continue
            idf = max(math.log((len(rows) - found + 0.5) / (found + 0.5)), 1e-6)
            total += idf * counts * 2.2 / (counts + 1.2 * (0.25 + 0.75 * lengths / average))
        scores = np.zeros(len(features.texts))
        scores[rows] = total
        return _per_entity(features, scores, only=features.kinds == OBSERVATION_TEXT)


def _per_entity(features: Features, scores: np.ndarray, only: np.ndarray | None = None) -> dict[str, np.ndarray]:
    keep = np.ones(len(scores), dtype=bool) if only is None else only
    return {name: np.sort(scores[(features.owner == index) & keep])[::-1] for index, name in enumerate(features.names)}


def build_features(eval_set: EvalSet, *, through_tools: bool) -> list[Features]:
    """Load each memory of the set, rank its questions by words, and embed its texts and questions."""
    from graphmem.embedding import load_embedder

    model = load_embedder(workers=2)
    built = []
    with tempfile.TemporaryDirectory(prefix="graphmem-tune-") as directory:
        for number, memory in enumerate(eval_set.memories):
            graph = open_memory(Path(directory) / f"memory-{number}.db", embed=False)
            try:
                load(graph, memory, through_tools=through_tools)
                words = []
                for question in memory.questions:
                    plan = search.word_search([question.text], limit=WORD_DEPTH)
                    with graph.store.read():
                        found = graph.store.search_entities(plan)
                    words.append([(hit.name, hit.official, hit.score) for hit in found.hits])
            finally:
                graph.store.close()
            texts, owner, kinds = [], [], []
            for index, entity in enumerate(memory.entities):
                # The texts the embedding worker embeds: the name with its aliases, each observation.
                pending = PendingText(ENTITY_TEXT, 0, entity.name, entity.name, entity.aliases)
                for kind, text in [(ENTITY_TEXT, embedding_text(pending))] + [
                    (OBSERVATION_TEXT, observation) for observation in entity.observations
                ]:
                    texts.append(text)
                    owner.append(index)
                    kinds.append(kind)
            built.append(
                Features(
                    names=[entity.name for entity in memory.entities],
                    owner=np.array(owner),
                    kinds=np.array(kinds),
                    texts=texts,
                    text_vectors=model.embed(texts),
                    question_vectors=model.embed([question.text for question in memory.questions]),
                    questions=[(q.text, q.answers, q.category) for q in memory.questions],
                    words=words,
                )
            )
            print(f"  features of memory {number + 1}/{len(eval_set.memories)}", file=sys.stderr)
    return built


def cases(features: Features) -> Iterator[Case]:
    """Every question of a memory, with its evidence."""
    cosines = features.text_vectors @ features.question_vectors.T
    for number in range(len(features.questions)):
        hits = [SearchHit(name, official, score) for name, official, score in features.words[number]]
        yield Case(features, number, hits, _per_entity(features, cosines[:, number]))


Ranker = Callable[[Case], list[str]]

SHIPPED = Fusion()
"""The weights `search_nodes` uses."""


def _near(case: Case, aggregate: Callable[[np.ndarray], float]) -> list[NearEntity]:
    scored = [NearEntity(name, float(aggregate(values))) for name, values in case.cosines.items() if len(values)]
    return sorted(scored, key=lambda near: -near.score)[:50]


def shipped(fusion: Fusion = SHIPPED, aggregate: Callable[[np.ndarray], float] = lambda v: float(v[0])) -> Ranker:
    """`graphmem.domain.fusion.fuse` as `search_nodes` calls it (an entity: its best text)."""
    return lambda case: [hit.name for hit in fuse(case.words, _near(case, aggregate), fusion)]


def with_observation_words(share: float, word_share: float = 1.0, fusion: Fusion = SHIPPED) -> Ranker:
    """The shipped fusion plus `share` x each entity's best single observation by BM25 (over the best)."""

    def rank(case: Case) -> list[str]:
        fused = fuse(case.words, _near(case, lambda v: float(v[0])), fusion)
        words = {hit.name: hit.score for hit in case.words}
        best_words = max(words.values(), default=0.0) or 1.0
        lone = {name: float(values[0]) if len(values) else 0.0 for name, values in case.observation_bm25().items()}
        best_lone = max(lone.values(), default=0.0) or 1.0
        meaning = {hit.name: hit.score - words.get(hit.name, 0.0) / best_words for hit in fused}
        score = {
            hit.name: word_share * words.get(hit.name, 0.0) / best_words
            + share * lone.get(hit.name, 0.0) / best_lone
            + meaning[hit.name]
            for hit in fused
        }
        return sorted(score, key=lambda name: (name not in {h.name for h in fused if h.official}, -score[name]))

    return rank


def _second(share: float) -> Callable[[np.ndarray], float]:
    return lambda v: float(v[0] + share * (v[1] if len(v) > 1 else v[0]))


VARIANTS: dict[str, Ranker] = {
    "words only": lambda case: [hit.name for hit in case.words],
    "meaning only": lambda case: [near.name for near in _near(case, lambda v: float(v[0]))],
    "shipped": shipped(),
    "meaning weight 0.6": shipped(Fusion(semantic_weight=0.6)),
    "meaning weight 1.5": shipped(Fusion(semantic_weight=1.5)),
    "background rank 15": shipped(Fusion(baseline_rank=15)),
    "best + 0.25 x second text": shipped(aggregate=_second(0.25)),
    "best + 0.5 x second text": shipped(aggregate=_second(0.5)),
    "mean of best 3 texts": shipped(aggregate=lambda v: float(v[:3].mean())),
    "+ best observation by words x0.5": with_observation_words(0.5),
    "+ best observation by words x1": with_observation_words(1.0),
    "+ best observation x1, words x0.5": with_observation_words(1.0, 0.5),
}


def answer_scores(ranker: Ranker, memories: Sequence[Features], *, every_answer: bool) -> list[list[tuple[str, float]]]:
    """Per memory, each question's (category, score): 1 or 0 for all answers in the top 5, or recall@5."""
    scores = []
    for features in memories:
        scored = []
        for case in cases(features):
            top = ranker(case)[:5]
            answers = features.questions[case.number][1]
            found = sum(answer in top for answer in answers)
            scored.append(
                (
                    features.questions[case.number][2],
                    float(found == len(answers)) if every_answer else found / len(answers),
                )
            )
        scores.append(scored)
    return scores


def summarise(
    scores: Sequence[list[tuple[str, float]]], only: set[int] | None = None
) -> tuple[float, dict[str, float]]:
    """The mean score overall and per category, over every memory or the `only` ones."""
    by_category: dict[str, list[float]] = {}
    for number, scored in enumerate(scores):
        if only is None or number in only:
            for category, value in scored:
                by_category.setdefault(category, []).append(value)
    every = [value for values in by_category.values() for value in values]
    return statistics.fmean(every), {key: statistics.fmean(values) for key, values in sorted(by_category.items())}


def score_variant(
    ranker: Ranker, memories: Sequence[Features], *, every_answer: bool
) -> tuple[float, dict[str, float]]:
    """The mean score (all answers in the top 5, or recall@5) overall and per category."""
    return summarise(answer_scores(ranker, memories, every_answer=every_answer))


def _cached(path: Path | None, locomo: Path) -> dict[str, list[Features]]:
    if path is not None and path.exists():
        loaded: dict[str, list[Features]] = pickle.loads(path.read_bytes())
        return loaded
    built = {
        "locomo": build_features(load_locomo(locomo), through_tools=True),
        "meaning": build_features(load_meaning(), through_tools=False),
        "quality": build_features(load_quality(), through_tools=False),
    }
    if path is not None:
        path.write_bytes(pickle.dumps(built))
    return built


def main(argv: list[str] | None = None) -> None:
    """Print every variant's figures."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.retrieval.tune", description=__doc__)
    parser.add_argument("locomo", type=Path, help="locomo10.json or the locomo10_v2 folder")
    parser.add_argument("--cache", type=Path, help="keep the features here and reuse them (a pickle: yours only)")
    parser.add_argument("--only", nargs="+", help="variants to run (default: all)")
    args = parser.parse_args(argv)
    sets = _cached(args.cache, args.locomo)
    locomo = sets["locomo"]
    even, odd = set(range(0, len(locomo), 2)), set(range(1, len(locomo), 2))
    print(
        f"{'variant':<36} {'LoCoMo':>6} {'even':>6} {'odd':>6} {'multi':>6} {'open':>6} {'single':>6} {'time':>6}",
        end="",
    )
    print(f" {'meaning':>7} {'quality':>7}")
    for name, ranker in VARIANTS.items():
        if args.only and name not in args.only:
            continue
        scores = answer_scores(ranker, locomo, every_answer=True)
        whole, categories = summarise(scores)
        halves = [summarise(scores, half)[0] for half in (even, odd)]
        meaning = score_variant(ranker, sets["meaning"], every_answer=False)[0]
        quality = score_variant(ranker, sets["quality"], every_answer=False)[0]
        row: list[Any] = [whole, *halves] + [categories.get(key, math.nan) for key in _CATEGORIES]
        print(f"{name:<36} " + " ".join(f"{value:>6.3f}" for value in row) + f" {meaning:>7.3f} {quality:>7.3f}")


_CATEGORIES = ("multi-hop", "open-domain", "single-hop", "temporal")

if __name__ == "__main__":
    main()
