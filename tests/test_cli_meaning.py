"""The command line's side of search by meaning: import embeds what it added, `graphmem embed` (re)builds.

Real model, real files: what a user sees after `graphmem import` of an existing memory.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from graphmem.config import Settings
from graphmem.domain.graph import KnowledgeGraph
from graphmem.embedding import load_embedder
from graphmem.storage import open_store
from tests.test_cli import one_line_error, run


def _official_file(path: Path) -> Path:
    lines = [
        {"type": "entity", "name": "Bob", "entityType": "person", "observations": ["relocated to Germany last spring"]},
        {"type": "entity", "name": "Alice", "entityType": "person", "observations": ["cannot eat peanuts"]},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def _semantic_names(memory: Path, query: str) -> list[str]:
    store = open_store(Settings(memory_path=memory))
    try:
        graph = KnowledgeGraph(store, embedder=load_embedder())
        return [entity.name for entity in graph.search_nodes(query, mode="semantic", limit=1).entities]
    finally:
        store.close()


def test_import_embeds_what_it_added_and_says_how_fast(tmp_path: Path):
    memory = tmp_path / "memory.db"
    result = run("import", _official_file(tmp_path / "old.jsonl"), "--memory-file", memory)
    assert result.exit_code == 0, result.output
    # Two names and two observations, at some speed.
    assert re.search(r"^embedded: 4 texts in [\d.]+ s \([\d,]+ a second\)$", result.stdout, re.MULTILINE)
    assert _semantic_names(memory, "Who moved abroad?") == ["Bob"]


def test_import_without_meaning_embeds_nothing_and_embed_does_it_later(tmp_path: Path):
    memory = tmp_path / "memory.db"
    result = run("import", _official_file(tmp_path / "old.jsonl"), "--memory-file", memory, "--no-semantic")
    assert result.exit_code == 0 and "embedded" not in result.stdout
    assert _semantic_names(memory, "Who moved abroad?") == []
    embedded = run("embed", "--memory-file", memory)
    assert embedded.exit_code == 0, embedded.output
    assert "0 texts have vectors, 4 wait." in embedded.stdout
    assert "4 texts have vectors; 0 wait." in embedded.stdout
    assert _semantic_names(memory, "Who moved abroad?") == ["Bob"]


def test_embed_rebuild_embeds_everything_again(tmp_path: Path):
    memory = tmp_path / "memory.db"
    run("import", _official_file(tmp_path / "old.jsonl"), "--memory-file", memory)
    rebuilt = run("embed", "--rebuild", "--memory-file", memory)
    assert rebuilt.exit_code == 0, rebuilt.output
    assert "0 texts have vectors, 4 wait." in rebuilt.stdout
    assert "embedded: 4 texts" in rebuilt.stdout


def test_embed_refuses_a_jsonl_memory_and_says_what_to_use(tmp_path: Path):
    line = one_line_error(run("embed", "--memory-file", tmp_path / "memory.jsonl"))
    assert "keeps no vectors" in line and ".db memory" in line


def test_the_environment_turns_search_by_meaning_off(tmp_path: Path):
    memory = tmp_path / "memory.db"
    result = run(
        "import", _official_file(tmp_path / "old.jsonl"), "--memory-file", memory, env={"GRAPHMEM_SEMANTIC": "off"}
    )
    assert result.exit_code == 0 and "embedded" not in result.stdout
    bad = one_line_error(
        run("import", tmp_path / "old.jsonl", "--memory-file", memory, env={"GRAPHMEM_SEMANTIC": "maybe"})
    )
    assert "GRAPHMEM_SEMANTIC" in bad
