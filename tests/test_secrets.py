"""No secrets at rest: every text written (names, types, facts, aliases, relation types) by a
tool, the explorer's calls or an import is checked, and a secret is replaced by a marker that
says what it was before anything is stored, embedded or recorded; `--secrets refuse` refuses the
write and `allow` keeps it. On every backend, through the real client, and on the bytes on disk."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import pytest
from benchmarks.secret_samples import near_misses, positives
from click.testing import CliRunner
from mcp import Client

from graphmem.cli import cli
from graphmem.config import Settings
from graphmem.core.models import Entity, Relation
from graphmem.core.secrets import find_secrets, marker, redact
from graphmem.domain.change_log import RecordingStore
from graphmem.domain.graph import KnowledgeGraph
from graphmem.server import build_server
from graphmem.storage import open_store
from graphmem.transfer import import_stream
from graphmem.transfer.migration import migrate

GITHUB = "ghp_" + "Zq3vR8tW1yK6mN2pL9xB4cD7fG0hJ5sA2eU8"
PASSWORD = "Tr0ub4dor-and-3"
SECRETS = (GITHUB, PASSWORD, "AKIAQ7V3XK2M9PLD4RTE")


@pytest.fixture
def settings(any_backend_settings: Settings) -> Settings:
    return dataclasses.replace(any_backend_settings, semantic=False)


# -- what is a secret ------------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "text"), list(positives()), ids=lambda value: str(value)[:30])
def test_each_format_is_found_as_its_kind(kind: str, text: str):
    assert [secret.kind for secret in find_secrets(text)] == [kind]
    cleaned, kinds = redact(text)
    assert kinds == (kind,) and marker(kind) in cleaned
    assert redact(cleaned) == (cleaned, ())  # the marker is no secret: redacting again changes nothing


@pytest.mark.parametrize("text", list(near_misses()), ids=lambda value: value[:30])
def test_ordinary_text_is_left_alone(text: str):
    assert find_secrets(text) == []


def test_only_the_secret_is_replaced_and_the_rest_of_the_text_stays():
    text = f"deploy with {GITHUB} against postgres://app:{PASSWORD}@db:5432/app, then tell Ana"
    assert redact(text) == (
        "deploy with [redacted: GitHub token] against postgres://app:[redacted: password in a URL]@db:5432/app, "
        "then tell Ana",
        ("GitHub token", "password in a URL"),
    )


def test_a_private_key_is_taken_whole_even_when_cut_off():
    text = "key: -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\nAAAA"
    assert redact(text) == ("key: [redacted: private key]", ("private key",))


# -- through the tools, on every backend -------------------------------------------------------


def _on_disk(settings: Settings) -> bytes:
    """Every byte graphmem keeps for a file memory: the file, its journal and side files."""
    folder = settings.memory_path.parent
    return b"".join(path.read_bytes() for path in folder.iterdir() if path.is_file())


@pytest.mark.anyio
async def test_a_secret_written_through_the_tools_is_never_kept(settings: Settings):
    async with Client(build_server(dataclasses.replace(settings, toolset="all")), mode="legacy") as client:
        created = await client.call_tool(
            "create_entities",
            {
                "entities": [
                    {"name": "deploy bot", "entityType": "service", "observations": [f"pushes with {GITHUB}"]},
                    {"name": "db", "entityType": "database", "observations": [f"url postgres://app:{PASSWORD}@db/app"]},
                ]
            },
        )
        assert created.structured_content["entities"][0]["observations"] == ["pushes with [redacted: GitHub token]"]
        note = created.content[-1].text
        assert "Redacted 2 secrets" in note and "GitHub token in entities[0].observations[0]" in note
        added = await client.call_tool(
            "add_observations",
            {"observations": [{"entityName": "db", "contents": [f"AWS key id {SECRETS[2]}"], "attribute": "key"}]},
        )
        assert added.structured_content["results"][0]["addedObservations"] == ["AWS key id [redacted: AWS access key]"]
        await client.call_tool(
            "save_memory",
            {"entities": [{"name": "ops", "entityType": "team", "observations": [f"DB_PASSWORD={PASSWORD}"]}]},
        )
        await client.call_tool(
            "create_relations", {"relations": [{"from": "deploy bot", "to": "db", "relationType": "writes to"}]}
        )
        answers = [
            await client.call_tool("read_graph", {}),
            await client.call_tool("list_changes", {}),
            await client.call_tool("get_entity", {"name": "db"}),
            await client.call_tool("search_nodes", {"query": "redacted", "mode": "lexical"}),
        ]
        seen = json.dumps([answer.structured_content for answer in answers])
        assert not any(secret in seen for secret in SECRETS)
        assert seen.count("[redacted: ") >= 4
        found = await client.call_tool("search_nodes", {"query": GITHUB, "mode": "lexical"})
        assert found.structured_content["entities"] == []
    if settings.database_url is None:
        assert not any(secret.encode() in _on_disk(settings) for secret in SECRETS)


@pytest.mark.anyio
async def test_refuse_saves_nothing_and_says_where_the_secret_is(settings: Settings):
    refusing = dataclasses.replace(settings, secrets="refuse")
    async with Client(build_server(refusing), mode="legacy") as client:
        await client.call_tool(
            "create_entities", {"entities": [{"name": "db", "entityType": "database", "observations": []}]}
        )
        refused = await client.call_tool(
            "add_observations",
            {"observations": [{"entityName": "db", "contents": ["fine", f"password: {PASSWORD}"]}]},
        )
        assert refused.is_error
        text = refused.content[0].text
        assert "observations[0].contents[1]" in text and "password" in text and "nothing was saved" in text
        assert PASSWORD not in text
        opened = await client.call_tool("open_nodes", {"names": ["db"]})
        assert opened.structured_content["entities"][0]["observations"] == []


@pytest.mark.anyio
async def test_allow_keeps_what_was_written(settings: Settings):
    async with Client(build_server(dataclasses.replace(settings, secrets="allow")), mode="legacy") as client:
        created = await client.call_tool(
            "create_entities", {"entities": [{"name": "db", "entityType": "database", "observations": [GITHUB]}]}
        )
        assert len(created.content) == 1  # no note
        opened = await client.call_tool("open_nodes", {"names": ["db"]})
        assert opened.structured_content["entities"][0]["observations"] == [GITHUB]


# -- every other way in -------------------------------------------------------------------------


def test_what_the_store_is_given_is_cleaned_whatever_the_caller(settings: Settings):
    store = open_store(settings)
    graph = KnowledgeGraph(store)
    try:
        graph.take_redactions()
        graph.import_graph(
            [
                Entity(f"bot {GITHUB}", "service", (f"pass {PASSWORD}", "plain"), {"aliases": [f"key {SECRETS[2]}"]}),
                Entity("db", "database"),
            ],
            [Relation(f"bot {GITHUB}", "db", "writes to")],
        )
        taken = graph.take_redactions()
        assert sorted({item.kind for item in taken}) == ["AWS access key", "GitHub token"]
        with store.read():
            (bot, db) = list(store.iter_entities())
            (relation,) = list(store.iter_relations())
        assert bot.name == "bot [redacted: GitHub token]" and bot.aliases == ("key [redacted: AWS access key]",)
        assert bot.observations == (f"pass {PASSWORD}", "plain")  # a word beside "pass" is no name of a key
        assert relation.from_ == bot.name
    finally:
        store.close()


def _two_bots_apart_by_a_secret() -> str:
    other = GITHUB[:-1] + "9"
    lines = [
        {"type": "entity", "name": f"db {GITHUB}", "entityType": "service", "observations": ["one"]},
        {"type": "entity", "name": f"db {other}", "entityType": "service", "observations": ["two"]},
        {"type": "relation", "from": f"db {other}", "to": f"db {GITHUB}", "relationType": "talks to"},
    ]
    return "".join(json.dumps(line) + "\n" for line in lines)


def _names_and_links(store) -> tuple[list[tuple[str, tuple[str, ...]]], list[tuple[str, str]]]:
    with store.read():
        entities = [(entity.name, entity.observations) for entity in store.iter_entities()]
        relations = [(relation.from_, relation.to) for relation in store.iter_relations()]
    return entities, relations


_KEPT_APART = (
    [("db [redacted: GitHub token]", ("one",)), ("db [redacted: GitHub token] (2)", ("two",))],
    [("db [redacted: GitHub token] (2)", "db [redacted: GitHub token]")],
)


def test_names_that_differ_only_by_a_secret_stay_two_entities_in_an_import(settings: Settings):
    """Redacted, two names became one: a unique-name error on SQLite and PostgreSQL, two entities
    of one name in a JSONL file. The second is numbered, its relation following it. A redacted
    name no longer says which entity it was, so it is never merged into one the memory holds:
    not into an entity that merely bears the marker, nor on a second import of the file."""
    store = open_store(settings)
    graph = KnowledgeGraph(store)
    try:
        report = import_stream(graph, io.BytesIO(_two_bots_apart_by_a_secret().encode()))
        assert [item.kind for item in report.redacted_names] == ["GitHub token", "GitHub token"]
        assert _names_and_links(store) == _KEPT_APART
        again = import_stream(graph, io.BytesIO(_two_bots_apart_by_a_secret().encode()))
        assert (again.entities_new, again.relations_new) == (2, 1)
        entities, links = _names_and_links(store)
        assert entities[:2] == _KEPT_APART[0] and links[:1] == _KEPT_APART[1]
        assert entities[2:] == [
            ("db [redacted: GitHub token] (3)", ("one",)),
            ("db [redacted: GitHub token] (4)", ("two",)),
        ]
        assert links[1:] == [("db [redacted: GitHub token] (4)", "db [redacted: GitHub token] (3)")]
    finally:
        store.close()


def test_a_redacted_name_is_never_merged_into_an_entity_that_bears_the_marker(settings: Settings, tmp_path: Path):
    """A memory holding "db [redacted: GitHub token]" (a person, written after its secret was
    taken out) and, written with --secrets allow, "db ghp_…" (a service): migrated or imported
    into a memory that redacts, they stay two, and so does a relation between them."""
    lines = [
        {"type": "entity", "name": "db [redacted: GitHub token]", "entityType": "person", "observations": ["a"]},
        {"type": "entity", "name": f"db {GITHUB}", "entityType": "service", "observations": ["b"]},
        {"type": "relation", "from": f"db {GITHUB}", "to": "db [redacted: GitHub token]", "relationType": "serves"},
    ]
    text = "".join(json.dumps(line) + "\n" for line in lines)
    expected = (
        [("db [redacted: GitHub token]", ("a",)), ("db [redacted: GitHub token] (2)", ("b",))],
        [("db [redacted: GitHub token] (2)", "db [redacted: GitHub token]")],
    )
    source_file = tmp_path / "written-with-allow.jsonl"
    source_file.write_text(text, encoding="utf-8")
    source = open_store(Settings(memory_path=source_file))
    target = open_store(settings)
    try:
        migrate(source, RecordingStore(target, lambda: (None, "migrate")), secrets="redact")
        assert _names_and_links(target) == expected
    finally:
        source.close()
        target.close()
    imported = open_store(Settings(memory_path=tmp_path / "imported.db"))
    try:
        import_stream(KnowledgeGraph(imported), io.BytesIO(text.encode()))
        assert _names_and_links(imported) == expected
    finally:
        imported.close()


def test_names_that_differ_only_by_a_secret_stay_two_entities_in_a_migration(settings: Settings, tmp_path: Path):
    """A memory written with --secrets allow (here the official server's file) migrated into a
    memory that redacts (the policy the target's store has, when none is given)."""
    source_file = tmp_path / "written-with-allow.jsonl"
    source_file.write_text(_two_bots_apart_by_a_secret(), encoding="utf-8")
    source = open_store(Settings(memory_path=source_file))
    target = open_store(settings)
    try:
        recorder = RecordingStore(target, lambda: (None, "migrate"))
        report = migrate(source, recorder)
        assert [item.kind for item in report.redacted_names] == ["GitHub token", "GitHub token"]
        assert _names_and_links(target) == _KEPT_APART
    finally:
        source.close()
        target.close()


def test_an_import_from_the_command_line_redacts_and_says_so(tmp_path: Path):
    source = tmp_path / "old.jsonl"
    source.write_text(
        json.dumps({"type": "entity", "name": "ci", "entityType": "service", "observations": [f"token {GITHUB}"]})
        + "\n",
        encoding="utf-8",
    )
    memory = tmp_path / "memory.db"
    result = CliRunner().invoke(cli, ["import", str(source), "--memory-file", str(memory), "--no-semantic"])
    assert result.exit_code == 0, result.output
    assert "Redacted a secret before saving (GitHub token in entity 'ci'.observations[0])" in result.output
    assert GITHUB.encode() not in b"".join(p.read_bytes() for p in tmp_path.iterdir() if p != source)
    refused = CliRunner().invoke(
        cli, ["import", str(source), "--memory-file", str(tmp_path / "other.db"), "--secrets", "refuse"]
    )
    assert refused.exit_code != 0 and "refuses secrets" in refused.output


def test_the_policy_is_checked_when_the_server_starts():
    with pytest.raises(Exception, match="Choose redact"):
        Settings.from_env({"GRAPHMEM_SECRETS": "sometimes"})
    assert Settings.from_env({"GRAPHMEM_SECRETS": "REFUSE"}).secrets == "refuse"
    assert Settings.from_env({}).secrets == "redact"


@pytest.mark.anyio
async def test_a_stored_secret_can_still_be_named_to_delete_it(settings: Settings):
    """Deleting names what is stored: its texts are not cleaned, or a secret written with --secrets
    allow could never be named again to delete it."""
    async with Client(build_server(dataclasses.replace(settings, secrets="allow")), mode="legacy") as client:
        await client.call_tool(
            "create_entities", {"entities": [{"name": "db", "entityType": "database", "observations": [GITHUB]}]}
        )
    async with Client(build_server(settings), mode="legacy") as client:
        deleted = await client.call_tool(
            "delete_observations", {"deletions": [{"entityName": "db", "observations": [GITHUB]}]}
        )
        assert not deleted.is_error
        opened = await client.call_tool("open_nodes", {"names": ["db"]})
        assert opened.structured_content["entities"][0]["observations"] == []
