"""Fusion variants measured offline, on halves of LoCoMo and on the hand-written sets.

    python -m benchmarks.retrieval.tune /path/to/locomo10_v2 --cache /tmp/fusion-features.pkl \
        [--as few-turns] [--turns-per-entity 3] [--only NAME ...]

Asking `search_nodes` per variant would embed every memory again (minutes for LoCoMo on two
cores). Instead each memory is loaded once through the tools, as `benchmarks.retrieval` loads
it, and what any fusion can see is kept (`Features`): the word ranking the store answers each
question with, the cosine of each question with every embedded text (float32, where the store
keeps int8; the `shipped` row reproduces the command's figures to about the third decimal),
and the cosine with each observation embedded together with the one before it in its entity
(the "context" texts, which the store does not embed today). A variant is then a function
from one question's evidence to a ranking, scored in seconds.

LoCoMo is loaded as the command's `--as` says (few-turns unless told) and kept in its two
halves as the command's `--half` cuts them: tune on the first, report the second. Every
variant is scored by recall@5 and @10 (the share of a question's answer entities among the
first 5 or 10) on the first half, the second half, the meaning set and the quality set, and
per category. The winner is the best first-half recall@5 among the variants that lower neither
hand-written set by more than `ALLOWED_DROP`; a tie (to the third decimal) goes to the simpler,
i.e. the one listed first.

Results (28 Nov 2026, LoCoMo few-turns at 3 turns per entity): what ships is a floor of 0.2
under the spread a lift is measured against (`Fusion.min_spread`), recall@5 0.742 on the first
half and 0.724 on the second (before it: 0.725 / 0.706; words alone 0.730 / 0.722), meaning
set 0.917 and quality 1.000 unchanged. The pick rule names the same floor with a background at
rank 20, 0.004 higher at 5 and lower at 10; why the simpler one ships, and every variant's
figures: benchmarks/retrieval/TUNING.md.
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from benchmarks.retrieval.evaluate import load, open_memory
from benchmarks.retrieval.locomo import LOADINGS, TURNS_PER_ENTITY, load_locomo
from benchmarks.retrieval.sets import EvalSet, load_meaning, load_quality
from graphmem.domain import search
from graphmem.domain.fusion import CANDIDATES, NEAR_CANDIDATES, Fusion, fuse
from graphmem.domain.meaning import embedding_text
from graphmem.storage.vectors import ENTITY_TEXT, OBSERVATION_TEXT, NearEntity, PendingText
from graphmem.storage.words import SearchHit

__all__ = [
    "ALLOWED_DROP",
    "SETS",
    "VARIANTS",
    "Case",
    "Features",
    "Meaning",
    "Score",
    "build_features",
    "fused",
    "pick",
    "score_variant",
]

WORD_DEPTH = 50
"""How many word matches each question keeps (a variant may read past the shipped `CANDIDATES`)."""

EMBED_BATCH = 256
"""Texts embedded per call while the features are built (for progress, and bounded memory)."""

SETS = ("first", "second", "meaning", "quality")
"""The sets every variant is scored on: LoCoMo's halves, then the hand-written sets."""

ALLOWED_DROP = 0.005
"""How far below the shipped fusion a variant may take the meaning or quality set's recall@5."""

EXCERPT = "conversation excerpt"
"""The entity type of a LoCoMo few-turns entity (benchmarks.retrieval.locomo)."""


@dataclass
class Features:
    """One memory as a fusion sees it. Texts are kept entity by entity, in entity order."""

    names: list[str]
    types: list[str]
    owner: np.ndarray
    """For each embedded text, the index of its entity in `names` (never decreasing)."""
    kinds: np.ndarray
    """For each text, ENTITY_TEXT (its name and aliases) or OBSERVATION_TEXT."""
    texts: list[str]
    text_vectors: np.ndarray
    context_vectors: np.ndarray
    """For each text, the vector of "<previous observation> <this one>" when it is an observation
    with one before it in its entity, else the text's own vector."""
    question_vectors: np.ndarray
    questions: list[tuple[str, tuple[str, ...], str]]
    """(text, answer entity names, category) per question."""
    words: list[list[tuple[str, bool, float]]]
    """The store's word ranking per question: (name, official, BM25)."""

    @property
    def starts(self) -> np.ndarray:
        """Where each entity's texts begin."""
        return np.searchsorted(self.owner, np.arange(len(self.names)))


