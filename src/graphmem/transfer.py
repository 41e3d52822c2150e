"""Moving a memory in and out of graphmem: reading and writing whole knowledge-graph files.

`import_stream` reads any of these, told apart by their content, never by the suffix:

    JSONL lines      the official memory file: {"type":"entity",…} and {"type":"relation",…}
                     lines (also the old `memory.json`, which was JSONL too), with any extra
                     keys a fork adds (`aliases`, `createdAt`, `version`), and the spec-003
                     fork's {"type":"observation","entityName":…,"content":…} lines
    JSON document    {"entities": […], "relations": […]}, compact or pretty: what read_graph
                     returns and what people exported by hand (an "observations" list of
                     fork observation records is read too)

Records are fed to `KnowledgeGraph.import_graph` in chunks inside one write transaction,
so a file of any size is imported whole or not at all, with its merging rules. JSONL is
streamed line by line; a JSON document is read whole (it is one value).

`export_graph` writes the memory as the official server's JSONL file, byte for byte, or as
one pretty JSON document, streaming from one read snapshot. `write_atomically` puts any
output in place with a temp file and a rename.

No MCP or click here: the command line (`cli.py`) supplies the warning and progress callbacks.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import IO, Any, Literal, NoReturn, TypeVar

from graphmem.diagrams import dot_chunks, graphml_chunks, mermaid_chunks
from graphmem.errors import ImportFormatError, InvalidInputError
from graphmem.graph import KnowledgeGraph
from graphmem.models import Entity, Relation
from graphmem.storage.jsonl_format import (
    EntityRecord,
    OtherRecord,
    RelationRecord,
    decode_line,
    encode_graph,
    encode_value,
)

__all__ = [
    "EXPORT_FORMATS",
    "ExportReport",
    "ImportReport",
    "export_graph",
    "import_stream",
    "write_atomically",
]

T = TypeVar("T")

ExportFormat = Literal["jsonl", "json", "mermaid", "dot", "graphml"]
EXPORT_FORMATS: tuple[ExportFormat, ...] = ("jsonl", "json", "mermaid", "dot", "graphml")

# Records go to the store in chunks of this size: large enough that a statement is not
# paid per record, small enough that a huge file never sits in memory.
_CHUNK = 1000

# Progress is reported at most once per this many bytes or records: a progress bar
# redraws on every update, which would cost more than the import itself.
_PROGRESS_BYTES = 1 << 20
_PROGRESS_RECORDS = 1000

_SQLITE_HEADER = b"SQLite format 3\x00"
_BOM = "\ufeff"
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_JSON_WHITESPACE = re.compile(r"[ \t\n\r]*")
# The start of a JSON document rather than a JSONL record: a lone "{" (pretty printed)
# or an object whose first key is one of the document's lists.
_DOCUMENT_START = re.compile(r'\{\s*(?:$|"(?:entities|relations|observations)"\s*:)')
# The lists of a JSON document and the record type of their items.
_SECTIONS = {"entities": "entity", "relations": "relation", "observations": "observation"}

Progress = Callable[[int], None]
Warn = Callable[[str], None]


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text} is out of range")
    return value


# The same strictness as the JSONL reader: only what JavaScript's JSON.parse accepts, so
# nothing is imported that the official server could not load back.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)
_PRETTY = json.JSONEncoder(ensure_ascii=False, indent=2, allow_nan=False)


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

    @property
    def entities_merged(self) -> int:
        """Entity records whose name was in memory already (or earlier in the file)."""
        return self.entities_read - self.entities_new

    @property
    def relations_present(self) -> int:
        """Relation records that were in memory already (or earlier in the file)."""
        return self.relations_read - self.relations_new


@dataclass(frozen=True, slots=True)
class ExportReport:
    entities: int
    relations: int


# -- import -------------------------------------------------------------------------------


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

    # Lone surrogates come from JSON escapes such as "\ud800": SQLite cannot store them
    # (they are not UTF-8), and the tools refuse them, so they become U+FFFD.
    def _clean_text(self, text: str) -> str:
        if text.isascii():
            return text
        cleaned, count = _LONE_SURROGATE.subn("\ufffd", text)
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
        if entity.extra is not None or (not texts.isascii() and _LONE_SURROGATE.search(texts)):
            entity = Entity(
                self._clean_text(entity.name),
                self._clean_text(entity.entity_type),
                tuple(self._clean_text(content) for content in entity.observations),
                self._clean_extra(entity.extra),
            )
        self.entities.append(entity)
        if len(self.entities) >= _CHUNK:
            self._flush_entities()

    def relation(self, relation: Relation) -> None:
        self.report.relations_read += 1
        texts = relation.from_ + relation.to + relation.relation_type
        if relation.extra is not None or (not texts.isascii() and _LONE_SURROGATE.search(texts)):
            relation = Relation(
                self._clean_text(relation.from_),
                self._clean_text(relation.to),
                self._clean_text(relation.relation_type),
                self._clean_extra(relation.extra),
            )
        self.relations.append(relation)
        if len(self.relations) >= _CHUNK:
            self._flush_relations()

    def observation(self, line_no: int, name: str, content: str) -> None:
        self.report.observation_records += 1
        name, content = self._clean_text(name), self._clean_text(content)
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
                if unreported >= _PROGRESS_BYTES:
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
                    self.other(_DECODER.decode(record.line.strip()), line_no)
            except ImportFormatError as error:
                self.invalid(error)
        if self.progress is not None and unreported:
            self.progress(unreported)

    def document(self, text: str) -> None:
        items = _document_items(text)
        position = 0
        for section, start, line_no, value in items:
            if self.progress is not None and start - position >= _PROGRESS_BYTES:
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
        kind = _SECTIONS.get(section)
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


class _Positions:
    """Line numbers of offsets into a text, for offsets that only grow."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.offset = 0
        self.line = 1

    def line_of(self, offset: int) -> int:
        if offset < self.offset:
            # Rare (an error reported at an earlier offset): count from the start.
            self.offset, self.line = 0, 1
        self.line += self.text.count("\n", self.offset, offset)
        self.offset = offset
        return self.line


