"""Load a set into a fresh memory, embed it, ask every question in every mode, and score the answers.

With embedding stages (`stages`), each memory is embedded part of the way, asked every
question in every mode, embedded further, asked again, and so on: the scores are kept per
stage and mode. Lexical search does not change with the stage and is asked at each all the same,
so that every stage's table reads alone.

Scores per question, averaged over a category and over the whole set:

- recall@k: the share of the question's answer entities among the first k results;
- all@5: 1 when every answer entity is among the first 5, else 0 (on LoCoMo loaded by
  sessions this is the reading that gives the issue's 0.78 for lexical search);
- MRR: 1 / the rank of the first answer entity among the first 10, 0 when none is there.

Semantic and hybrid search need `graphmem.embedding` and a `search_nodes` that takes `mode`
(issue 17, being built alongside this). Until both exist only `lexical` is measured, and the
report says why the others are missing instead of failing.
"""

from __future__ import annotations

import inspect
import statistics
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.retrieval.sets import EvalSet, Memory, Question
from benchmarks.retrieval.stages import FULL, embed_until, stage_target, waiting_texts
from graphmem.domain.graph import KnowledgeGraph
from graphmem.storage.sqlite import SQLiteStore

__all__ = [
    "MODES",
    "Report",
    "Scores",
    "Stage",
    "evaluate",
    "missing_meaning_search",
    "open_memory",
    "ranked_names",
]

MODES = ("lexical", "semantic", "hybrid")
DEPTH = 10
"""How many results each question asks for: enough for recall@10 and MRR."""


def missing_meaning_search() -> str | None:
    """Why semantic and hybrid search cannot be measured here, or None when they can."""
    try:
        import graphmem.embedding  # noqa: F401  (probing for an optional, in-progress module)
    except ImportError as exc:
        return f"graphmem.embedding is not importable yet ({exc}); only lexical search is measured"
    if "mode" not in inspect.signature(KnowledgeGraph.search_nodes).parameters:
        return "KnowledgeGraph.search_nodes takes no `mode` yet; only lexical search is measured"
    return None


def open_memory(path: Path, *, embed: bool) -> KnowledgeGraph:
    """A KnowledgeGraph over a new SQLite file, with the packaged embedding model when `embed`."""
    if not embed:
        return KnowledgeGraph(SQLiteStore(path))
    from graphmem.embedding import load_embedder  # only once missing_meaning_search() said it exists

    return KnowledgeGraph(SQLiteStore(path), embedder=load_embedder())  # type: ignore[call-arg]


def ranked_names(graph: KnowledgeGraph, question: str, mode: str, limit: int = DEPTH) -> list[str]:
    """The names search_nodes answers `question` with, best first."""
    if mode == "lexical" and "mode" not in inspect.signature(graph.search_nodes).parameters:
        found = graph.search_nodes(question, limit=limit)  # today's search is the lexical one
    else:
        found = graph.search_nodes(question, limit=limit, mode=mode)  # type: ignore[call-arg]
    return [entity.name for entity in found.entities]


@dataclass
class Scores:
    """Per-question scores of one mode, grouped by category."""

    by_category: dict[str, list[tuple[float, float, float, float]]] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)

    def add(self, question: Question, names: Sequence[str], seconds: float) -> None:
        """Score one answer list against the question's expected entities."""
        answers = question.answers
        recall_5 = sum(answer in names[:5] for answer in answers) / len(answers)
        recall_10 = sum(answer in names[:10] for answer in answers) / len(answers)
        ranks = [names.index(answer) + 1 for answer in answers if answer in names[:DEPTH]]
        self.by_category.setdefault(question.category, []).append(
            (recall_5, recall_10, 1 / min(ranks) if ranks else 0.0, float(recall_5 == 1.0))
        )
        self.latencies.append(seconds)

    def summary(self) -> dict[str, Any]:
        """recall@5, recall@10, all@5 and MRR per category and overall, and the median latency."""

        def mean(rows: list[tuple[float, float, float, float]]) -> dict[str, float]:
            return {
                "n": len(rows),
                "recall@5": statistics.fmean(row[0] for row in rows),
                "recall@10": statistics.fmean(row[1] for row in rows),
                "all@5": statistics.fmean(row[3] for row in rows),
                "mrr": statistics.fmean(row[2] for row in rows),
            }

        every = [row for rows in self.by_category.values() for row in rows]
        return {
            "categories": {category: mean(rows) for category, rows in sorted(self.by_category.items())},
            "overall": mean(every),
            "median_ms": statistics.median(self.latencies) * 1000,
        }


