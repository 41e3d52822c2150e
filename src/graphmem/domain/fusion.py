"""How a hybrid search orders its answer: the word ranking and the meaning ranking, fused.

Both rankings score the same candidates (the best of each, by name): BM25 over the
query's words (`storage.words`), and the cosine similarity between the query and an
entity's closest text (`storage.vectors`). Each score is brought to the same scale
before they are added:

- the word score is divided by the best word score of the query, so the strongest word
  match counts 1 however long the question;
- the meaning score counts only what lifts an entity above the query's background: the
  cosine of the `BASELINE_RANK`-th closest entity, which is what any entity of the
  memory scores against this question. The closest counts 1, the background 0.

An entity's fused score is its word score plus `SEMANTIC_WEIGHT` times its meaning score.
Entities that contain the whole query (the official substring search) still come first:
the fused score orders them among themselves, and then everything else.

Why not reciprocal rank fusion: ranks throw away how far ahead the best word match is,
and measured on the long-conversation benchmark RRF at equal weights scored below BM25
alone. Scores keep it, and the baseline keeps a question that resembles nothing in the
memory from promoting whatever happens to be closest.

The weights were chosen on three sets at once (`python -m benchmarks.retrieval`): the
meaning set (answers in other words), the quality set (agent-written memory, mostly shared
words) and LoCoMo by sessions (long conversations; every evidence session in the top 5).
Recall@5 for words alone, meaning alone and fused: 0.54 / 0.89 / 0.92, 1.00 / 0.98 / 1.00,
0.79 / 0.61 / 0.81. Weights of 0.6 to 1.0 and backgrounds at ranks 20 to 50 all land within
0.01 on LoCoMo; past 1.5 meaning starts to pull strong word matches down there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from graphmem.storage.vectors import NearEntity
from graphmem.storage.words import SearchHit

__all__ = ["CANDIDATES", "NEAR_CANDIDATES", "SEARCH_MODES", "Fusion", "FusedHit", "fuse"]

SEARCH_MODES = ("hybrid", "lexical", "semantic")
"""`search_nodes`' `mode`: both rankings fused (the default), words only, meaning only."""

CANDIDATES = 30
"""How many entities the word ranking proposes to a fused answer (more when a page asks for more)."""

NEAR_CANDIDATES = 50
"""How many entities the meaning ranking proposes (more when a page asks for more): enough to
see the query's background (`Fusion.baseline_rank`) and the entities above it."""


@dataclass(frozen=True, slots=True)
class Fusion:
    """The weights of a hybrid ranking (measured: benchmarks/retrieval)."""

    semantic_weight: float = 1.0
    baseline_rank: int = 30
    min_similarity: float = 0.25
    """The cosine below which an entity's closeness counts nothing: it neither lifts an entity
    the words found nor brings in one they did not (a question about nothing in the memory
    finds nothing, rather than whatever happens to be least far)."""


@dataclass(frozen=True, slots=True)
class FusedHit:
    name: str
    official: bool
    score: float


def fuse(lexical: Sequence[SearchHit], semantic: Sequence[NearEntity], fusion: Fusion = Fusion()) -> list[FusedHit]:
    """The candidates of both rankings in hybrid order: official matches first, then by fused score.

    Ties keep the word ranking's order, then the meaning ranking's.
    """
    best_words = max((hit.score for hit in lexical), default=0.0)
    words = {hit.name: (hit.score / best_words if best_words > 0 else 0.0) for hit in lexical}
    meaning: dict[str, float] = {}
    if semantic:
        top = semantic[0].score
        background = semantic[min(fusion.baseline_rank, len(semantic)) - 1].score
        spread = top - background
        for near in semantic:
            lift = (near.score - background) / spread if spread > 1e-6 else 0.0
            if near.score >= fusion.min_similarity and lift > 0:
                meaning[near.name] = lift
    official = {hit.name for hit in lexical if hit.official}
    # The word ranking's candidates, then those only meaning found (and found close enough).
    order = list(
        dict.fromkeys([hit.name for hit in lexical] + [near.name for near in semantic if near.name in meaning])
    )
    weight = fusion.semantic_weight
    scored = [
        FusedHit(name, name in official, words.get(name, 0.0) + weight * meaning.get(name, 0.0)) for name in order
    ]
    position = {name: index for index, name in enumerate(order)}
    scored.sort(key=lambda hit: (not hit.official, -hit.score, position[hit.name]))
    return scored
