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

`migrate` copies a whole memory into an empty one of any backend, record for record
(a SQLite file into PostgreSQL, say), history and all.

No MCP or click here: the command line (`cli.py`) supplies the warning and progress callbacks.
"""

from __future__ import annotations

from graphmem.transfer.atomic import write_atomically
from graphmem.transfer.exporter import _WRITERS as _WRITERS  # patched by tests/test_cli.py
from graphmem.transfer.exporter import EXPORT_FORMATS, ExportReport, export_graph
from graphmem.transfer.exporter import ExportFormat as ExportFormat  # used by cli.py, though not in __all__
from graphmem.transfer.importer import ImportReport, import_stream
from graphmem.transfer.migration import MigrationReport, TargetNotEmptyError, migrate

__all__ = [
    "EXPORT_FORMATS",
    "ExportReport",
    "ImportReport",
    "MigrationReport",
    "TargetNotEmptyError",
    "export_graph",
    "import_stream",
    "migrate",
    "write_atomically",
]
