"""The command line, in process through click's CliRunner, on real files in a temporary folder."""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import graphmem.storage.sqlite.store
import graphmem.transfer
from graphmem.cli import cli
from graphmem.config import Settings
from graphmem.core.errors import StorageError
from graphmem.core.models import Entity, Relation
from graphmem.domain.graph import KnowledgeGraph
from graphmem.storage import open_store
from tests.test_project_resolution import GIT_ENV, repository

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "cli"
OFFICIAL = FIXTURES / "official.jsonl"


def run(*args: object, env: dict[str, str] | None = None, input: bytes | None = None) -> Result:
    result = CliRunner().invoke(cli, [str(arg) for arg in args], env=env, input=input)
    # A traceback is a bug: every error must leave as a ClickException (exit 1, one line).
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def read_memory(path: Path) -> tuple[list[Entity], list[Relation]]:
    store = open_store(Settings(memory_path=path))
    try:
        graph = KnowledgeGraph(store).read_graph()
    finally:
        store.close()
    return list(graph.entities), list(graph.relations)


def one_line_error(result: Result) -> str:
    assert result.exit_code == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Error: ")
    return lines[0]


# -- import: formats ----------------------------------------------------------------------


def test_official_jsonl_imported_then_exported_as_jsonl_gives_the_same_bytes(tmp_path):
    memory = tmp_path / "memory.db"
    imported = run("import", OFFICIAL, "--memory-file", memory)
    assert imported.exit_code == 0, imported.output
    assert "entities: 3 read, 3 new, 0 merged" in imported.stdout
    assert "relations: 3 read, 3 new, 0 already present" in imported.stdout
    exported = run("export", "--memory-file", memory)
    assert exported.exit_code == 0
    assert exported.stdout_bytes == OFFICIAL.read_bytes()


def test_a_file_without_the_final_newline_of_the_2026_8_31_release_imports_the_same(tmp_path):
    source = tmp_path / "memory.jsonl"
    source.write_bytes(OFFICIAL.read_bytes().rstrip(b"\n"))
    memory = tmp_path / "memory.db"
    assert run("import", source, "-f", memory).exit_code == 0
    assert run("export", "-f", memory).stdout_bytes == OFFICIAL.read_bytes()


def test_import_into_a_jsonl_memory_writes_the_official_file(tmp_path):
    memory = tmp_path / "memory.jsonl"
    assert run("import", OFFICIAL, "-f", memory).exit_code == 0
    assert memory.read_bytes() == OFFICIAL.read_bytes()
    assert run("export", "-f", memory).stdout_bytes == OFFICIAL.read_bytes()


def test_a_legacy_json_memory_file_with_crlf_blank_lines_and_a_bom_is_read_as_jsonl(tmp_path):
    memory = tmp_path / "memory.db"
    result = run("import", FIXTURES / "legacy-memory.json", "-f", memory)
    assert result.exit_code == 0, result.output
    assert "(JSONL)" in result.stdout
    entities, relations = read_memory(memory)
    assert entities == [Entity("Alice", "person", ("Works at Acme",)), Entity("Acme", "organization")]
    assert relations == [Relation("Alice", "Acme", "works_at")]


def test_a_pretty_json_document_is_imported(tmp_path):
    memory = tmp_path / "memory.db"
    result = run("import", FIXTURES / "document.json", "-f", memory)
    assert result.exit_code == 0, result.output
    assert "(JSON document)" in result.stdout
    entities, relations = read_memory(memory)
    assert entities == [Entity("Alice", "person", ("Works at Acme", "Likes tea")), Entity("Acme", "organization")]
    assert relations == [Relation("Alice", "Acme", "works_at")]