@dataclass
class Case:
    """One question: its word hits (the shipped window), and its cosine with every text."""

    features: Features
    number: int
    words: list[SearchHit]
    cosines: np.ndarray
    context_cosines: np.ndarray


Ranker = Callable[[Case], list[str]]


@dataclass(frozen=True)
class Meaning:
    """How an entity's meaning score is read from its texts' cosines with the question.

    Args:
        context: a text scores the better of its own cosine and its context text's.
        best: the mean of an entity's best `best` texts (fewer if it has fewer).
        names: "all" counts the name text of every entity, "no excerpts" not that of a LoCoMo
            excerpt (whose name, "session 3, turns 4-6", says nothing), "none" of no entity.
        candidates: how many of the closest entities the meaning ranking proposes.
    """

    context: bool = False
    best: int = 1
    names: str = "all"
    candidates: int = NEAR_CANDIDATES

    def near(self, case: Case) -> list[NearEntity]:
        """The `candidates` closest entities, as the vector store would answer them."""
        features = case.features
        scores = np.maximum(case.cosines, case.context_cosines) if self.context else case.cosines.copy()
        if self.names != "all":
            names = features.kinds == ENTITY_TEXT
            if self.names == "no excerpts":
                names &= np.array([t == EXCERPT for t in features.types])[features.owner]
            scores[names] = -np.inf
        # Best first within each entity: sorted by owner, then by falling score.
        order = np.lexsort((-scores, features.owner))
        ranked = scores[order]
        starts = features.starts
        counts = np.diff(np.append(starts, len(scores)))
        total = np.zeros(len(starts))
        taken = np.zeros(len(starts))
        for place in range(self.best):
            has = counts > place
            values = np.full(len(starts), -np.inf)
            values[has] = ranked[starts[has] + place]
            usable = np.isfinite(values)
            total[usable] += values[usable]
            taken[usable] += 1
        entity = np.where(taken > 0, total / np.maximum(taken, 1), -np.inf)
        closest = np.argsort(-entity, kind="stable")[: self.candidates]
        return [NearEntity(features.names[i], float(entity[i])) for i in closest if np.isfinite(entity[i])]


SHIPPED = Fusion()
"""The weights `search_nodes` uses."""

BEFORE = Fusion(min_spread=0.0)
"""The fusion of the first two rounds below, before lifts had a floor under their spread."""


def _before(**changes: float) -> Fusion:
    """A change to the fusion as it was in the first two rounds (`BEFORE`)."""
    return replace(BEFORE, **changes)


ONE_TEXT = Meaning()
"""How `search_nodes` scores an entity's meaning: its closest text, the name text included."""


def fused(fusion: Fusion = SHIPPED, meaning: Meaning = ONE_TEXT) -> Ranker:
    """`graphmem.domain.fusion.fuse` as `search_nodes` calls it, with these weights and meaning scores."""
    return lambda case: [hit.name for hit in fuse(case.words, meaning.near(case), fusion)]


