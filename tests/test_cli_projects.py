"""`graphmem projects`, `graphmem project move|delete` and `graphmem export --project`, in process
through click's CliRunner, on a real SQLite memory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphmem.config import Settings
from graphmem.core.models import Entity, Relation
from graphmem.core.projects import Scope
from graphmem.domain.graph import KnowledgeGraph
from graphmem.storage import open_store
from tests.test_cli import run

API = Scope("github.com/acme/api")


@pytest.fixture
def memory(tmp_path: Path) -> Path:
    """Alice shared; in project api (github.com/acme/api) a README and a server, related."""
    path = tmp_path / "memory.db"
    store = open_store(Settings(memory_path=path))
    graph = KnowledgeGraph(store)
    graph.create_entities([Entity("Alice", "person", ("reviews code",))])
    with graph.working_in(API):
        graph.create_entities([Entity("README", "file", ("explains the api",)), Entity("server", "service")])
        graph.create_relations([Relation("README", "server", "describes")])
    store.close()
    return path


def test_projects_lists_each_with_its_counts(memory: Path):
    result = run("projects", "-f", memory)
    assert result.exit_code == 0, result.output
    header, shared, api = result.output.splitlines()
    assert header.split()[:4] == ["project", "entities", "relations", "facts"]
    assert shared.split()[:4] == ["shared", "1", "0", "1"]
    assert api.split()[:4] == ["api", "2", "1", "1"] and api.endswith("github.com/acme/api")


def test_project_move_takes_entities_to_the_shared_space_and_back(memory: Path):
    moved = run("project", "move", "server", "--to", "shared", "-f", memory)
    assert moved.exit_code == 0, moved.output
    assert "Moved 1 entities and 0 relations to shared." in moved.output
    assert run("projects", "-f", memory).output.splitlines()[1].split()[:2] == ["shared", "2"]
    back = run("project", "move", "server", "--to", "api", "-f", memory)
    assert back.exit_code == 0, back.output
    refused = run("project", "move", "README", "--to", "*", "-f", memory)
    assert refused.exit_code == 1 and "is not a project" in refused.output


def test_project_delete_asks_first_and_keeps_the_shared_space(memory: Path):
    declined = run("project", "delete", "api", "-f", memory, input=b"n\n")
    assert declined.exit_code == 1 and "2 entities, 1 facts and 1 relations?" in declined.output
    assert "api" in run("projects", "-f", memory).output
    deleted = run("project", "delete", "api", "--yes", "-f", memory)
    assert deleted.exit_code == 0 and "2 entities and 1 relations" in deleted.output
    assert [line.split()[0] for line in run("projects", "-f", memory).output.splitlines()[1:]] == ["shared"]
    unknown = run("project", "delete", "nowhere", "--yes", "-f", memory)
    assert unknown.exit_code == 1 and "no project is named 'nowhere'" in unknown.output


def test_export_of_one_project_holds_it_alone_with_its_project_named(memory: Path, tmp_path: Path):
    out = tmp_path / "api.jsonl"
    result = run("export", "--project", "api", "-o", out, "-f", memory)
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [line.get("name", line.get("from")) for line in lines] == ["README", "server", "README"]
    assert {line["project"] for line in lines} == {API.home}
    # Imported into another memory, it lands in the same project.
    other = tmp_path / "other.db"
    assert run("import", out, "-f", other, "--no-semantic").exit_code == 0
    assert run("projects", "-f", other).output.splitlines()[1].split()[:2] == ["api", "2"]


def test_migrate_and_a_json_document_carry_every_project(memory: Path, tmp_path: Path):
    official_file = tmp_path / "memory.jsonl"
    moved = run("migrate", "--from", memory, "--to", official_file)
    assert moved.exit_code == 0, moved.output
    lines = [json.loads(line) for line in official_file.read_text(encoding="utf-8").splitlines()]
    assert {line.get("name", line.get("from")): line.get("project") for line in lines} == {
        "Alice": None,
        "README": API.home,
        "server": API.home,
    }
    document = tmp_path / "memory.json"
    assert run("export", "--format", "json", "-o", document, "-f", memory).exit_code == 0
    again = tmp_path / "again.db"
    assert run("import", document, "-f", again, "--no-semantic").exit_code == 0
    assert [line.split()[:3] for line in run("projects", "-f", again).output.splitlines()[1:]] == [
        ["shared", "1", "0"],
        ["api", "2", "1"],
    ]


def test_an_import_keeps_same_named_entities_of_two_projects_apart(tmp_path: Path):
    source = tmp_path / "two.jsonl"
    source.write_text(
        '{"type":"entity","name":"README","entityType":"file","observations":["explains the api"],"project":"api"}\n'
        '{"type":"entity","name":"README","entityType":"file","observations":["explains the tool"],"project":"tool"}\n'
        '{"type":"entity","name":"Alice","entityType":"person","observations":["reviews code"]}\n'
        '{"type":"relation","from":"Alice","to":"README","relationType":"wrote","project":"api"}\n'
        '{"type":"relation","from":"Alice","to":"README","relationType":"wrote","project":"tool"}\n',
        encoding="utf-8",
    )
    memory = tmp_path / "memory.db"
    for _ in range(2):  # the second time, everything is there already and nothing doubles
        assert run("import", source, "-f", memory, "--no-semantic").exit_code == 0
    store = open_store(Settings(memory_path=memory))
    graph = KnowledgeGraph(store)
    try:
        for project, fact in (("api", "explains the api"), ("tool", "explains the tool")):
            with graph.working_in(Scope(project)):
                (readme,) = graph.open_nodes(["README"]).entities
                assert readme.observations == (fact,)
                assert [relation.key for relation in graph.read_graph().relations] == [("Alice", "README", "wrote")]
    finally:
        store.close()


def test_migrate_keeps_same_named_entities_and_relations_of_two_projects(tmp_path: Path):
    source = tmp_path / "two.jsonl"
    source.write_text(
        '{"type":"entity","name":"README","entityType":"file","observations":["explains the api"],"project":"api"}\n'
        '{"type":"entity","name":"README","entityType":"file","observations":["explains the tool"],"project":"tool"}\n'
        '{"type":"relation","from":"Alice","to":"README","relationType":"wrote","project":"api"}\n'
        '{"type":"relation","from":"Alice","to":"README","relationType":"wrote","project":"tool"}\n',
        encoding="utf-8",
    )
    target = tmp_path / "memory.db"
    moved = run("migrate", "--from", source, "--to", target)
    assert moved.exit_code == 0, moved.output
    assert [line.split()[:3] for line in run("projects", "-f", target).output.splitlines()[1:]] == [
        ["api", "1", "1"],
        ["tool", "1", "1"],
    ]


def test_an_import_run_in_a_project_puts_lines_without_one_there(tmp_path: Path):
    source = tmp_path / "plain.jsonl"
    source.write_text('{"type":"entity","name":"README","entityType":"file","observations":["x"]}\n', encoding="utf-8")
    memory = tmp_path / "memory.db"
    assert run("--project", "api", "import", source, "-f", memory, "--no-semantic").exit_code == 0
    assert [line.split()[:2] for line in run("projects", "-f", memory).output.splitlines()[1:]] == [["api", "1"]]