def test_the_format_is_told_from_the_content_not_the_suffix(tmp_path):
    document = tmp_path / "looks-like-lines.jsonl"
    document.write_text(
        json.dumps({"entities": [{"name": "A", "entityType": "t", "observations": []}], "relations": []}),
        encoding="utf-8",
    )
    lines = tmp_path / "looks-like-a-document.json"
    lines.write_bytes(OFFICIAL.read_bytes())
    first, second = tmp_path / "one.db", tmp_path / "two.db"
    assert "(JSON document)" in run("import", document, "-f", first).stdout
    assert "(JSONL)" in run("import", lines, "-f", second).stdout
    assert read_memory(first)[0] == [Entity("A", "t")]
    assert len(read_memory(second)[0]) == 3


def test_the_fork_format_keeps_aliases_created_at_and_version_and_its_observation_texts(tmp_path):
    memory = tmp_path / "memory.db"
    result = run("import", FIXTURES / "fork.jsonl", "-f", memory)
    assert result.exit_code == 0, result.output
    assert "3 observation records read" in result.stdout
    entities, relations = read_memory(memory)
    ella, doctor = entities
    assert ella.observations == ("[2025-04-08T10:00:00Z] [S:Active] 状态: 健康", "喜欢读书")
    assert ella.extra == {"aliases": ["艾拉"], "createdAt": "2025-04-08T10:04:39.028Z", "version": 1}
    assert doctor.observations == ("[S:Background] 曾是研究员",)
    assert doctor.extra == {"aliases": [], "createdAt": "2025-04-08T10:04:40.112Z", "version": 2}
    assert relations[0].extra == {"createdAt": "2025-04-08T10:04:41.347Z", "version": 1}
    exported = run("export", "-f", memory).stdout.splitlines()
    assert exported[0] == (
        '{"type":"entity","name":"Character-艾拉","entityType":"Character",'
        '"observations":["[2025-04-08T10:00:00Z] [S:Active] 状态: 健康","喜欢读书"],'
        '"aliases":["艾拉"],"createdAt":"2025-04-08T10:04:39.028Z","version":1}'
    )
    assert exported[2] == (
        '{"type":"relation","from":"Character-艾拉","to":"Character-博士","relationType":"认识",'
        '"createdAt":"2025-04-08T10:04:41.347Z","version":1}'
    )


def test_an_observation_line_before_its_entity_line_still_joins_it_in_file_order(tmp_path):
    source = tmp_path / "fork.jsonl"
    source.write_text(
        '{"type":"observation","id":"o1","entityName":"A","content":"first"}\n'
        '{"type":"entity","name":"A","entityType":"t"}\n'
        '{"type":"observation","id":"o2","entityName":"A","content":"second"}\n',
        encoding="utf-8",
    )
    memory = tmp_path / "memory.db"
    assert run("import", source, "-f", memory).exit_code == 0
    assert read_memory(memory)[0][0].observations == ("first", "second")


def test_an_observation_of_a_missing_entity_creates_nothing_and_warns(tmp_path):
    source = tmp_path / "fork.jsonl"
    source.write_text(
        '{"type":"entity","name":"A","entityType":"t"}\n'
        '{"type":"observation","id":"o1","entityName":"Ghost","content":"boo"}\n',
        encoding="utf-8",
    )
    memory = tmp_path / "memory.db"
    result = run("import", source, "-f", memory)
    assert result.exit_code == 0
    assert "warning: Line 2: observation of 'Ghost' skipped" in result.stderr
    assert "1 without their entity skipped" in result.stdout
    assert read_memory(memory)[0] == [Entity("A", "t")]


def test_an_observation_of_an_entity_already_in_memory_is_added_to_it(tmp_path):
    memory = tmp_path / "memory.db"
    run("import", OFFICIAL, "-f", memory)
    source = tmp_path / "fork.jsonl"
    source.write_text('{"type":"observation","id":"o1","entityName":"Acme","content":"Moved"}\n', encoding="utf-8")
    assert run("import", source, "-f", memory).exit_code == 0
    acme = next(entity for entity in read_memory(memory)[0] if entity.name == "Acme")
    assert acme.observations == ("Makes anvils", "Moved")