def _variants() -> dict[str, Ranker]:
    variants: dict[str, Ranker] = {
        "words only": lambda case: [hit.name for hit in case.words],
        "meaning only": lambda case: [near.name for near in ONE_TEXT.near(case)],
        "shipped": fused(),
        "before the spread floor": fused(BEFORE),
    }
    for weight in (0.25, 0.4, 0.5, 0.6, 0.75):
        variants[f"weight {weight}"] = fused(_before(semantic_weight=weight))
    for rank in (10, 20, 50):
        variants[f"background rank {rank}"] = fused(_before(baseline_rank=rank))
    for floor in (0.2, 0.3):
        variants[f"min similarity {floor}"] = fused(_before(min_similarity=floor))
    variants["mean of best 2 texts"] = fused(BEFORE, meaning=Meaning(best=2))
    variants["no name text for excerpts"] = fused(BEFORE, meaning=Meaning(names="no excerpts"))
    variants["no name text at all"] = fused(BEFORE, meaning=Meaning(names="none"))
    variants["context (prev + this)"] = fused(BEFORE, meaning=Meaning(context=True))
    variants["word candidates 50"] = lambda case: [
        hit.name for hit in fuse(_words(case, WORD_DEPTH), ONE_TEXT.near(case), BEFORE)
    ]
    # Pairs of the above, fixed before any figure was seen (the first half picks among them too).
    variants["context + mean of best 2"] = fused(BEFORE, meaning=Meaning(context=True, best=2))
    variants["context + no excerpt names"] = fused(BEFORE, meaning=Meaning(context=True, names="no excerpts"))
    for weight in (0.5, 0.75):
        variants[f"context, weight {weight}"] = fused(_before(semantic_weight=weight), Meaning(context=True))
        variants[f"context + no excerpt names, weight {weight}"] = fused(
            _before(semantic_weight=weight), Meaning(context=True, names="no excerpts")
        )
    # Second round, added after the first table (both halves) was read: the first half's best
    # allowed single change (background rank 50) with the others, and a deeper background.
    deep = Meaning(candidates=100)
    variants["background rank 100 of 100 near"] = fused(_before(baseline_rank=100), deep)
    # Its neighbours, to see whether rank 100 is a plateau or a peak.
    variants["background rank 75 of 100 near"] = fused(_before(baseline_rank=75), deep)
    variants["background rank 150 of 150 near"] = fused(_before(baseline_rank=150), Meaning(candidates=150))
    variants["background rank 50 + context"] = fused(_before(baseline_rank=50), Meaning(context=True))
    variants["background rank 50, weight 0.75"] = fused(_before(semantic_weight=0.75, baseline_rank=50))
    variants["background rank 50, min similarity 0.2"] = fused(_before(baseline_rank=50, min_similarity=0.2))
    variants["background rank 100 of 100 near, weight 0.75"] = fused(
        _before(semantic_weight=0.75, baseline_rank=100), deep
    )
    variants["background rank 100 of 100 near + context"] = fused(
        _before(baseline_rank=100), Meaning(context=True, candidates=100)
    )
    # Third round (28 Nov 2026, after the tables of the first two were read): a lift measured against at
    # least a given spread (`Fusion.min_spread`), so that a meaning ranking that cannot tell the
    # entities apart is not stretched to full lifts; and, as its limit, a fixed scale, every
    # lift the cosine difference over the same constant whatever the query's spread.
    for floor in (0.1, 0.15, 0.2, 0.25, 0.3, 0.35):
        for rank, near in ((30, 50), (50, 50), (100, 100)):
            variants[f"spread at least {floor}, background {rank}"] = fused(
                Fusion(baseline_rank=rank, min_spread=floor), Meaning(candidates=near)
            )
    for floor in (0.2, 0.25):
        for weight in (0.75, 1.25):
            variants[f"spread at least {floor}, weight {weight}"] = fused(
                Fusion(semantic_weight=weight, min_spread=floor)
            )
        variants[f"spread at least {floor} + context"] = fused(Fusion(min_spread=floor), Meaning(context=True))
    for scale in (0.1, 0.2, 0.3, 0.4, 0.5):
        variants[f"fixed scale {scale}"] = _fixed_scale(scale)
    # Fourth round, after the third was read: the floor with a nearer background, and with the
    # best two texts (which lost alone).
    for floor in (0.2, 0.25):
        for rank in (10, 20):
            variants[f"spread at least {floor}, background {rank}"] = fused(
                Fusion(baseline_rank=rank, min_spread=floor)
            )
    variants["spread at least 0.2 + mean of best 2"] = fused(Fusion(min_spread=0.2), Meaning(best=2))
    return variants


def _fixed_scale(scale: float) -> Ranker:
    """The shipped fusion with every lift the cosine above the background over `scale`, however
    far the closest entity stands (fuse's arithmetic, written out: fuse divides by the spread)."""

    def ranked(case: Case) -> list[str]:
        near = ONE_TEXT.near(case)
        best = max((hit.score for hit in case.words), default=0.0)
        words = {hit.name: hit.score / best if best > 0 else 0.0 for hit in case.words}
        background = near[min(BEFORE.baseline_rank, len(near)) - 1].score if near else 0.0
        meaning = {
            n.name: (n.score - background) / scale
            for n in near
            if n.score >= BEFORE.min_similarity and n.score > background
        }
        order = list(dict.fromkeys([hit.name for hit in case.words] + list(meaning)))
        place = {name: index for index, name in enumerate(order)}
        official = {hit.name for hit in case.words if hit.official}
        score = {name: words.get(name, 0.0) + meaning.get(name, 0.0) for name in order}
        return sorted(order, key=lambda name: (name not in official, -score[name], place[name]))

    return ranked


