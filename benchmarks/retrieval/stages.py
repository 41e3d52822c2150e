"""Embedding stages: how much of a memory is embedded when its questions are asked (issue 28).

A memory that was just written is not embedded yet: the background worker takes its waiting
texts a batch at a time, in the order the store hands them out (newest first, observations
and entity names half and half). An agent that writes and then searches straight away
searches a memory part of the way there. A stage is the percentage of the texts waiting
once the memory is loaded that are embedded before the questions are asked; the stages of
one evaluation are reached in turn on the same memory, embedding only what each adds.

Stage 0 leaves search by meaning nothing to find, stage 100 is the memory fully embedded
(the evaluation's only stage unless told otherwise).

Baseline (27 Nov 2026, search code of af80650), LoCoMo few-turns (3 turns per entity, 1,532
questions), recall@5 overall: lexical 0.726 at every stage; semantic 0 / 0.115 / 0.229 /
0.466 and hybrid 0.726 / 0.595 / 0.642 / 0.715 at 0 / 25 / 50 / 100. A memory part-embedded
is searched worse by hybrid than by words alone, and even fully embedded hybrid is under lexical at 5.
"""

from __future__ import annotations

from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.meaning import EMBED_BATCH

__all__ = ["FULL", "embed_until", "parse_stages", "stage_target", "waiting_texts"]

FULL = 100
"""The stage at which every waiting text is embedded."""


def parse_stages(text: str) -> tuple[int, ...]:
    """Stages written as "0,25,50,100": whole percentages, returned in rising order, once each.

    Raises:
        ValueError: a stage is not a whole number from 0 to 100, or none is given.
    """
    stages = set()
    for part in text.split(","):
        if not part.strip().isdigit() or not 0 <= int(part) <= FULL:
            raise ValueError(f"stage {part.strip()!r} is not a whole percentage from 0 to {FULL}")
        stages.add(int(part))
    return tuple(sorted(stages))


def waiting_texts(graph: KnowledgeGraph) -> int:
    """How many of the memory's texts wait for a vector (0 when it keeps none)."""
    vectors = graph.meaning.vectors
    return 0 if vectors is None or not graph.meaning.enabled else vectors.vector_progress().waiting


def stage_target(waiting: int, stage: int) -> int:
    """How many of `waiting` texts a stage has embedded (rounded down: stage 25 never overshoots)."""
    return waiting * stage // FULL


def embed_until(graph: KnowledgeGraph, wanted: int, embedded: int) -> int:
    """Embed the memory's waiting texts as its worker would until `wanted` are embedded.

    Args:
        embedded: how many are embedded already (by the stages before).

    Returns:
        How many are embedded now: `wanted`, or fewer if the queue ran dry first.
    """
    while embedded < wanted:
        # Full batches, as the worker takes them; the last one cut to land on the stage exactly
        # (a smaller claim still takes the newest texts, split between the two kinds alike).
        took = graph.embed_pending(min(EMBED_BATCH, wanted - embedded))
        if not took:
            break
        embedded += took
    return embedded
