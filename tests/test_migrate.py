"""`graphmem migrate`: a whole memory copied into an empty one, history and all, on real files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from graphmem.cli import cli
from graphmem.config import Settings
from graphmem.core.models import Entity, ObservationAddition, Relation
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.maintenance import EntityUpdate, update_entities
from graphmem.storage import Store, open_store
from graphmem.transfer import TargetNotEmptyError, migrate


def run(*args: object) -> Result:
    result = CliRunner().invoke(cli, ["--no-semantic", *[str(arg) for arg in args]])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def _open(path: Path) -> Store:
    return open_store(Settings(memory_path=path, semantic=False))


def fill(path: Path) -> None:
    """A memory with what a plain copy could lose: aliases, a corrected fact, a dangling relation."""
    store = _open(path)
    try:
        graph = KnowledgeGraph(store)
        graph.create_entities(
            [
                Entity("Alice", "person", ("likes tea", "lives in Oslo")),
                Entity("Acme", "org", ("makes anvils",)),
                Entity("Bob", "person"),
            ]
        )
        update_entities(graph, [EntityUpdate("Alice", aliases=("Ali",))])
        graph.create_relations([Relation("Alice", "Acme", "works_at"), Relation("Bob", "Nobody", "knows")])
        (record,) = [r for r in _records(store, "Alice") if r["content"] == "lives in Oslo"]
        graph.add_observations([ObservationAddition("Alice", ("lives in Bergen",), (record["id"],))])
    finally:
        store.close()


def _records(store: Store, name: str) -> list[dict[str, object]]:
    """The entity's current observations with their ids (as get_entity shows them)."""
    with store.read():
        (entity,) = store.get_entities([name])
    metas = (entity.extra or {}).get("observationMeta", [])
    return [{**meta, "content": content} for meta, content in zip(metas, entity.observations, strict=True)]


def everything(path: Path) -> tuple[list[tuple[str, str, tuple[str, ...], str]], list[tuple[str, str, str, str]]]:
    """Every entity and relation with its extra keys, in order: what a migration must keep."""
    store = _open(path)
    try:
        with store.read():
            entities = [
                (e.name, e.entity_type, e.observations, json.dumps(e.extra, sort_keys=True))
                for e in store.iter_entities()
            ]
            relations = [
                (r.from_, r.to, r.relation_type, json.dumps(r.extra, sort_keys=True)) for r in store.iter_relations()
            ]
    finally:
        store.close()
    return entities, relations


@pytest.mark.parametrize(
    ("source_name", "target_name"), [("m.db", "copy.db"), ("m.db", "copy.jsonl"), ("m.jsonl", "copy.db")]
)
def test_a_migrated_memory_holds_every_entity_fact_version_alias_and_relation_in_order(
    tmp_path: Path, source_name: str, target_name: str
) -> None:
    source, target = tmp_path / source_name, tmp_path / target_name
    fill(source)

    result = run("migrate", "--from", source, "--to", target)

    assert result.exit_code == 0, result.output
    assert everything(target) == everything(source)
    assert "entities: 3 (3 current observations, 1 earlier fact versions kept in their history)" in result.output
    assert "relations: 2" in result.output
    store = _open(target)
    try:
        history = KnowledgeGraph(store)
        with store.read():
            (alice,) = store.get_entities(["Alice"])
        assert "lives in Bergen" in alice.observations
        assert alice.aliases == ("Ali",)
        assert history.search_nodes("Ali").entities[0].name == "Alice"
    finally:
        store.close()


def test_a_migration_into_a_memory_that_holds_something_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    source, target = tmp_path / "m.db", tmp_path / "other.db"
    fill(source)
    store, original = _open(target), _open(source)
    try:
        KnowledgeGraph(store).create_entities([Entity("Carol", "person", ("already here",))])
        with pytest.raises(TargetNotEmptyError, match="already holds 1 entities and 0 relations"):
            migrate(original, store)
    finally:
        store.close()
        original.close()
    assert everything(target)[0] == [("Carol", "person", ("already here",), everything(target)[0][0][3])]

    result = run("migrate", "--from", source, "--to", target)
    assert result.exit_code == 1
    assert "a migration copies a memory into an empty one" in result.output


def test_entities_a_jsonl_file_repeats_are_migrated_as_one_as_the_official_server_reads_them(tmp_path: Path) -> None:
    source, target = tmp_path / "m.jsonl", tmp_path / "copy.db"
    lines = [
        {"type": "entity", "name": "Alice", "entityType": "person", "observations": ["likes tea"]},
        {"type": "entity", "name": "Alice", "entityType": "robot", "observations": ["likes tea", "beeps"]},
        {"type": "relation", "from": "Alice", "to": "Alice", "relationType": "is"},
        {"type": "relation", "from": "Alice", "to": "Alice", "relationType": "is"},
    ]
    source.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")

    result = run("migrate", "--from", source, "--to", target)

    assert result.exit_code == 0, result.output
    entities, relations = everything(target)
    assert [(name, kind, facts) for name, kind, facts, _ in entities] == [("Alice", "person", ("likes tea", "beeps"))]
    assert [(r[0], r[1], r[2]) for r in relations] == [("Alice", "Alice", "is")]
    assert "merged: 1 entities" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--from", "{tmp}/m.db", "--to", "{tmp}/m.db"), "are the same memory"),
        (("--from", "{tmp}/absent.db", "--to", "{tmp}/copy.db"), "There is no memory at"),
    ],
)
def test_a_migration_that_cannot_be_made_says_why_and_writes_nothing(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    fill(tmp_path / "m.db")

    result = run("migrate", *(arg.format(tmp=tmp_path) for arg in args))

    assert result.exit_code == 1
    assert message in result.output
    assert not (tmp_path / "copy.db").exists()


def test_a_migration_from_an_empty_memory_says_there_is_nothing_to_migrate(tmp_path: Path) -> None:
    _open(tmp_path / "empty.db").close()

    result = run("migrate", "--from", tmp_path / "empty.db", "--to", tmp_path / "copy.db")

    assert result.exit_code == 1
    assert "holds no entities or relations; there is nothing to migrate" in result.output
    assert not (tmp_path / "copy.db").exists()