@dataclass
class Stage:
    """The scores of every mode with a given share of each memory embedded."""

    percent: int
    modes: dict[str, Scores]
    embedded: int = 0
    """Texts with a vector when the questions were asked, over every memory."""
    waiting: int = 0
    """Texts waiting for one once the memories were loaded, over every memory."""
    embed_seconds: float = 0.0
    """The time spent embedding to reach this stage from the one before."""

    def as_dict(self) -> dict[str, Any]:
        """The stage as plain data."""
        return {
            "stage": self.percent,
            "embedded": self.embedded,
            "waiting": self.waiting,
            "embed_seconds": self.embed_seconds,
            "modes": {mode: scores.summary() for mode, scores in self.modes.items()},
        }


@dataclass
class Report:
    """What one evaluation measured: per embedding stage, per mode."""

    set_name: str
    stages: list[Stage]
    """In rising order; one, at 100, unless stages were asked for."""
    skipped: str | None
    """Why semantic and hybrid are absent, if they are."""
    questions: int = 0

    @property
    def modes(self) -> dict[str, Scores]:
        """The scores at the last stage (the fully embedded memory, unless told otherwise)."""
        return self.stages[-1].modes

    @property
    def embedded(self) -> int:
        """The texts embedded by the last stage, over every memory."""
        return self.stages[-1].embedded

    @property
    def embed_seconds(self) -> float:
        """The time spent embedding, over every stage and memory."""
        return sum(stage.embed_seconds for stage in self.stages)

    def summary(self) -> list[dict[str, Any]]:
        """Per stage, recall@5 and @10 overall of each mode."""
        rows = []
        for stage in self.stages:
            overall = {mode: scores.summary()["overall"] for mode, scores in stage.modes.items()}
            rows.append(
                {
                    "stage": stage.percent,
                    **{mode: {key: row[key] for key in ("recall@5", "recall@10")} for mode, row in overall.items()},
                }
            )
        return rows

    def as_dict(self) -> dict[str, Any]:
        """The report as plain data (the command's --json); `modes` is the last stage's."""
        return {
            "set": self.set_name,
            "questions": self.questions,
            "embedding": {"texts": self.embedded, "seconds": self.embed_seconds},
            "skipped": self.skipped,
            "modes": {mode: scores.summary() for mode, scores in self.modes.items()},
            "stages": [stage.as_dict() for stage in self.stages],
            "summary": self.summary(),
        }


def load(graph: KnowledgeGraph, memory: Memory, *, through_tools: bool) -> None:
    """Write a memory: in bulk, or through create_entities / create_relations as the tools call them."""
    if not through_tools:
        graph.import_graph(memory.entities, memory.relations)
        return
    batch = graph.limits.max_batch_items
    for start in range(0, len(memory.entities), batch):
        graph.create_entities(memory.entities[start : start + batch])
    for start in range(0, len(memory.relations), batch):
        graph.create_relations(memory.relations[start : start + batch])


def evaluate(
    eval_set: EvalSet,
    modes: Iterable[str] = MODES,
    *,
    through_tools: bool = False,
    embed: bool | None = None,
    stages: Sequence[int] = (FULL,),
) -> Report:
    """Load each memory of the set into a fresh SQLite file, then, at each stage, embed it that far
    and ask every question per mode.

    Args:
        through_tools: load with create_entities (as the official tools do) instead of import_graph.
        embed: use the embedding model; by default, when graphmem has one.
        stages: the percentages of each memory's waiting texts embedded before the questions are
            asked (see `benchmarks.retrieval.stages`), in rising order.
    """
    if not stages or list(stages) != sorted(set(stages)):
        raise ValueError(f"stages {list(stages)} are not distinct and in rising order")
    skipped = missing_meaning_search()
    if embed is None:
        embed = skipped is None
    wanted = [mode for mode in modes if embed or mode == "lexical"]
    report = Report(
        eval_set.name,
        [Stage(percent, {mode: Scores() for mode in wanted}) for percent in stages],
        None if embed else skipped,
    )
    with tempfile.TemporaryDirectory(prefix="graphmem-retrieval-") as directory:
        for number, memory in enumerate(eval_set.memories):
            graph = open_memory(Path(directory) / f"memory-{number}.db", embed=embed)
            try:
                load(graph, memory, through_tools=through_tools)
                waiting = waiting_texts(graph)
                embedded = 0
                for stage in report.stages:
                    started = time.perf_counter()
                    embedded = embed_until(graph, stage_target(waiting, stage.percent), embedded)
                    stage.embed_seconds += time.perf_counter() - started
                    stage.embedded += embedded
                    stage.waiting += waiting
                    _ask(graph, memory.questions, stage.modes)
                report.questions += len(memory.questions)
            finally:
                graph.store.close()
    return report


def _ask(graph: KnowledgeGraph, questions: Iterable[Question], scores: dict[str, Scores]) -> None:
    for question in questions:
        for mode, scored in scores.items():
            started = time.perf_counter()
            names = ranked_names(graph, question.text, mode)
            scored.add(question, names, time.perf_counter() - started)
