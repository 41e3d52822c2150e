"""How a hybrid search orders its answer: the word ranking and the meaning ranking, fused.

Both rankings score the same candidates (the best of each, by name): BM25 over the
query's words (`storage.words`), and the cosine similarity between the query and an
entity's closest text (`storage.vectors`). Each score is brought to the same scale
before they are added:

- the word score is divided by the best word score of the query, so the strongest word
  match counts 1 however long the question;
- the meaning score counts only what lifts an entity above the query's background: the
  cosine of the `baseline_rank`-th closest entity, which is what any entity of the
  memory scores against this question. The background counts 0, and the closest 1 when
  it stands clear of the background; when every entity is about as close as the
  background (the spread is under `min_spread`), the lifts stay as small as the cosine
  differences they come from, rather than stretched to the full scale.

An entity's fused score is its word score plus `SEMANTIC_WEIGHT` times its meaning score.
Entities that contain the whole query (the official substring search) still come first:
the fused score orders them among themselves, and then everything else.

While the memory is being embedded, part of it has vectors and part has not yet. An entity
whose texts still wait cannot be judged by meaning, and must not be ranked down for it: such
an entity keeps the place the word ranking gave it, and only the embedded ones are fused (in
the places embedded entities held, and after). With nothing embedded the answer is the word
ranking's; with everything embedded it is the fused one; between, meaning reorders only what
it can judge.

A query whose words the model does not know (gibberish, a letter, a script it was not
trained on) is close to nothing in particular: every entity scores about the same against it,
and the closest is chance. Such a query counts by meaning only when its closest entity
is close and stands well clear of the next ones (`Fusion.distinct_similarity`, `distinct_lift`:
a typo such as "sourdugh" still finds the baker); otherwise it finds what its words find, which is usually nothing.

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

from collections.abc import Sequence, Set
from dataclasses import dataclass

from graphmem.storage.vectors import NearEntity
from graphmem.storage.words import SearchHit

__all__ = ["CANDIDATES", "NEAR_CANDIDATES", "SEARCH_MODES", "Fusion", "FusedHit", "fuse", "meaning_counts"]

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
    min_spread: float = 0.2
    """The smallest cosine distance between the closest entity and the background that a lift is
    measured against. Without it a query that meaning cannot tell entities apart by (in a memory
    of one long conversation, every excerpt is about as close to a question) had its few
    hundredths of cosine stretched to a full lift, as large as a clear answer's, and reordered
    strong word matches by chance. Measured on LoCoMo at three turns to an entity: recall@5
    0.725 to 0.742 on the half it was tuned on, 0.706 to 0.724 on the other (words alone 0.730
    and 0.722), the meaning and quality sets unchanged (benchmarks/retrieval/TUNING.md)."""
    min_similarity: float = 0.25
    """The cosine below which an entity's closeness counts nothing: it neither lifts an entity
    the words found nor brings in one they did not (a question about nothing in the memory
    finds nothing, rather than whatever happens to be least far)."""
    distinct_similarity: float = 0.5
    distinct_lift: float = 0.12
    """A query without a word the model knows counts by meaning only if its closest entity is at
    least `distinct_similarity` close and stands `distinct_lift` (in cosine) above the mean of
    the next five. Measured on the meaning set cut to 15, 40 and 123 entities: gibberish, single
    letters and other scripts came at most 0.45 close (a Japanese name, all word pieces too,
    drew them) and at most 0.21 clear in the smallest memory; a misspelt word with an answer
    ("sourdugh" for the baker) 0.53 close and 0.15 to 0.26 clear."""


@dataclass(frozen=True, slots=True)
class FusedHit:
    name: str
    official: bool
    score: float


def meaning_counts(semantic: Sequence[NearEntity], knows_a_word: bool, fusion: Fusion = Fusion()) -> bool:
    """Whether the meaning ranking of a query says anything: the query has a content word the model
    knows, or its closest entity stands clear of the others (see the module docstring)."""
    if knows_a_word:
        return True
    if len(semantic) < 2:
        return False
    closest = semantic[0].score
    following = [near.score for near in semantic[1:6]]
    return closest >= fusion.distinct_similarity and closest - sum(following) / len(following) >= fusion.distinct_lift


def fuse(
    lexical: Sequence[SearchHit],
    semantic: Sequence[NearEntity],
    fusion: Fusion = Fusion(),
    waiting: Set[str] = frozenset(),
) -> list[FusedHit]:
    """The candidates of both rankings in hybrid order: official matches first, then by fused score.

    Ties keep the word ranking's order, then the meaning ranking's. An entity in `waiting` (a
    text of it is not embedded yet) keeps its place in the word ranking.
    """
    best_words = max((hit.score for hit in lexical), default=0.0)
    words = {hit.name: (hit.score / best_words if best_words > 0 else 0.0) for hit in lexical}
    meaning: dict[str, float] = {}
    if semantic:
        top = semantic[0].score
        background = semantic[min(fusion.baseline_rank, len(semantic)) - 1].score
        spread = max(top - background, fusion.min_spread, 1e-6)
        for near in semantic:
            lift = (near.score - background) / spread
            if near.score >= fusion.min_similarity and lift > 0 and near.name not in waiting:
                meaning[near.name] = lift
    official = {hit.name for hit in lexical if hit.official}
    # The word ranking's candidates, then those only meaning found (and found close enough).
    order = list(
        dict.fromkeys([hit.name for hit in lexical] + [near.name for near in semantic if near.name in meaning])
    )
    weight = fusion.semantic_weight
    scored = [
        FusedHit(name, name in official, words.get(name, 0.0) + weight * meaning.get(name, 0.0))
        for name in order
        if name not in waiting
    ]
    position = {name: index for index, name in enumerate(order)}
    scored.sort(key=lambda hit: (not hit.official, -hit.score, position[hit.name]))
    if not waiting:
        return scored
    # The entities that wait keep their word-ranking places; the fused ones fill the others in order.
    fused = iter(scored)
    placed = [
        FusedHit(name, name in official, words[name]) if name in waiting else next(fused)
        for name in dict.fromkeys(hit.name for hit in lexical)
    ]
    return placed + list(fused)