def test_import_merges_observations_into_existing_entities_and_never_repeats_a_relation(tmp_path):
    memory = tmp_path / "memory.db"
    run("import", OFFICIAL, "-f", memory)
    source = tmp_path / "more.jsonl"
    source.write_text(
        '{"type":"entity","name":"Acme","entityType":"ignored","observations":["Makes anvils","Hires"]}\n'
        '{"type":"entity","name":"Carol","entityType":"person","observations":[]}\n'
        '{"type":"relation","from":"Alice","to":"Acme","relationType":"works_at"}\n',
        encoding="utf-8",
    )
    result = run("import", source, "-f", memory)
    assert "entities: 2 read, 1 new, 1 merged into existing ones" in result.stdout
    assert "relations: 1 read, 0 new, 1 already present" in result.stdout
    assert "observations: 1 added" in result.stdout
    entities, relations = read_memory(memory)
    assert Entity("Acme", "organization", ("Makes anvils", "Hires")) in entities
    assert len(relations) == 3


def test_a_json_document_from_the_fork_with_an_observations_list_is_imported(tmp_path):
    source = tmp_path / "read_graph.json"
    source.write_text(
        json.dumps(
            {
                "entities": [{"name": "A", "entityType": "t", "aliases": ["Ay"]}],
                "relations": [],
                "observations": [{"id": "o1", "entityName": "A", "content": "[S:Active] here"}],
            },
            indent=2,
        ),
        encoding="utf-8",
    )
    memory = tmp_path / "memory.db"
    assert run("import", source, "-f", memory).exit_code == 0
    (entity,) = read_memory(memory)[0]
    assert entity.observations == ("[S:Active] here",)
    assert entity.extra == {"aliases": ["Ay"]}


def test_import_reads_standard_input_given_as_a_dash(tmp_path):
    memory = tmp_path / "memory.db"
    result = run("import", "-", "-f", memory, input=OFFICIAL.read_bytes())
    assert result.exit_code == 0, result.output
    assert "Imported standard input" in result.stdout
    assert run("export", "-f", memory).stdout_bytes == OFFICIAL.read_bytes()


def test_lone_surrogates_are_replaced_with_the_replacement_character_and_counted(tmp_path):
    source = tmp_path / "odd.jsonl"
    source.write_text(
        '{"type":"entity","name":"A\\ud800","entityType":"t","observations":["x\\udc00y","fine 🎉"]}\n'
        '{"type":"relation","from":"A\\ud800","to":"B","relationType":"r"}\n',
        encoding="utf-8",
    )
    memory = tmp_path / "memory.db"
    result = run("import", source, "-f", memory)
    assert result.exit_code == 0, result.output
    assert "warning: 3 unpaired surrogate code point(s) replaced with U+FFFD" in result.stderr
    entities, relations = read_memory(memory)
    assert entities == [Entity("A\ufffd", "t", ("x\ufffdy", "fine 🎉"))]
    assert relations == [Relation("A\ufffd", "B", "r")]


def test_records_of_other_types_are_ignored_with_one_warning(tmp_path):
    source = tmp_path / "aim.jsonl"
    source.write_text(
        '{"type":"_aim","source":"mcp-knowledge-graph"}\n{"type":"entity","name":"A","entityType":"t"}\n',
        encoding="utf-8",
    )
    result = run("import", source, "-f", tmp_path / "memory.db")
    assert result.exit_code == 0
    assert "warning: 1 record(s) of other types ('_aim') ignored." in result.stderr


def test_an_empty_file_imports_nothing(tmp_path):
    source = tmp_path / "empty.jsonl"
    source.write_bytes(b"\n  \n")
    result = run("import", source, "-f", tmp_path / "memory.db")
    assert result.exit_code == 0
    assert "entities: 0 read" in result.stdout


# -- import: errors -----------------------------------------------------------------------


