"""Exporting the graph as the official JSONL file, a pretty JSON document or a diagram."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any, Literal

from graphmem.core.models import Entity, Relation
from graphmem.core.timestamps import now_iso
from graphmem.domain.diagrams import dot_chunks, graphml_chunks, mermaid_chunks
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.validity import as_swept
from graphmem.storage.jsonl.format import encode_graph
from graphmem.transfer.streams import LONE_SURROGATE, PROGRESS_RECORDS, Progress, StreamError

__all__ = ["EXPORT_FORMATS", "ExportFormat", "ExportReport", "export_graph"]

ExportFormat = Literal["jsonl", "json", "mermaid", "dot", "graphml"]
EXPORT_FORMATS: tuple[ExportFormat, ...] = ("jsonl", "json", "mermaid", "dot", "graphml")

_PRETTY = json.JSONEncoder(ensure_ascii=False, indent=2, allow_nan=False)


@dataclass(frozen=True, slots=True)
class ExportReport:
    entities: int
    relations: int


def _escape_lone_surrogates(text: str) -> str:
    # json writes lone surrogates raw with ensure_ascii=False, which UTF-8 cannot encode;
    # escape them as JavaScript's JSON.stringify does.
    if not text.isascii() and LONE_SURROGATE.search(text):
        text = LONE_SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)
    return text


def _document_object(wire: dict[str, Any], item: Entity | Relation) -> dict[str, Any]:
    if item.extra:
        # Extra keys (a fork's aliases, createdAt, version) after the official ones, as in JSONL.
        wire.update((key, value) for key, value in item.extra.items() if key not in wire)
    if item.project:
        wire["project"] = item.project  # as a JSONL line keeps it (storage/jsonl/format.py)
    return wire


def _pretty_list(key: str, objects: Iterable[dict[str, Any]], last: bool) -> Iterator[str]:
    """One list of the pretty document, laid out exactly as `json.dumps(doc, indent=2)` does."""
    opened = f'  "{key}": ['
    for obj in objects:
        item = "    " + _escape_lone_surrogates(_PRETTY.encode(obj)).replace("\n", "\n    ")
        yield f"{opened}\n{item}"
        opened = ","
    closing = "\n" if last else ",\n"
    yield f"{opened}]{closing}" if opened.endswith("[") else f"\n  ]{closing}"


def _json_document(entities: Iterable[Entity], relations: Iterable[Relation]) -> Iterator[str]:
    yield "{\n"
    yield from _pretty_list("entities", (_document_object(e.to_wire(), e) for e in entities), last=False)
    yield from _pretty_list("relations", (_document_object(r.to_wire(), r) for r in relations), last=True)
    yield "}\n"


_WRITERS: dict[ExportFormat, Callable[[Iterable[Entity], Iterable[Relation]], Iterator[str]]] = {
    "jsonl": encode_graph,
    "json": _json_document,
    "mermaid": mermaid_chunks,
    "dot": dot_chunks,
    "graphml": graphml_chunks,
}


def export_graph(
    graph: KnowledgeGraph,
    out: IO[bytes],
    *,
    fmt: ExportFormat = "jsonl",
    progress: Progress | None = None,
    project: str | None = None,
) -> ExportReport:
    """Write the whole memory to `out`, from one consistent snapshot, without holding it in memory.

    `jsonl` is the official server's file, byte for byte: every entity line, then every
    relation line, each ending in a newline; keys it does not know follow its own. `json`
    is one document `{"entities": [...], "relations": [...]}` with a 2-space indent.
    `mermaid`, `dot` and `graphml` are diagrams (see `graphmem.domain.diagrams`).

    Args:
        progress: called with the number of records written since its last call.
        project: write this project's entities and relations alone (not the shared space's);
            every project's when None.
    """
    counts = [0, 0]

    def counted(items: Iterator[Any], which: int) -> Iterator[Any]:
        for item in items:
            counts[which] += 1
            yield item

    def write(text: str, *, flush: bool = False) -> None:
        try:
            out.write(text.encode("utf-8"))
            if flush:
                out.flush()
        except OSError as error:
            raise StreamError(error) from error

    try:
        with graph.reading():
            entity_iter, relation_iter = graph.iter_graph()
            # A fact whose validity ended is a past version, as a call would have made it (an
            # export only reads, and moves nothing).
            now = now_iso()
            entity_iter = (as_swept(entity, now) for entity in entity_iter)
            if project is not None:
                entity_iter = (entity for entity in entity_iter if entity.project == project)
                relation_iter = (relation for relation in relation_iter if relation.project == project)
            counted_entities, counted_relations = counted(entity_iter, 0), counted(relation_iter, 1)
            pieces = _WRITERS[fmt](counted_entities, counted_relations)
            batch: list[str] = []
            for piece in pieces:
                batch.append(piece)
                if len(batch) >= PROGRESS_RECORDS:
                    # Joined a thousand records at a time: one write call each, never the whole file.
                    write("".join(batch))
                    batch = []
                    if progress is not None:
                        progress(PROGRESS_RECORDS)
            write("".join(batch), flush=True)
            if progress is not None and batch:
                progress(len(batch))
    except StreamError as failed:
        raise failed.error from None
    return ExportReport(counts[0], counts[1])
