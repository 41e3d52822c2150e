"""Secrets a memory already holds (written before graphmem checked, or with `--secrets allow`):
`graphmem scan-secrets` finds them by entity and fact, and `--fix` takes them out of the memory,
its past versions, its change log and its files. On every backend, and through the command line."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from graphmem.cli import cli
from graphmem.config import Settings
from graphmem.core.models import Entity, ObservationAddition, Relation
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.history import ChangeQuery, list_changes
from graphmem.domain.maintenance import EntityUpdate, update_entities
from graphmem.domain.observations import history_of
from graphmem.domain.secret_scan import fix_secrets, scan_secrets
from graphmem.storage import open_store

GITHUB = "ghp_" + "Zq3vR8tW1yK6mN2pL9xB4cD7fG0hJ5sA2eU8"
PASSWORD = "Tr0ub4dor-and-3"
AWS = "AKIAQ7V3XK2M9PLD4RTE"
SECRETS = (GITHUB, PASSWORD, AWS)


@pytest.fixture
def settings(any_backend_settings: Settings) -> Settings:
    return dataclasses.replace(any_backend_settings, semantic=False)


def _leaky(graph: KnowledgeGraph) -> None:
    """A memory written with --secrets allow: secrets in a fact, a past version, an alias, a
    name, a relation's type, and the change log that recorded them."""
    graph.secrets = "allow"
    graph.create_entities(
        [
            Entity("ci", "service", (f"pushes with {GITHUB}", "runs nightly")),
            Entity(f"db {AWS}", "database", ("holds orders",)),
        ]
    )
    graph.add_observations([ObservationAddition("ci", (f"DB_PASSWORD={PASSWORD}",), attribute="db password")])
    graph.add_observations([ObservationAddition("ci", ("DB_PASSWORD is in the vault",), attribute="db password")])
    graph.create_relations([Relation("ci", f"db {AWS}", f"writes with {GITHUB}")])
    update_entities(graph, [EntityUpdate("ci", aliases=(f"bot {AWS}",))])
    graph.secrets = "redact"


def _everything(graph: KnowledgeGraph) -> str:
    with graph.store.read():
        entities = [(e.name, e.entity_type, e.observations, e.extra) for e in graph.store.iter_entities()]
        relations = [r.key for r in graph.store.iter_relations()]
    changes = [change.ops for change in list_changes(graph, ChangeQuery(limit=100)).changes]
    return json.dumps([entities, relations, changes])


def test_a_scan_names_each_secret_by_entity_and_place_and_changes_nothing(graph: KnowledgeGraph):
    _leaky(graph)
    before = _everything(graph)
    scan = scan_secrets(graph)
    found = {holder.what: [(item.kind, item.where) for item in holder.found] for holder in scan.holders}
    assert found["entity 'ci'"] == [
        ("GitHub token", "observations[0]"),
        ("AWS access key", "aliases[0]"),
        ("password", "history[0]"),
    ]
    assert found["entity 'db [redacted: AWS access key]'"] == [("AWS access key", "name")]  # never shown
    (relation,) = [what for what in found if what.startswith("relation")]
    assert [kind for kind, _ in found[relation]] == ["AWS access key", "GitHub token"]
    assert scan.changes >= 3
    assert _everything(graph) == before


def test_a_fix_takes_every_secret_out_of_the_memory_and_its_history(graph: KnowledgeGraph, settings: Settings):
    _leaky(graph)
    fixed = fix_secrets(graph)
    assert fixed.secrets == 6
    after = _everything(graph)
    assert not any(secret in after for secret in SECRETS)
    assert scan_secrets(graph).secrets == 0 and scan_secrets(graph).changes == 0
    opened = graph.open_nodes(["ci", "db [redacted: AWS access key]"])
    ci, db = opened.entities
    assert ci.observations == ("runs nightly", "DB_PASSWORD is in the vault", "pushes with [redacted: GitHub token]")
    assert ci.aliases == ("bot [redacted: AWS access key]",)
    with graph.store.read():
        (stored,) = graph.store.get_entities(["ci"])
    assert [record.content for record in history_of(stored)] == ["DB_PASSWORD=[redacted: password]"]
    assert [(r.from_, r.to, r.relation_type) for r in opened.relations] == [
        ("ci", "db [redacted: AWS access key]", "writes with [redacted: GitHub token]")
    ]
    assert db.observations == ("holds orders",)
    (change, *_) = list_changes(graph, ChangeQuery(limit=1)).changes
    assert change.via == "scan-secrets"
    if settings.database_url is None:
        graph.store.close()
        folder = settings.memory_path.parent
        on_disk = b"".join(path.read_bytes() for path in folder.iterdir() if path.is_file())
        assert not any(secret.encode() in on_disk for secret in SECRETS)


def test_the_command_line_scans_reports_in_info_and_fixes(tmp_path: Path):
    memory = tmp_path / "memory.db"
    store = open_store(Settings(memory_path=memory, semantic=False))
    _leaky(KnowledgeGraph(store))
    store.close()
    runner = CliRunner()
    info = runner.invoke(cli, ["info", "--memory-file", str(memory)])
    assert "secrets: 6 in 3 entities or relations" in info.output
    scanned = runner.invoke(cli, ["scan-secrets", "--memory-file", str(memory)])
    assert scanned.exit_code == 1
    assert "entity 'ci': GitHub token in observations[0]; AWS access key in aliases[0]" in scanned.output
    assert not any(secret in scanned.output for secret in SECRETS)
    fixed = runner.invoke(cli, ["scan-secrets", "--memory-file", str(memory), "--fix"])
    assert fixed.exit_code == 0 and "the store was compacted" in fixed.output
    again = runner.invoke(cli, ["scan-secrets", "--memory-file", str(memory)])
    assert again.exit_code == 0 and "No secrets in" in again.output
    assert "secrets: none stored" in runner.invoke(cli, ["info", "--memory-file", str(memory)]).output


def test_a_fix_keeps_apart_what_differed_only_by_its_secrets(graph: KnowledgeGraph):
    other = "ghp_" + "Ab3vR8tW1yK6mN2pL9xB4cD7fG0hJ5sA2eU8"
    graph.secrets = "allow"
    graph.create_entities(
        [
            Entity(f"bot {GITHUB}", "service", ("a",)),
            Entity(f"bot {other}", "service", ("b",)),
            Entity("ci", "service", (f"token {GITHUB}", f"token {other}")),
        ]
    )
    graph.secrets = "redact"
    fix_secrets(graph)
    with graph.store.read():
        found = {entity.name: entity.observations for entity in graph.store.iter_entities()}
    assert found == {
        "bot [redacted: GitHub token]": ("a",),
        "bot [redacted: GitHub token] (2)": ("b",),
        "ci": ("token [redacted: GitHub token]",),
    }