def _words(case: Case, depth: int) -> list[SearchHit]:
    return [SearchHit(name, official, score) for name, official, score in case.features.words[case.number][:depth]]


VARIANTS = _variants()
"""Every variant by name, the simpler first (a tie goes to the earlier)."""


def build_features(eval_set: EvalSet, *, through_tools: bool) -> list[Features]:
    """Load each memory of the set, rank its questions by words, and embed its texts and questions."""
    from graphmem.embedding import load_embedder

    model = load_embedder(workers=2)

    def embed(texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, model.dimensions), dtype=np.float32)
        return np.concatenate([model.embed(texts[at : at + EMBED_BATCH]) for at in range(0, len(texts), EMBED_BATCH)])

    built = []
    with tempfile.TemporaryDirectory(prefix="graphmem-tune-") as directory:
        for number, memory in enumerate(eval_set.memories):
            started = time.monotonic()
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
            context: dict[int, str] = {}
            for index, entity in enumerate(memory.entities):
                # The texts the embedding worker embeds: the name with its aliases, each observation.
                pending = PendingText(ENTITY_TEXT, 0, entity.name, entity.name, entity.aliases)
                texts.append(embedding_text(pending))
                owner.append(index)
                kinds.append(ENTITY_TEXT)
                for place, observation in enumerate(entity.observations):
                    if place:
                        context[len(texts)] = f"{entity.observations[place - 1]} {observation}"
                    texts.append(observation)
                    owner.append(index)
                    kinds.append(OBSERVATION_TEXT)
            text_vectors = embed(texts)
            context_vectors = text_vectors.copy()
            rows = list(context)
            if rows:
                context_vectors[rows] = embed([context[row] for row in rows])
            built.append(
                Features(
                    names=[entity.name for entity in memory.entities],
                    types=[entity.entity_type for entity in memory.entities],
                    owner=np.array(owner),
                    kinds=np.array(kinds),
                    texts=texts,
                    text_vectors=text_vectors,
                    context_vectors=context_vectors,
                    question_vectors=embed([question.text for question in memory.questions]),
                    questions=[(q.text, q.answers, q.category) for q in memory.questions],
                    words=words,
                )
            )
            print(
                f"  {eval_set.name}: memory {number + 1}/{len(eval_set.memories)},"
                f" {len(texts) + len(rows)} texts in {time.monotonic() - started:.0f} s",
                file=sys.stderr,
            )
    return built


def cases(features: Features) -> list[Case]:
    """Every question of a memory, with its evidence."""
    cosines = features.text_vectors @ features.question_vectors.T
    context = features.context_vectors @ features.question_vectors.T
    return [
        Case(
            features,
            number,
            [SearchHit(name, official, score) for name, official, score in features.words[number][:CANDIDATES]],
            cosines[:, number],
            context[:, number],
        )
        for number in range(len(features.questions))
    ]


@dataclass(frozen=True)
class Score:
    """Recall@5 and @10, overall and per category."""

    recall_5: float
    recall_10: float
    categories: dict[str, tuple[float, float]]


def score_variant(ranker: Ranker, memories: Sequence[Features]) -> Score:
    """The variant's mean recall@5 and @10 over every question of `memories`, overall and per category."""
    by_category: dict[str, list[tuple[float, float]]] = {}
    for features in memories:
        for case in cases(features):
            ranked = ranker(case)[:10]
            answers = features.questions[case.number][1]
            row = (
                sum(answer in ranked[:5] for answer in answers) / len(answers),
                sum(answer in ranked for answer in answers) / len(answers),
            )
            by_category.setdefault(features.questions[case.number][2], []).append(row)
    every = [row for rows in by_category.values() for row in rows]
    return Score(
        statistics.fmean(row[0] for row in every),
        statistics.fmean(row[1] for row in every),
        {
            category: (statistics.fmean(r[0] for r in rows), statistics.fmean(r[1] for r in rows))
            for category, rows in sorted(by_category.items())
        },
    )


