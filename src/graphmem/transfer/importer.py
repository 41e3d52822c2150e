"""Importing a JSONL file or a JSON document into the graph, in chunks inside one transaction."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from itertools import chain
from typing import IO, Any, Literal

from graphmem.core.errors import ImportFormatError, InvalidInputError
from graphmem.core.models import Entity, Relation
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.secret_policy import NamesWithSecrets, Redaction
from graphmem.storage.jsonl.format import EntityRecord, OtherRecord, RelationRecord, decode_line, encode_value
from graphmem.transfer.json_document import DECODER, SECTIONS, document_items, looks_like_document
from graphmem.transfer.streams import LONE_SURROGATE, PROGRESS_BYTES, Progress, StreamError

__all__ = ["ImportReport", "Warn", "import_stream"]

# Records go to the store in chunks of this size: large enough that a statement is not
# paid per record, small enough that a huge file never sits in memory.
_CHUNK = 1000

_SQLITE_HEADER = b"SQLite format 3\x00"
_BOM = "\ufeff"

Warn = Callable[[str], None]


@dataclass(slots=True)
class ImportReport:
    """What an import read and what it changed."""

    format: Literal["jsonl", "json"] = "jsonl"
    entities_read: int = 0
    entities_new: int = 0
    relations_read: int = 0
    relations_new: int = 0
    observation_records: int = 0
    """Spec-003 observation lines (or items of a document's "observations" list)."""
    observations_added: int = 0
    orphan_observations: int = 0
    """Observation records skipped because their entity is neither in the file nor in memory."""
    invalid_lines: int = 0
    """Lines skipped as unreadable (only with `skip_invalid`)."""
    ignored_lines: int = 0
    """Records of another type, such as a fork's `{"type":"_aim"}` marker."""
    surrogates_replaced: int = 0
    redacted_names: list[Redaction] = field(default_factory=list)
    """Secrets taken out of entity names (the rest of what was redacted the graph says)."""

    @property
    def entities_merged(self) -> int:
        """Entity records whose name was in memory already (or earlier in the file)."""
        return self.entities_read - self.entities_new

    @property
    def relations_present(self) -> int:
        """Relation records that were in memory already (or earlier in the file)."""
        return self.relations_read - self.relations_new


class _Loader:
    """Feeds records to the graph in chunks; must run inside the store's write transaction."""

    def __init__(self, graph: KnowledgeGraph, report: ImportReport, warn: Warn) -> None:
        self.graph = graph
        self.report = report
        self.warn = warn
        self.entities: list[Entity] = []
        self.relations: list[Relation] = []
        # Observation records by entity name, with the line each came from.
        self.pending: dict[str, list[tuple[int, str]]] = {}
        self.pending_count = 0
        # Records whose entity was not in memory at a flush: its line may still come later
        # in the file, so they wait for the end (and keep their order with later ones).
        self.deferred: dict[str, list[tuple[int, str]]] = {}
        # A name holding a secret is imported redacted, so that import_graph merges by the name
        # the store keeps; two such names of different entities stay two.
        self.names = NamesWithSecrets(graph.secrets, self._in_memory)
        report.redacted_names = self.names.redacted

    def _in_memory(self, name: str) -> bool:
        return bool(self.graph.store.existing_names([name]))

    # Lone surrogates come from JSON escapes such as "\ud800": SQLite cannot store them
    # (they are not UTF-8), and the tools refuse them, so they become U+FFFD.
    def _clean_text(self, text: str) -> str:
        if text.isascii():
            return text
        cleaned, count = LONE_SURROGATE.subn("\ufffd", text)
        self.report.surrogates_replaced += count
        return cleaned

    def _clean_value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self._clean_text(value)
        if isinstance(value, list):
            return [self._clean_value(item) for item in value]
        if isinstance(value, dict):
            return {self._clean_text(key): self._clean_value(item) for key, item in value.items()}
        return value

    def _clean_extra(self, extra: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if extra is None else self._clean_value(extra)

    def entity(self, entity: Entity) -> None:
        self.report.entities_read += 1
        texts = "".join((entity.name, entity.entity_type, *entity.observations))
        if entity.extra is not None or (not texts.isascii() and LONE_SURROGATE.search(texts)):
            entity = Entity(
                self._clean_text(entity.name),
                self._clean_text(entity.entity_type),
                tuple(self._clean_text(content) for content in entity.observations),
                self._clean_extra(entity.extra),
                entity.project,
            )
        name = self.names(entity.name)
        self.entities.append(entity if name == entity.name else replace(entity, name=name))
        if len(self.entities) >= _CHUNK:
            self._flush_entities()

    def relation(self, relation: Relation) -> None:
        self.report.relations_read += 1
        texts = relation.from_ + relation.to + relation.relation_type
        if relation.extra is not None or (not texts.isascii() and LONE_SURROGATE.search(texts)):
            relation = Relation(
                self._clean_text(relation.from_),
                self._clean_text(relation.to),
                self._clean_text(relation.relation_type),
                self._clean_extra(relation.extra),
                relation.project,
            )
        from_, to = self.names(relation.from_), self.names(relation.to)
        if (from_, to) != (relation.from_, relation.to):
            relation = replace(relation, from_=from_, to=to)
        self.relations.append(relation)
        if len(self.relations) >= _CHUNK:
            self._flush_relations()

    def observation(self, line_no: int, name: str, content: str) -> None:
        self.report.observation_records += 1
        name, content = self.names(self._clean_text(name)), self._clean_text(content)
        target = self.deferred if name in self.deferred else self.pending
        target.setdefault(name, []).append((line_no, content))
        self.pending_count += 1
        if self.pending_count >= _CHUNK:
            self._flush_observations(final=False)

    def _flush_entities(self) -> None:
        if self.entities:
            new, _ = self.graph.import_graph(self.entities, ())
            self.report.entities_new += new
            self.entities = []

    def _flush_relations(self) -> None:
        if self.relations:
            _, new = self.graph.import_graph((), self.relations)
            self.report.relations_new += new
            self.relations = []

    def _flush_observations(self, *, final: bool) -> None:
        # The entities read so far must be in the store before we ask which names exist.
        self._flush_entities()
        batch = self.pending
        if final:
            batch = self.deferred
            for name, records in self.pending.items():
                batch.setdefault(name, []).extend(records)
        self.pending, self.pending_count = {}, 0
        if not batch:
            return
        present = self.graph.store.existing_names(list(batch))
        # An entity that exists gains the texts it lacks through import_graph's merge; the
        # type given here is never used, because the entity is not created.
        carriers = [
            Entity(name, "", tuple(content for _, content in records))
            for name, records in batch.items()
            if name in present
        ]
        self.graph.import_graph(carriers, ())
        missing = {name: records for name, records in batch.items() if name not in present}
        if final:
            self.deferred = {}
            for name, records in missing.items():
                self.report.orphan_observations += len(records)
                more = f" (and {len(records) - 1} more)" if len(records) > 1 else ""
                self.warn(
                    f"Line {records[0][0]}{more}: observation of {name!r} skipped: "
                    "no entity of that name in the file or in memory."
                )
        else:
            self.deferred.update(missing)

    def finish(self) -> None:
        self._flush_entities()
        self._flush_relations()
        self._flush_observations(final=True)


def _observation_fields(value: dict[str, Any], line_no: int) -> tuple[str, str]:
    name = value.get("entityName")
    content = value.get("content")
    if not isinstance(name, str):
        raise ImportFormatError(line_no, "an observation's 'entityName' must be a string.")
    if not isinstance(content, str):
        raise ImportFormatError(line_no, "an observation's 'content' must be a string.")
    return name, content


class _Reader:
    """One import: parses the input and hands each record to the loader."""

    def __init__(self, loader: _Loader, *, skip_invalid: bool, warn: Warn, progress: Progress | None) -> None:
        self.loader = loader
        self.report = loader.report
        self.skip_invalid = skip_invalid
        self.warn = warn
        self.progress = progress
        self.other_types: dict[str, None] = {}

    def invalid(self, error: ImportFormatError) -> None:
        """Stop on an unreadable record, or skip it with a warning when asked to."""
        if not self.skip_invalid:
            raise error
        self.report.invalid_lines += 1
        self.warn(f"{error} Skipped.")

    def other(self, value: dict[str, Any], line_no: int) -> None:
        kind = value.get("type")
        if kind == "observation":
            self.loader.observation(line_no, *_observation_fields(value, line_no))
        elif "type" not in value:
            raise ImportFormatError(
                line_no, 'no "type" key; a record is {"type":"entity",…}, {"type":"relation",…} or an observation.'
            )
        else:
            # Readers ignore records of types they do not know (the official server does too).
            self.report.ignored_lines += 1
            self.other_types[str(kind)] = None

    def lines(self, lines: Iterable[bytes]) -> None:
        loader = self.loader
        unreported = 0
        for line_no, raw in enumerate(lines, start=1):
            if self.progress is not None:
                unreported += len(raw)
                if unreported >= PROGRESS_BYTES:
                    self.progress(unreported)
                    unreported = 0
            try:
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise ImportFormatError(line_no, "not valid UTF-8.") from None
                if line_no == 1 and text.startswith(_BOM):
                    # A byte-order mark from a Windows editor is not part of the first record.
                    text = text[1:]
                record = decode_line(text, line_no)
                if isinstance(record, EntityRecord):
                    loader.entity(record.entity)
                elif isinstance(record, RelationRecord):
                    loader.relation(record.relation)
                elif isinstance(record, OtherRecord):
                    # Rare lines (observations, markers) are parsed a second time rather than
                    # slowing down every line: decode_line keeps only their text.
                    self.other(DECODER.decode(record.line.strip()), line_no)
            except ImportFormatError as error:
                self.invalid(error)
        if self.progress is not None and unreported:
            self.progress(unreported)

    def document(self, text: str) -> None:
        items = document_items(text)
        position = 0
        for section, start, line_no, value in items:
            if self.progress is not None and start - position >= PROGRESS_BYTES:
                # Characters, not bytes: close enough for a progress bar.
                self.progress(start - position)
                position = start
            try:
                self.item(section, value, line_no)
            except ImportFormatError as error:
                self.invalid(error)
        if self.progress is not None:
            self.progress(len(text) - position)

    def item(self, section: str, value: Any, line_no: int) -> None:
        kind = SECTIONS.get(section)
        if kind is None:
            self.warn(f"Line {line_no}: the document's key {section!r} is not part of a graph; ignored.")
            return
        if not isinstance(value, dict):
            raise ImportFormatError(line_no, f"an item of {section!r} must be a JSON object.")
        if value.get("type", kind) != kind:
            raise ImportFormatError(line_no, f"an item of {section!r} has type {value['type']!r}, not {kind!r}.")
        if kind == "observation":
            self.loader.observation(line_no, *_observation_fields(value, line_no))
            return
        # Through the JSONL line reader, so both formats accept exactly the same records.
        record = decode_line(encode_value({"type": kind, **value}), line_no)
        if isinstance(record, EntityRecord):
            self.loader.entity(record.entity)
        elif isinstance(record, RelationRecord):
            self.loader.relation(record.relation)

    def warn_ignored(self) -> None:
        if self.report.ignored_lines:
            kinds = ", ".join(repr(kind) for kind in list(self.other_types)[:5])
            self.warn(f"{self.report.ignored_lines} record(s) of other types ({kinds}) ignored.")
        if self.report.surrogates_replaced:
            self.warn(
                f"{self.report.surrogates_replaced} unpaired surrogate code point(s) replaced with U+FFFD: "
                "they are not valid text and cannot be stored."
            )


def import_stream(
    graph: KnowledgeGraph,
    stream: IO[bytes],
    *,
    skip_invalid: bool = False,
    warn: Warn | None = None,
    progress: Progress | None = None,
    indexing: Callable[[], None] | None = None,
) -> ImportReport:
    """Merge a JSONL file or a JSON document into the graph, in one transaction.

    Merging is `KnowledgeGraph.import_graph`'s: an entity whose name exists gains the
    observations it lacks, an existing relation is not repeated. Observation records
    join their entity's observations (their text kept exactly); their ids, `createdAt`
    and `version` are not kept yet.

    Args:
        graph: the memory to import into.
        stream: the file, opened in binary mode.
        skip_invalid: skip unreadable records with a warning instead of stopping.
        warn: called with each warning (one line, no prefix).
        progress: called with the number of bytes read since its last call.
        indexing: called once every record is read, when the search indexes are built
            and the transaction is committed (at a million entities, half the time).

    Raises:
        ImportFormatError: a record cannot be read (and `skip_invalid` is off); nothing imported.
        InvalidInputError: the input is not a JSONL file or JSON document at all.
    """
    report = ImportReport()
    say: Warn = warn or (lambda message: None)
    # The first lines decide the format; blank ones are kept so line numbers stay true.
    head: list[bytes] = []
    first = b""
    for raw in stream:
        head.append(raw)
        if raw.strip():
            first = raw
            break
    if first.startswith(_SQLITE_HEADER):
        raise InvalidInputError(
            "FILE",
            "this is a SQLite database, not a JSONL or JSON file; nothing was imported "
            "(to copy a graphmem memory, export it with `graphmem export` and import that).",
        )
    try:
        first_text = first.decode("utf-8").lstrip(_BOM)
    except UnicodeDecodeError:
        first_text = ""
    text: str | None = None
    if looks_like_document(first_text):
        # One JSON value: read whole, before the transaction, so the memory is not held
        # locked while a slow input arrives.
        report.format = "json"
        data = b"".join(head) + stream.read()
        try:
            text = data.decode("utf-8").removeprefix(_BOM)
        except UnicodeDecodeError as exc:
            line_no = data.count(b"\n", 0, exc.start) + 1
            raise InvalidInputError("FILE", f"Line {line_no}: not valid UTF-8; nothing was imported.") from None
    try:
        with graph.writing():
            before = graph.store.counts()
            with graph.store.bulk_insert():
                loader = _Loader(graph, report, say)
                reader = _Reader(loader, skip_invalid=skip_invalid, warn=say, progress=progress)
                if text is not None:
                    reader.document(text)
                else:
                    reader.lines(chain(head, _guarded(stream)))
                loader.finish()
                if indexing is not None:
                    indexing()
            # After the bulk insert: it brings the counts up to date as it ends.
            report.observations_added = graph.store.counts().observations - before.observations
    except StreamError as failed:
        raise failed.error from None
    reader.warn_ignored()
    return report


def _guarded(stream: IO[bytes]) -> Iterator[bytes]:
    try:
        yield from stream
    except OSError as error:
        raise StreamError(error) from error