def _document_items(text: str) -> Iterator[tuple[str, int, int, Any]]:
    """Each item of the document's lists: (key, offset, line number, value).

    Walks the top-level object by hand, not with one `json.loads`, so an item that is not a
    record can be reported with its line and skipped. A key that is not a list yields the
    key's value once. A syntax error ends the walk, since nothing after it can be trusted.

    Raises:
        InvalidInputError: the text is not one JSON object.
    """
    positions = _Positions(text)

    def skip(offset: int) -> int:
        match = _JSON_WHITESPACE.match(text, offset)
        return match.end() if match else offset

    def fail(offset: int, reason: str) -> NoReturn:
        raise InvalidInputError(
            "FILE",
            f"Line {positions.line_of(offset)}: {reason} A JSON document cannot be read past a syntax error; "
            "nothing was imported.",
        )

    def value_at(offset: int) -> tuple[Any, int]:
        try:
            return _DECODER.raw_decode(text, offset)
        except json.JSONDecodeError as exc:
            fail(exc.pos, f"not valid JSON ({exc.msg}).")
        except (ValueError, RecursionError) as exc:
            fail(offset, f"not valid JSON ({exc}).")

    def expect(offset: int, chars: str, what: str) -> int:
        char = text[offset : offset + 1]
        if not char or char not in chars:
            fail(offset, f"expected {what}.")
        return offset

    pos = expect(skip(0), "{", "a JSON object")
    pos = skip(pos + 1)
    if text[pos : pos + 1] == "}":
        pos += 1
    else:
        while True:
            key, pos = value_at(expect(pos, '"', "a key in double quotes"))
            pos = skip(expect(skip(pos), ":", "':'") + 1)
            if key in _SECTIONS and text[pos : pos + 1] == "[":
                pos = skip(pos + 1)
                if text[pos : pos + 1] == "]":
                    pos += 1
                else:
                    while True:
                        start = pos
                        value, pos = value_at(pos)
                        yield key, start, positions.line_of(start), value
                        pos = expect(skip(pos), ",]", "',' or ']'")
                        closing = text[pos] == "]"
                        pos = skip(pos + 1)
                        if closing:
                            break
            else:
                start = pos
                value, pos = value_at(pos)
                if key in _SECTIONS:
                    fail(start, f"{key!r} must be a list.")
                yield key, start, positions.line_of(start), value
            pos = expect(skip(pos), ",}", "',' or '}'")
            closing = text[pos] == "}"
            pos = skip(pos + 1)
            if closing:
                break
    if skip(pos) != len(text):
        fail(skip(pos), "extra data after the JSON document.")


def _looks_like_document(first_line: str) -> bool:
    text = first_line.strip()
    try:
        value = _DECODER.decode(text)
    except (ValueError, RecursionError):
        return _DOCUMENT_START.match(text) is not None
    return isinstance(value, dict) and "type" not in value and any(key in value for key in _SECTIONS)