def test_an_invalid_line_stops_the_import_naming_the_file_and_line_and_imports_nothing(tmp_path):
    memory = tmp_path / "memory.db"
    error = one_line_error(run("import", FIXTURES / "invalid.jsonl", "-f", memory))
    assert "invalid.jsonl: Line 3: not valid JSON" in error
    assert "Nothing was imported" in error and "--skip-invalid" in error
    assert read_memory(memory) == ([], [])


def test_skip_invalid_skips_each_bad_line_with_a_warning_and_counts_them(tmp_path):
    memory = tmp_path / "memory.db"
    result = run("import", FIXTURES / "invalid.jsonl", "-f", memory, "--skip-invalid")
    assert result.exit_code == 0
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert [line.split(":")[1].strip() for line in warnings] == ["Line 3", "Line 5"]
    assert "skipped: 2 invalid line(s)" in result.stdout
    assert read_memory(memory) == ([Entity("Alice", "person", ("a",))], [Relation("Alice", "Acme", "works_at")])


def test_a_line_that_is_not_utf8_is_reported_by_number(tmp_path):
    source = tmp_path / "latin1.jsonl"
    source.write_bytes(b'{"type":"entity","name":"A","entityType":"t"}\n{"type":"entity","name":"\xe9"}\n')
    error = one_line_error(run("import", source, "-f", tmp_path / "memory.db"))
    assert "Line 2: not valid UTF-8" in error


def test_a_json_document_with_a_syntax_error_fails_with_its_line(tmp_path):
    source = tmp_path / "broken.json"
    source.write_text('{\n  "entities": [\n    {"name": "A",}\n  ]\n}\n', encoding="utf-8")
    memory = tmp_path / "memory.db"
    error = one_line_error(run("import", source, "-f", memory, "--skip-invalid"))
    assert "broken.json: Line 3: not valid JSON" in error
    assert read_memory(memory) == ([], [])


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda tmp: tmp / "missing.jsonl", "Cannot read {path}: No such file or directory."),
        (lambda tmp: tmp, "Cannot read {path}: Is a directory."),
        (lambda tmp: tmp / "memory.db", "{path} is the memory file itself"),
    ],
    ids=["missing", "directory", "the-memory-itself"],
)
def test_an_unusable_file_gives_one_line_and_exit_code_1(tmp_path, make, expected):
    path = make(tmp_path)
    error = one_line_error(run("import", path, "-f", tmp_path / "memory.db"))
    assert expected.format(path=path) in error


def test_a_missing_file_does_not_create_an_empty_memory(tmp_path):
    run("import", tmp_path / "missing.jsonl", "-f", tmp_path / "memory.db")
    assert not (tmp_path / "memory.db").exists()


def test_a_sqlite_database_given_as_file_is_recognised(tmp_path):
    other = tmp_path / "other.db"
    run("import", OFFICIAL, "-f", other)
    error = one_line_error(run("import", other, "-f", tmp_path / "memory.db"))
    assert "other.db: this is a SQLite database, not a JSONL or JSON file" in error