def pick(scores: dict[str, dict[str, Score]]) -> str:
    """The variant with the best first-half recall@5 that keeps both hand-written sets within
    `ALLOWED_DROP` of the shipped fusion; ties (to the third decimal) go to the earlier listed."""
    shipped = scores["shipped"]
    allowed = [
        name
        for name, score in scores.items()
        if name not in ("words only", "meaning only")
        and all(score[s].recall_5 >= shipped[s].recall_5 - ALLOWED_DROP for s in ("meaning", "quality"))
    ]
    return max(allowed, key=lambda name: (round(scores[name]["first"].recall_5, 3), -allowed.index(name)))


def _cached(path: Path | None, locomo: Path, loading: str, turns: int) -> dict[str, list[Features]]:
    unit = f"{loading}/{turns}"
    if path is not None and path.exists():
        loaded = pickle.loads(path.read_bytes())
        if not isinstance(loaded, dict) or loaded.get("unit") != unit:
            sys.exit(f"{path} holds other features than those of LoCoMo as {unit}: give another --cache")
        return {name: loaded[name] for name in SETS}
    built = {
        half: build_features(load_locomo(locomo, loading, turns_per_entity=turns, half=half), through_tools=True)
        for half in ("first", "second")
    }
    built["meaning"] = build_features(load_meaning(), through_tools=False)
    built["quality"] = build_features(load_quality(), through_tools=False)
    if path is not None:
        path.write_bytes(pickle.dumps({"unit": unit, **built}))
    return built


def main(argv: list[str] | None = None) -> None:
    """Print every variant's figures, then the winner."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.retrieval.tune", description=__doc__)
    parser.add_argument("locomo", type=Path, help="locomo10.json or the locomo10_v2 folder")
    parser.add_argument("--cache", type=Path, help="keep the features here and reuse them (a pickle: yours only)")
    parser.add_argument("--as", dest="loading", choices=LOADINGS, default="few-turns", help="default: few-turns")
    parser.add_argument("--turns-per-entity", type=int, default=TURNS_PER_ENTITY, metavar="N")
    parser.add_argument("--only", nargs="+", help="variants to run (default: all; shipped always runs)")
    args = parser.parse_args(argv)
    if args.turns_per_entity < 1:
        parser.error("--turns-per-entity takes 1 or more")
    sets = _cached(args.cache, args.locomo, args.loading, args.turns_per_entity)
    scores: dict[str, dict[str, Score]] = {}
    started = time.monotonic()
    header = " ".join(f"{s + ' R@5':>12} {'R@10':>6}" for s in SETS)
    print(f"{'variant':<46} {header}")
    for name, ranker in VARIANTS.items():
        if args.only and name not in args.only and name != "shipped":
            continue
        scores[name] = {s: score_variant(ranker, sets[s]) for s in SETS}
        figures = " ".join(f"{scores[name][s].recall_5:>12.3f} {scores[name][s].recall_10:>6.3f}" for s in SETS)
        print(f"{name:<46} {figures}", flush=True)
    print(f"\n({len(scores)} variants scored in {time.monotonic() - started:.0f} s)\n")
    print("recall@5 / @10 per category")
    for s in SETS:
        categories = sorted({c for score in scores.values() for c in score[s].categories})
        print(f"\n{s}: " + "  ".join(categories))
        for name, score in scores.items():
            cells = [score[s].categories.get(c, (float("nan"),) * 2) for c in categories]
            print(f"  {name:<46} " + " ".join(f"{r5:.3f}/{r10:.3f}" for r5, r10 in cells))
    winner = pick(scores)
    best = scores[winner]
    print(
        f"\nwinner by the first half: {winner}: first {best['first'].recall_5:.3f},"
        f" second (report) {best['second'].recall_5:.3f} / {best['second'].recall_10:.3f} at 5 / 10;"
        f" meaning {best['meaning'].recall_5:.3f}, quality {best['quality'].recall_5:.3f}"
    )


if __name__ == "__main__":
    # Through the module's import name, so that a pickled cache names
    # benchmarks.retrieval.tune.Features (not __main__.Features) and loads anywhere.
    from benchmarks.retrieval import tune

    tune.main()