def import_stream(
    graph: KnowledgeGraph,
    stream: IO[bytes],
    *,
    skip_invalid: bool = False,
    warn: Warn | None = None,
    progress: Progress | None = None,
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
    if _looks_like_document(first_text):
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
        with graph.store.write():
            before = graph.store.counts()
            loader = _Loader(graph, report, say)
            reader = _Reader(loader, skip_invalid=skip_invalid, warn=say, progress=progress)
            if text is not None:
                reader.document(text)
            else:
                reader.lines(chain(head, _guarded(stream)))
            loader.finish()
            report.observations_added = graph.store.counts().observations - before.observations
    except _StreamError as failed:
        raise failed.error from None
    reader.warn_ignored()
    return report


class _StreamError(Exception):
    """Carries an OSError of the input or output file through a store transaction.

    The stores turn every OSError raised inside a transaction into a StorageError about
    the memory file; a failure of the file being imported or written is not that.
    """

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


def _guarded(stream: IO[bytes]) -> Iterator[bytes]:
    try:
        yield from stream
    except OSError as error:
        raise _StreamError(error) from error


# -- export -------------------------------------------------------------------------------


def _escape_lone_surrogates(text: str) -> str:
    # json writes lone surrogates raw with ensure_ascii=False, which UTF-8 cannot encode;
    # escape them as JavaScript's JSON.stringify does.
    if not text.isascii() and _LONE_SURROGATE.search(text):
        text = _LONE_SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)
    return text


def _document_object(wire: dict[str, Any], extra: dict[str, Any] | None) -> dict[str, Any]:
    if extra:
        # Extra keys (a fork's aliases, createdAt, version) after the official ones, as in JSONL.
        wire.update((key, value) for key, value in extra.items() if key not in wire)
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
    yield from _pretty_list("entities", (_document_object(e.to_wire(), e.extra) for e in entities), last=False)
    yield from _pretty_list("relations", (_document_object(r.to_wire(), r.extra) for r in relations), last=True)
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
) -> ExportReport:
    """Write the whole memory to `out`, from one consistent snapshot, without holding it in memory.

    `jsonl` is the official server's file, byte for byte: every entity line, then every
    relation line, each ending in a newline; keys it does not know follow its own. `json`
    is one document `{"entities": [...], "relations": [...]}` with a 2-space indent.
    `mermaid`, `dot` and `graphml` are diagrams (see `graphmem.diagrams`).

    Args:
        progress: called with the number of records written since its last call.
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
            raise _StreamError(error) from error

    try:
        with graph.store.read():
            entity_iter, relation_iter = graph.iter_graph()
            counted_entities, counted_relations = counted(entity_iter, 0), counted(relation_iter, 1)
            pieces = _WRITERS[fmt](counted_entities, counted_relations)
            batch: list[str] = []
            for piece in pieces:
                batch.append(piece)
                if len(batch) >= _PROGRESS_RECORDS:
                    # Joined a thousand records at a time: one write call each, never the whole file.
                    write("".join(batch))
                    batch = []
                    if progress is not None:
                        progress(_PROGRESS_RECORDS)
            write("".join(batch), flush=True)
            if progress is not None and batch:
                progress(len(batch))
    except _StreamError as failed:
        raise failed.error from None
    return ExportReport(counts[0], counts[1])


def write_atomically(path: Path, write: Callable[[IO[bytes]], T]) -> T:
    """Call `write` on a temp file beside `path`, then rename it over `path`.

    A failure (or a crash) leaves `path` as it was. A new file is readable by its owner
    only, as the memory it comes from; a file that is replaced keeps its mode. A path that
    is not a regular file (a pipe, `/dev/stdout`) cannot be replaced and is written in place.
    """
    # Through a symlink to the real file: renaming over the link would cut it.
    target = Path(os.path.realpath(path))
    try:
        status = os.stat(target)
    except FileNotFoundError:
        mode = 0o600
    else:
        if not stat.S_ISREG(status.st_mode):
            with open(target, "wb") as device:
                return write(device)
        mode = stat.S_IMODE(status.st_mode)
    fd, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as temp:
            os.fchmod(temp.fileno(), mode)
            result = write(temp)
            temp.flush()
            os.fsync(temp.fileno())
        os.replace(temp_name, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise
    _fsync_directory(target.parent)
    return result


def _fsync_directory(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as exc:
        # Some file systems cannot fsync a directory; the rename is then as durable as they allow.
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP):
            raise
    finally:
        os.close(fd)