def test_a_locked_memory_gives_one_line_and_imports_nothing(tmp_path, monkeypatch):
    memory = tmp_path / "memory.db"
    run("stats", "-f", memory)  # creates the schema before another connection takes the lock
    monkeypatch.setattr(graphmem.storage.sqlite.store, "BUSY_TIMEOUT_SECONDS", 0.05)
    holder = sqlite3.connect(memory, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        error = one_line_error(run("import", OFFICIAL, "-f", memory))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert "locked by another process" in error
    assert read_memory(memory) == ([], [])


# -- export -------------------------------------------------------------------------------


def test_jsonl_export_is_what_the_official_server_writes_for_the_same_graph(tmp_path):
    memory = tmp_path / "memory.db"
    store = open_store(Settings(memory_path=memory))
    graph = KnowledgeGraph(store)
    # Imported without metadata, as the official server holds it.
    graph.import_graph(
        [Entity("Zoë", "person", ('says "hi"\n', "\u2028 and 🎉")), Entity("B", "t")], [Relation("Zoë", "B", "knows")]
    )
    store.close()
    # JSON.stringify's bytes, as Python writes them: compact, non-ASCII raw, official key order.
    expected = "".join(
        json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
        for record in (
            {"type": "entity", "name": "Zoë", "entityType": "person", "observations": ['says "hi"\n', "\u2028 and 🎉"]},
            {"type": "entity", "name": "B", "entityType": "t", "observations": []},
            {"type": "relation", "from": "Zoë", "to": "B", "relationType": "knows"},
        )
    ).encode("utf-8")
    assert run("export", "-f", memory, "--format", "jsonl").stdout_bytes == expected


def test_json_export_is_one_indented_document_that_imports_back_to_the_same_graph(tmp_path):
    memory = tmp_path / "memory.db"
    run("import", FIXTURES / "fork.jsonl", "-f", memory)
    run("import", OFFICIAL, "-f", memory)
    exported = run("export", "-f", memory, "--format", "json").stdout
    document = json.loads(exported)
    assert exported == json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    assert document["entities"][0]["aliases"] == ["艾拉"]
    copy = tmp_path / "document.json"
    copy.write_text(exported, encoding="utf-8")
    again = tmp_path / "again.db"
    assert run("import", copy, "-f", again).exit_code == 0
    assert run("export", "-f", again).stdout_bytes == run("export", "-f", memory).stdout_bytes


def test_json_export_of_an_empty_memory_is_an_empty_document(tmp_path):
    memory = tmp_path / "memory.db"
    run("stats", "-f", memory)
    assert run("export", "-f", memory, "--format", "json").stdout == '{\n  "entities": [],\n  "relations": []\n}\n'
    assert run("export", "-f", memory).stdout_bytes == b""


@pytest.mark.filterwarnings("ignore:.* deprecated - use:DeprecationWarning")  # pydot's old pyparsing names
def test_diagram_exports_are_read_by_real_parsers(tmp_path):
    import networkx
    import pydot

    memory = tmp_path / "memory.db"
    run("import", OFFICIAL, "-f", memory)
    entities, relations = read_memory(memory)
    (dot,) = pydot.graph_from_dot_data(run("export", "-f", memory, "--format", "dot").stdout)
    assert len(dot.get_nodes()) >= len(entities) and len(dot.get_edges()) == len(relations)
    graphml = tmp_path / "memory.graphml"
    assert run("export", "-f", memory, "--format", "graphml", "-o", graphml).exit_code == 0
    read = networkx.read_graphml(graphml)
    assert {data["name"] for _, data in read.nodes(data=True)} >= {entity.name for entity in entities}
    mermaid = run("export", "-f", memory, "--format", "mermaid").stdout
    assert mermaid.startswith("graph LR\n") and mermaid.count(" -->|") == len(relations)


def test_export_to_a_file_replaces_it_whole_and_leaves_no_temp_file(tmp_path):
    memory = tmp_path / "memory.db"
    run("import", OFFICIAL, "-f", memory)
    target = tmp_path / "out" / "export.jsonl"
    target.parent.mkdir()
    target.write_bytes(b"old content")
    result = run("export", "-f", memory, "-o", target)
    assert result.exit_code == 0
    assert "Wrote 3 entities and 3 relations" in result.stdout
    assert target.read_bytes() == OFFICIAL.read_bytes()
    assert sorted(path.name for path in target.parent.iterdir()) == ["export.jsonl"]


def test_an_export_that_fails_midway_leaves_the_previous_file_untouched(tmp_path, monkeypatch):
    memory = tmp_path / "memory.db"
    run("import", OFFICIAL, "-f", memory)
    target = tmp_path / "export.jsonl"
    target.write_bytes(b"previous export")

    def failing_encoder(entities, relations):
        yield "a first line\n"
        raise StorageError("The memory database failed (disk I/O error); nothing was changed.")

    monkeypatch.setitem(graphmem.transfer._WRITERS, "jsonl", failing_encoder)
    error = one_line_error(run("export", "-f", memory, "-o", target))
    assert error == "Error: The memory database failed (disk I/O error); nothing was changed."
    assert target.read_bytes() == b"previous export"
    assert [path.name for path in tmp_path.iterdir() if path.name.endswith(".tmp")] == []


def test_an_output_file_that_cannot_be_written_is_named_in_the_error(tmp_path, monkeypatch):
    memory = tmp_path / "memory.db"
    run("import", OFFICIAL, "-f", memory)
    target = tmp_path / "export.jsonl"

    def full_disk(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    error = one_line_error(run("export", "-f", memory, "-o", target))
    assert error == f"Error: Cannot write {target}: No space left on device."
    assert [path.name for path in tmp_path.iterdir() if not path.name.startswith("memory.db")] == []


def test_export_refuses_to_overwrite_the_memory_file(tmp_path):
    memory = tmp_path / "memory.jsonl"
    run("import", OFFICIAL, "-f", memory)
    error = one_line_error(run("export", "-f", memory, "-o", memory))
    assert "is the memory file itself; refusing to overwrite it" in error
    assert memory.read_bytes() == OFFICIAL.read_bytes()


def test_export_of_a_memory_that_does_not_exist_fails_without_creating_it(tmp_path):
    memory = tmp_path / "nowhere.db"
    error = one_line_error(run("export", "-f", memory))
    assert "There is no memory at" in error
    assert not memory.exists()


def test_progress_goes_to_stderr_and_never_into_the_exported_data(tmp_path):
    memory = tmp_path / "memory.db"
    imported = run("import", OFFICIAL, "-f", memory, "--progress")
    assert "Importing" in imported.stderr and "Importing" not in imported.stdout
    exported = run("export", "-f", memory, "--progress")
    assert "Exporting" in exported.stderr
    assert exported.stdout_bytes == OFFICIAL.read_bytes()
    assert run("export", "-f", memory, "--no-progress").stderr == ""


def test_an_import_with_progress_says_when_reading_is_done_and_indexing_begins(tmp_path):
    shown = run("import", OFFICIAL, "-f", tmp_path / "shown.db", "--progress").stderr
    assert shown.index("Importing") < shown.index("building the search indexes")
    assert (
        "building the search indexes"
        not in run("import", OFFICIAL, "-f", tmp_path / "quiet.db", "--no-progress").stderr
    )


# -- info, stats, configuration -----------------------------------------------------------


@pytest.mark.parametrize(("name", "backend"), [("memory.db", "sqlite"), ("memory.jsonl", "jsonl")])
def test_info_prints_the_configured_path_and_backend(tmp_path, name, backend):
    result = run("info", env={"MEMORY_FILE_PATH": str(tmp_path / name)})
    assert result.exit_code == 0
    assert f"memory file: {tmp_path / name}" in result.stdout
    assert f"backend: {backend}" in result.stdout


def test_info_shows_the_names_and_access_of_the_tokens_and_never_a_token(tmp_path):
    tokens = tmp_path / "tokens"
    secrets = ["alice-token-0123456789abcdef", "bob-token-0123456789abcdef", "ci-token-0123456789abcdef"]
    tokens.write_text(f"alice {secrets[0]} write\nbob {secrets[1]} write\nci {secrets[2]} read\n", encoding="utf-8")
    tokens.chmod(0o600)
    memory = {"MEMORY_FILE_PATH": str(tmp_path / "m.db")}
    by_flag = run("info", "--tokens-file", tokens, env=memory)
    by_env = run("info", env={**memory, "GRAPHMEM_TOKENS_FILE": str(tokens)})
    single = run("info", env={**memory, "GRAPHMEM_TOKEN": secrets[0]})
    assert "network access: alice (write), bob (write), ci (read)\n" in by_flag.stdout
    assert by_env.stdout == by_flag.stdout
    assert "network access: one token (write, records no author)\n" in single.stdout
    assert not any(secret in result.stdout for secret in secrets for result in (by_flag, by_env, single))
    assert "network access" not in run("info", env=memory).stdout
    tokens.chmod(0o644)
    refused = run("info", "--tokens-file", tokens, env=memory)
    assert refused.exit_code == 1 and "chmod 600" in refused.stderr


def test_stats_counts_entities_relations_and_observations(tmp_path):
    memory = tmp_path / "memory.db"
    run("import", OFFICIAL, "-f", memory)
    result = run("stats", "-f", memory)
    assert result.exit_code == 0
    assert "entities: 3\nrelations: 3\nobservations: 6\n" in result.stdout


def test_a_relative_memory_file_path_resolves_against_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    env = {"MEMORY_FILE_PATH": "nested/memory.db"}
    assert f"memory file: {tmp_path / 'nested' / 'memory.db'}" in run("info", env=env).stdout
    assert run("import", OFFICIAL, env=env).exit_code == 0
    assert (tmp_path / "nested" / "memory.db").is_file()
    assert run("export", env=env).stdout_bytes == OFFICIAL.read_bytes()


def test_every_command_has_a_one_line_summary_in_the_help():
    listing = run("--help").stdout
    for name in cli.commands:
        (line,) = [line for line in listing.splitlines() if line.strip().startswith(f"{name} ")]
        assert len(line.split(None, 1)) == 2, f"{name} has no summary"
    for name in ("import", "export"):
        assert run(name, "--help").exit_code == 0


@pytest.mark.slow
def test_the_installed_command_imports_then_exports_in_real_processes(tmp_path):
    env = {**os.environ, "MEMORY_FILE_PATH": str(tmp_path / "memory.db")}
    command = [sys.executable, "-m", "graphmem"]
    imported = subprocess.run(
        [*command, "import", str(OFFICIAL)], capture_output=True, env=env, timeout=60, check=False
    )
    assert imported.returncode == 0, imported.stderr
    exported = subprocess.run([*command, "export"], capture_output=True, env=env, timeout=60, check=False)
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout == OFFICIAL.read_bytes()
    assert exported.stderr == b""


def test_serve_refuses_a_public_address_without_a_token_in_one_line(tmp_path: Path):
    result = run("serve", "--http", "--host", "0.0.0.0", "-f", tmp_path / "m.db", env={"GRAPHMEM_TOKEN": ""})
    assert result.exit_code == 1
    assert result.output.count("\n") == 1
    assert "needs a bearer token" in result.output
    assert not (tmp_path / "m.db").exists()


def test_serve_refuses_a_token_file_others_can_read(tmp_path: Path):
    token_file = tmp_path / "token"
    token_file.write_text("0123456789abcdef0123", encoding="utf-8")
    token_file.chmod(0o640)
    result = run("serve", "--tcp", "--token-file", token_file, "-f", tmp_path / "m.db")
    assert result.exit_code == 1
    assert "chmod 600" in result.output


LONG_NAME = "a" * 300
# Over PATH_MAX once joined, though each folder's name is allowed.
LONG_PATH = "/".join(["b" * 200] * 25)


@pytest.mark.parametrize(
    "memory", [f"{LONG_NAME}.db", f"{LONG_NAME}.jsonl", f"{LONG_PATH}/m.db", f"{LONG_PATH}/m.jsonl"]
)
@pytest.mark.parametrize("command", [["info"], ["stats"], ["export"], ["embed"], ["import", "-"], ["serve"]])
def test_a_memory_path_longer_than_the_system_allows_is_one_line_for_every_command(
    tmp_path: Path, memory: str, command: list[str]
):
    # Issue 27, item 18: a 40-line traceback.
    result = run("--memory-file", tmp_path / memory, *command, input=b"")
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1, result.stderr
    assert "give a shorter one" in result.stderr


def test_a_memory_path_longer_than_the_system_allows_in_the_environment_or_to_migrate_is_one_line(tmp_path: Path):
    long_memory = tmp_path / f"{LONG_NAME}.db"
    from_env = run("info", env={"MEMORY_FILE_PATH": str(long_memory)})
    migrated = run("migrate", "--from", tmp_path / "m.jsonl", "--to", long_memory)
    for result in (from_env, migrated):
        assert result.exit_code == 1
        assert result.stderr.count("\n") == 1 and "give a shorter one" in result.stderr


def test_an_export_to_a_name_longer_than_the_system_allows_is_one_line(tmp_path: Path):
    memory = tmp_path / "m.jsonl"
    memory.write_text(OFFICIAL.read_text(encoding="utf-8"), encoding="utf-8")
    result = run("--memory-file", memory, "export", "--output", tmp_path / f"{LONG_NAME}.jsonl")
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and "File name too long" in result.stderr


# -- the project a server works in --------------------------------------------------------------


def test_info_says_projects_are_off_and_how_to_turn_them_on(tmp_path: Path):
    result = run("info", "-f", tmp_path / "m.db", env={"GRAPHMEM_PROJECT": None})
    assert result.exit_code == 0, result.output
    assert (
        "project: off, one memory for all work (turn projects on with --project auto, or GRAPHMEM_PROJECT=auto)"
        in result.stdout.splitlines()
    )


def test_info_names_the_project_of_the_workspace_and_how_it_was_found(tmp_path: Path):
    api = repository(tmp_path / "api", ("origin", "https://alice:s3cret-t0ken@github.com/Acme/API.git"))
    result = run("info", "-f", tmp_path / "m.db", "--project", "auto", "--workspace", api)
    assert result.exit_code == 0, result.output
    assert (
        f"project: api (github.com/acme/api), from the git remote origin of {api.resolve()}, "
        "in the workspace given by --workspace"
    ) in result.stdout.splitlines()
    assert "s3cret-t0ken" not in result.output


def test_info_as_the_stdio_server_is_configured_takes_the_project_options_before_the_command(tmp_path: Path):
    result = run("--project", "billing", "info", "-f", tmp_path / "m.db")
    assert "project: billing, from --project" in result.stdout.splitlines()


def test_info_says_why_auto_found_no_project_in_the_home_directory(tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    result = run(
        "info", "-f", tmp_path / "m.db", "--workspace", home, env={"HOME": str(home), "GRAPHMEM_PROJECT": "auto"}
    )
    assert result.exit_code == 0, result.output
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("project: ")]
    assert line.startswith(
        f"project: none, the whole memory: --project auto found none, as the workspace {home.resolve()} "
        "given by --workspace is the home directory."
    )
    assert "--workspace DIR" in line


@pytest.mark.parametrize("name", ["shared", "*"])
def test_a_reserved_project_name_is_one_line_and_creates_nothing(tmp_path: Path, name: str):
    result = run("info", "-f", tmp_path / "m.db", "--project", name)
    assert one_line_error(result).startswith(f"Error: Config '--project' has value '{name}'. '{name}' is reserved")
    assert not (tmp_path / "m.db").exists()


@pytest.mark.slow
def test_info_with_project_auto_in_a_real_process_names_the_repository_it_runs_in(tmp_path):
    api = repository(tmp_path / "api", ("origin", "git@github.com:acme/api.git"))
    (api / "src").mkdir()
    env = {**GIT_ENV, "MEMORY_FILE_PATH": str(tmp_path / "memory.db"), "HOME": str(tmp_path / "home")}
    env.pop("GRAPHMEM_WORKSPACE", None)
    result = subprocess.run(
        [sys.executable, "-m", "graphmem", "info", "--project", "auto"],
        cwd=api / "src",
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert f"project: api (github.com/acme/api), from the git remote origin of {api.resolve()}" in (
        result.stdout.decode().splitlines()
    )
