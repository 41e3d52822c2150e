"""JsonlStore specifics: the official file's bytes, lines it does not understand, safety
on disk and between processes, projects in the file, and round trips (hypothesis)."""

from __future__ import annotations

import json
import logging
import os
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphmem.core.errors import StorageError
from graphmem.core.models import Entity, ObservationAddition, Relation
from graphmem.core.projects import EVERY, Scope
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.search import word_search
from graphmem.storage.entity_query import EntityQuery
from graphmem.storage.jsonl import JsonlStore
from graphmem.storage.jsonl.format import decode_line, encode_graph
from graphmem.storage.sqlite import SQLiteStore

LEGACY_MESSAGES = (
    "DETECTED: Found legacy memory.json file, migrating to memory.jsonl for JSONL format compatibility\n"
    "COMPLETED: Successfully migrated memory.json to memory.jsonl\n"
)


def _graph(path: Path) -> KnowledgeGraph:
    return KnowledgeGraph(JsonlStore(path))


def _close(graph: KnowledgeGraph) -> None:
    graph.store.close()


# -- the official bytes ------------------------------------------------------------


def test_one_entity_is_written_as_the_upstream_smoke_test_expects(tmp_path: Path):
    path = tmp_path / "memory.jsonl"
    graph = _graph(path)
    graph.create_entities([Entity("Alice", "person")])
    # The official keys, byte for byte as upstream writes them; spec 002's metadata after them.
    line = path.read_bytes()
    assert line.startswith(b'{"type":"entity","name":"Alice","entityType":"person","observations":[],"createdAt":"')
    assert list(json.loads(line)) == ["type", "name", "entityType", "observations", "createdAt", "updatedAt", "version"]
    assert line.endswith(b'"version":1}\n')
    _close(graph)


def test_the_file_holds_every_entity_then_every_relation_byte_for_byte(tmp_path: Path):
    path = tmp_path / "memory.jsonl"
    graph = _graph(path)
    graph.import_graph([Entity("Alice", "person", ("likes tea", "café ☕", "line\u2028sep", 'says "hi"\n'))], [])
    graph.import_graph([], [Relation("Alice", "Bob", "knows")])
    graph.import_graph([Entity("Bob", "person")], [])
    # JSON.stringify keeps non-ASCII and U+2028 raw, escapes quotes and newlines.
    expected = (
        '{"type":"entity","name":"Alice","entityType":"person","observations":'
        '["likes tea","café ☕","line\u2028sep","says \\"hi\\"\\n"]}\n'
        '{"type":"entity","name":"Bob","entityType":"person","observations":[]}\n'
        '{"type":"relation","from":"Alice","to":"Bob","relationType":"knows"}\n'
    )
    assert path.read_bytes() == expected.encode("utf-8")
    _close(graph)


def test_deleting_everything_leaves_an_empty_file(tmp_path: Path):
    path = tmp_path / "memory.jsonl"
    graph = _graph(path)
    graph.create_entities([Entity("A", "t")])
    graph.create_relations([Relation("A", "A", "self")])
    graph.delete_entities(["A"])
    assert path.read_bytes() == b""
    _close(graph)


def test_a_file_in_the_released_layout_without_trailing_newline_loads_and_gains_one(tmp_path: Path):
    path = tmp_path / "memory.jsonl"
    path.write_bytes(
        b'{"type":"entity","name":"A","entityType":"t","observations":["x"]}\n'
        b'{"type":"relation","from":"A","to":"B","relationType":"r"}'
    )
    graph = _graph(path)
    graph.import_graph([Entity("B", "t")], [])
    assert path.read_bytes() == (
        b'{"type":"entity","name":"A","entityType":"t","observations":["x"]}\n'
        b'{"type":"entity","name":"B","entityType":"t","observations":[]}\n'
        b'{"type":"relation","from":"A","to":"B","relationType":"r"}\n'
    )
    _close(graph)


def test_a_write_that_changes_nothing_does_not_touch_the_file(tmp_path: Path):
    path = tmp_path / "memory.jsonl"
    graph = _graph(path)
    graph.create_entities([Entity("A", "t")])
    before = path.stat()
    graph.create_entities([Entity("A", "t")])
    graph.delete_entities(["Nobody"])
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    _close(graph)


# -- lines from other writers ----------------------------------------------------------

FORK_FILE = (
    '{"type":"_aim","source":"mcp-knowledge-graph"}\n'
    '{"type":"entity","name":"A","entityType":"t","observations":["x"],"createdAt":"2025-01-01T00:00:00.000Z","version":1}\n'
    '{"type":"observation","id":"obs-1","entityName":"A","content":"[S:Active] y"}\n'
    '{"type":"entity","name":"B","entityType":"t","observations":[],"aliases":["Bee"]}\n'
    '{"type":"relation","from":"A","to":"B","relationType":"r","createdAt":"2025-01-02T00:00:00.000Z","version":1}\n'
)


def test_extra_keys_and_lines_of_other_types_survive_a_rewrite(tmp_path: Path):
    path = tmp_path / "memory.jsonl"
    path.write_text(FORK_FILE, encoding="utf-8")
    graph = _graph(path)
    graph.import_graph([Entity("C", "t")], [])
    lines = FORK_FILE.splitlines(keepends=True)
    new_line = '{"type":"entity","name":"C","entityType":"t","observations":[]}\n'
    assert path.read_text(encoding="utf-8") == "".join([*lines[:4], new_line, lines[4]])
    assert graph.read_graph().entities[0].extra == {"createdAt": "2025-01-01T00:00:00.000Z", "version": 1}
    _close(graph)


def test_changing_an_entity_keeps_its_extra_keys(tmp_path: Path):
    path = tmp_path / "memory.jsonl"
    path.write_text(FORK_FILE, encoding="utf-8")
    graph = _graph(path)
    graph.add_observations([ObservationAddition("A", ("z",))])
    line = path.read_text(encoding="utf-8").splitlines()[1]
    assert line.startswith('{"type":"entity","name":"A","entityType":"t","observations":["x","z"],')
    written = json.loads(line)
    # The fork's keys survive; the change raises the version and records the new fact.
    assert written["createdAt"] == "2025-01-01T00:00:00.000Z"
    assert written["version"] == 2 and written["updatedAt"].endswith("Z")
    assert [meta["id"] for meta in written["observationMeta"]] == ["obs_1", "obs_2"]
    _close(graph)


def test_lines_are_rewritten_in_official_key_order_with_extras_last(tmp_path: Path):
    path = tmp_path / "memory.jsonl"
    path.write_text(
        '{"name": "A", "createdAt": "2025", "observations": [], "type": "entity", "entityType": "t"}\n',
        encoding="utf-8",
    )
    graph = _graph(path)
    graph.create_entities([Entity("B", "t")])
    assert path.read_text(encoding="utf-8").splitlines()[0] == (
        '{"type":"entity","name":"A","entityType":"t","observations":[],"createdAt":"2025"}'
    )
    _close(graph)


def test_lines_found_among_relations_move_before_them_and_entities_before_relations(tmp_path: Path):
    path = tmp_path / "memory.jsonl"
    path.write_text(
        '{"type":"relation","from":"A","to":"B","relationType":"r"}\n'
        '{"type":"_aim","source":"x"}\n'
        '{"type":"entity","name":"A","entityType":"t","observations":[]}\n',
        encoding="utf-8",
    )
    graph = _graph(path)
    graph.import_graph([Entity("B", "t")], [])
    assert path.read_text(encoding="utf-8") == (
        '{"type":"_aim","source":"x"}\n'
        '{"type":"entity","name":"A","entityType":"t","observations":[]}\n'
        '{"type":"entity","name":"B","entityType":"t","observations":[]}\n'
        '{"type":"relation","from":"A","to":"B","relationType":"r"}\n'
    )
    _close(graph)


def test_duplicate_names_in_a_file_are_all_kept_and_point_operations_use_the_first(tmp_path: Path):
    path = tmp_path / "memory.jsonl"
    path.write_text(
        '{"type":"entity","name":"A","entityType":"first","observations":["x"]}\n'
        '{"type":"entity","name":"A","entityType":"second","observations":["y"]}\n'
        '{"type":"relation","from":"A","to":"B","relationType":"r"}\n',
        encoding="utf-8",
    )
    graph = _graph(path)
    assert [entity.entity_type for entity in graph.read_graph().entities] == ["first", "second"]
    assert [entity.entity_type for entity in graph.open_nodes(["A"]).entities] == ["first", "second"]
    assert graph.counts().entities == 2
    graph.add_observations([ObservationAddition("A", ("y",))])  # the first A lacks "y"
    first, second = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[:2])
    assert (first["entityType"], first["observations"]) == ("first", ["x", "y"])
    assert second == {"type": "entity", "name": "A", "entityType": "second", "observations": ["y"]}
    with graph.store.read():
        assert graph.store.find_text("y")["A"].observation_hits == 2
    assert graph.delete_entities(["A"]).deleted == 1
    assert path.read_bytes() == b""
    _close(graph)


def test_duplicate_relation_lines_are_kept_and_deleted_together(tmp_path: Path):
    path = tmp_path / "memory.jsonl"
    line = '{"type":"relation","from":"A","to":"B","relationType":"r"}\n'
    path.write_text(line * 2, encoding="utf-8")
    graph = _graph(path)
    assert len(graph.read_graph().relations) == 2
    assert graph.delete_relations([Relation("A", "B", "r")]).deleted == 1
    assert path.read_bytes() == b""
    _close(graph)


def test_lone_surrogate_escapes_are_written_back_as_javascript_writes_them(tmp_path: Path):
    path = tmp_path / "memory.jsonl"
    original = '{"type":"entity","name":"broken \\ud800 text","entityType":"t","observations":[]}\n'
    path.write_text(original, encoding="utf-8")
    graph = _graph(path)
    graph.create_entities([Entity("B", "t")])
    assert path.read_text(encoding="utf-8").splitlines(keepends=True)[0] == original
    _close(graph)


def test_a_byte_order_mark_and_crlf_line_ends_are_read(tmp_path: Path):
    path = tmp_path / "memory.jsonl"
    path.write_bytes(
        b'\xef\xbb\xbf{"type":"entity","name":"A","entityType":"t","observations":[]}\r\n'
        b'{"type":"entity","name":"B","entityType":"t","observations":[]}\r\n\r\n'
    )
    graph = _graph(path)
    assert [entity.name for entity in graph.read_graph().entities] == ["A", "B"]
    _close(graph)


# -- lines that cannot be read -------------------------------------------------------

BAD_FILE = (
    b'{"type":"entity","name":"A","entityType":"t","observations":["x"]}\n'
    b"{not json\n"
    b'{"type":"entity","entityType":"t","observations":[]}\n'
    b'{"type":"relation","from":"A","to":5,"relationType":"r"}\n'
    b'{"type":"entity","name":"N","entityType":"t","observations":[],"score":NaN}\n'
    b'\xff{"type":"entity","name":"U","entityType":"t","observations":[]}\n'
    b'{"type":"relation","from":"A","to":"B","relationType":"r"}\n'
)


def test_unreadable_lines_are_skipped_with_a_warning_naming_file_and_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    path = tmp_path / "memory.jsonl"
    path.write_bytes(BAD_FILE)
    caplog.set_level(logging.WARNING, logger="graphmem.storage.jsonl")
    graph = _graph(path)
    result = graph.read_graph()
    assert [entity.name for entity in result.entities] == ["A"]
    assert result.relations == (Relation("A", "B", "r"),)
    warned = [record.getMessage() for record in caplog.records]
    assert len(warned) == 5
    assert all(f"{path} line {n} is skipped" in message for n, message in zip([2, 3, 4, 5, 6], warned, strict=True))
    # Reading alone neither changes the file nor copies it.
    assert path.read_bytes() == BAD_FILE
    assert list(tmp_path.glob("*.bak-*")) == []
    _close(graph)


def test_fork_observation_lines_are_kept_and_the_user_is_told_how_to_use_them(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    path = tmp_path / "memory.jsonl"
    fork_line = '{"type":"observation","id":"obs_1","entityName":"A","content":"[S:Active] healthy"}'
    path.write_text('{"type":"entity","name":"A","entityType":"t","observations":[]}\n' + fork_line + "\n")
    caplog.set_level(logging.WARNING, logger="graphmem.storage.jsonl")
    graph = _graph(path)
    graph.create_entities([Entity("B", "t")])
    graph.read_graph()
    warned = [record.getMessage() for record in caplog.records]
    assert len(warned) == 1
    assert "1 observation line(s)" in warned[0] and f"graphmem import {path}" in warned[0]
    assert fork_line in path.read_text(encoding="utf-8").splitlines()
    _close(graph)


def test_the_first_rewrite_backs_up_the_original_file_once(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    path = tmp_path / "memory.jsonl"
    path.write_bytes(BAD_FILE)
    caplog.set_level(logging.WARNING, logger="graphmem.storage.jsonl")
    graph = _graph(path)
    graph.import_graph([Entity("C", "t")], [])
    (backup,) = tmp_path.glob("memory.jsonl.bak-*")
    assert backup.read_bytes() == BAD_FILE
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600
    assert any(str(backup) in record.getMessage() for record in caplog.records)
    assert path.read_text(encoding="utf-8") == (
        '{"type":"entity","name":"A","entityType":"t","observations":["x"]}\n'
        '{"type":"entity","name":"C","entityType":"t","observations":[]}\n'
        '{"type":"relation","from":"A","to":"B","relationType":"r"}\n'
    )
    graph.import_graph([Entity("D", "t")], [])
    _close(graph)
    _close(_graph(path))
    assert len(list(tmp_path.glob("memory.jsonl.bak-*"))) == 1


@pytest.mark.slow
def test_the_warning_reaches_stderr_without_any_logging_setup(tmp_path: Path):
    path = tmp_path / "memory.jsonl"
    path.write_bytes(BAD_FILE)
    script = (
        "import sys\nfrom graphmem.storage.jsonl import JsonlStore\n"
        "store = JsonlStore(sys.argv[1])\nwith store.read(): pass\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert f"{path} line 2 is skipped" in done.stderr
    assert done.stdout == ""


# -- the file on disk ------------------------------------------------------------------


def test_a_new_file_and_its_lock_are_readable_by_the_owner_only(tmp_path: Path):
    path = tmp_path / "a" / "b" / "memory.jsonl"  # missing folders are created
    graph = _graph(path)
    graph.create_entities([Entity("A", "t")])
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "a" / "b" / "memory.jsonl.lock").stat().st_mode) == 0o600
    _close(graph)


def test_an_existing_file_keeps_its_mode_across_rewrites(tmp_path: Path):
    path = tmp_path / "memory.jsonl"
    path.write_text("", encoding="utf-8")
    path.chmod(0o640)
    graph = _graph(path)
    graph.create_entities([Entity("A", "t")])
    graph.create_entities([Entity("B", "t")])
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    _close(graph)


def test_writes_replace_the_file_and_leave_no_temp_files(tmp_path: Path):
    path = tmp_path / "memory.jsonl"
    graph = _graph(path)
    graph.create_entities([Entity("A", "t")])
    inode = path.stat().st_ino
    graph.create_entities([Entity("B", "t")])
    assert path.stat().st_ino != inode
    # The memory, its lock and its change log: no temporary file left.
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "memory.jsonl",
        "memory.jsonl.changes.jsonl",
        "memory.jsonl.lock",
    ]
    _close(graph)


def test_temporary_files_left_by_a_killed_writer_are_removed_on_open(tmp_path: Path):
    path = tmp_path / "memory.jsonl"
    _close(_graph(path))
    stale = tmp_path / ".memory.jsonl.k1ll3d.tmp"
    stale.write_text('{"type":"entity","name":"half', encoding="utf-8")
    unrelated = tmp_path / ".other.jsonl.abc.tmp"
    unrelated.write_text("", encoding="utf-8")
    graph = _graph(path)
    assert not stale.exists()
    assert unrelated.exists()
    _close(graph)


def test_a_symlinked_memory_file_is_written_through_the_link(tmp_path: Path):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "memory.jsonl"
    link = tmp_path / "memory.jsonl"
    link.symlink_to(target)
    graph = _graph(link)
    graph.create_entities([Entity("A", "t")])
    assert link.is_symlink()
    assert b'"name":"A"' in target.read_bytes()
    _close(graph)


def test_a_save_that_fails_rolls_back_memory_and_leaves_the_file(tmp_path: Path):
    path = tmp_path / "memory.jsonl"
    graph = _graph(path)
    graph.create_entities([Entity("A", "t")])
    before = path.read_bytes()
    store = graph.store
    with pytest.raises(ValueError), store.write():
        # NaN has no JSON form: the failure comes from inside the save, after the block.
        store.insert_entities([Entity("Bad", "t", (), {"score": float("nan")})])
    assert path.read_bytes() == before
    assert [entity.name for entity in graph.read_graph().entities] == ["A"]
    graph.create_entities([Entity("B", "t")])
    assert [entity.name for entity in graph.read_graph().entities] == ["A", "B"]
    _close(graph)


def test_file_system_errors_become_storage_errors(tmp_path: Path):
    (tmp_path / "plain").write_text("", encoding="utf-8")
    with pytest.raises(StorageError):
        JsonlStore(tmp_path / "plain" / "memory.jsonl")
    path = tmp_path / "memory.jsonl"
    graph = _graph(path)
    path.mkdir()  # something replaced the file with a folder
    with pytest.raises(StorageError, match="could not be accessed"):
        graph.read_graph()
    _close(graph)


def test_a_closed_store_refuses_work(tmp_path: Path):
    graph = _graph(tmp_path / "memory.jsonl")
    _close(graph)
    _close(graph)  # closing twice is harmless
    with pytest.raises(StorageError, match="closed"):
        graph.read_graph()


def test_many_deletions_compact_the_memory_and_keep_everything_consistent(tmp_path: Path):
    path = tmp_path / "memory.jsonl"
    graph = _graph(path)
    graph.import_graph(
        [Entity(f"e{i}", "t", (f"o{i}",)) for i in range(3000)],
        [Relation(f"e{i}", f"e{i + 1}", "next") for i in range(2999)],
    )
    store = graph.store.inner
    assert isinstance(store, JsonlStore)
    with store.write():
        assert store.delete_entities([f"e{i}" for i in range(2500)]) == 2500
    assert len(store._head) == 500  # the holes are gone
    graph.add_observations([ObservationAddition("e2600", ("more",))])
    assert graph.open_nodes(["e2600"]).entities[0].observations == ("o2600", "more")
    assert len(graph.open_nodes(["e2600"]).relations) == 2
    with pytest.raises(KeyError), store.write():
        store.delete_entities(["e2999"])
        raise KeyError
    assert graph.read_graph() == _graph(path).read_graph()
    assert graph.counts().entities == 500
    _close(graph)


# -- the official server's legacy migration ------------------------------------------------


def test_a_legacy_memory_json_is_renamed_with_the_official_messages(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    legacy = tmp_path / "memory.json"
    legacy.write_text('{"type":"entity","name":"A","entityType":"t","observations":[]}', encoding="utf-8")
    graph = _graph(tmp_path / "memory.jsonl")
    assert capsys.readouterr().err == LEGACY_MESSAGES
    assert not legacy.exists()
    assert [entity.name for entity in graph.read_graph().entities] == ["A"]
    _close(graph)


def test_when_both_files_exist_the_jsonl_one_is_used_silently(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    (tmp_path / "memory.json").write_text(
        '{"type":"entity","name":"Old","entityType":"t","observations":[]}', encoding="utf-8"
    )
    (tmp_path / "memory.jsonl").write_text(
        '{"type":"entity","name":"New","entityType":"t","observations":[]}', encoding="utf-8"
    )
    graph = _graph(tmp_path / "memory.jsonl")
    assert [entity.name for entity in graph.read_graph().entities] == ["New"]
    assert capsys.readouterr().err == ""
    assert (tmp_path / "memory.json").exists()
    _close(graph)


def test_a_json_path_is_itself_a_jsonl_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    path = tmp_path / "memory.json"
    path.write_text('{"type":"entity","name":"A","entityType":"t","observations":[]}', encoding="utf-8")
    graph = _graph(path)
    graph.create_entities([Entity("B", "t")])
    assert [entity.name for entity in graph.read_graph().entities] == ["A", "B"]
    assert path.read_text(encoding="utf-8").count("\n") == 2
    assert capsys.readouterr().err == ""
    assert not (tmp_path / "memory.jsonl").exists()
    _close(graph)


# -- sharing the file ---------------------------------------------------------------------------


def test_two_stores_on_one_file_see_each_others_writes(tmp_path: Path):
    path = tmp_path / "memory.jsonl"
    first, second = _graph(path), _graph(path)
    assert first.read_graph().entities == ()
    assert second.read_graph().entities == ()
    first.create_entities([Entity("A", "t", ("a",))])
    assert [entity.name for entity in second.read_graph().entities] == ["A"]
    second.create_entities([Entity("B", "t")])
    first.create_entities([Entity("C", "t")])  # must not lose B
    assert [entity.name for entity in second.read_graph().entities] == ["A", "B", "C"]
    _close(first)
    _close(second)


def test_a_same_size_change_by_another_store_is_seen(tmp_path: Path):
    path = tmp_path / "memory.jsonl"
    first, second = _graph(path), _graph(path)
    first.create_entities([Entity("A", "t", ("a",))])
    assert second.read_graph().entities[0].observations == ("a",)
    with first.store.write():
        first.store.remove_observations("A", ["a"])
        first.store.append_observations("A", ["b"])
    assert second.read_graph().entities[0].observations == ("b",)
    _close(first)
    _close(second)


def test_a_change_by_a_writer_without_the_lock_is_seen(tmp_path: Path):
    path = tmp_path / "memory.jsonl"
    graph = _graph(path)
    graph.create_entities([Entity("A", "t")])
    # The official server writes a temp file and renames it, taking no lock.
    temp = tmp_path / "memory.jsonl.0123.tmp"
    temp.write_text('{"type":"entity","name":"Z","entityType":"t","observations":[]}', encoding="utf-8")
    os.replace(temp, path)
    assert [entity.name for entity in graph.read_graph().entities] == ["Z"]
    _close(graph)


_WORKER = """
import sys
from graphmem.domain.graph import KnowledgeGraph
from graphmem.core.models import Entity, ObservationAddition
from graphmem.storage.jsonl import JsonlStore

path, worker = sys.argv[1], sys.argv[2]
graph = KnowledgeGraph(JsonlStore(path))
for i in range(50):
    graph.create_entities([Entity(f"w{worker}-{i}", "t")])
    graph.add_observations([ObservationAddition("hub", (f"w{worker}-{i}",))])
"""


@pytest.mark.slow
def test_four_processes_writing_at_once_lose_nothing(tmp_path: Path):
    path = tmp_path / "memory.jsonl"
    graph = _graph(path)
    graph.create_entities([Entity("hub", "t")])
    workers = [
        subprocess.Popen([sys.executable, "-c", _WORKER, str(path), str(n)], stderr=subprocess.PIPE, text=True)
        for n in range(4)
    ]
    for worker in workers:
        _, errors = worker.communicate(timeout=120)
        assert worker.returncode == 0, errors
    result = graph.read_graph()
    assert len(result.entities) == 1 + 4 * 50
    assert len(result.entities[0].observations) == 4 * 50
    _close(graph)


# -- projects in the file ----------------------------------------------------------------------

API, TOOL = Scope("github.com/acme/api"), Scope("tool")


def _write_projects(store: JsonlStore) -> None:
    """Alice shared, with a fork's key; a README in the api project; a relation in each space."""
    with store.write():
        store.insert_entities(
            [
                Entity("Alice", "person", ("reviews code",), {"createdAt": "2026-01-01T00:00:00.000Z"}),
                Entity("README", "file", ("explains the api",), {"version": 2}, project=API.home),
            ]
        )
        store.insert_relations(
            [Relation("Alice", "README", "wrote", project=API.home), Relation("Alice", "Alice", "is")]
        )


def test_a_project_s_lines_carry_its_key_after_the_official_ones_and_shared_lines_none(tmp_path: Path):
    path = tmp_path / "memory.jsonl"
    store = JsonlStore(path)
    _write_projects(store)
    assert path.read_text(encoding="utf-8") == (
        '{"type":"entity","name":"Alice","entityType":"person","observations":["reviews code"],'
        '"createdAt":"2026-01-01T00:00:00.000Z"}\n'
        '{"type":"entity","name":"README","entityType":"file","observations":["explains the api"],'
        '"project":"github.com/acme/api","version":2}\n'
        '{"type":"relation","from":"Alice","to":"README","relationType":"wrote","project":"github.com/acme/api"}\n'
        '{"type":"relation","from":"Alice","to":"Alice","relationType":"is"}\n'
    )
    store.close()


def test_a_memory_without_projects_is_written_as_it_was_before_projects(tmp_path: Path):
    path = tmp_path / "memory.jsonl"
    records: list[dict[str, Any]] = [
        {"type": "entity", "name": "A", "entityType": "t", "observations": ["x"]},
        {"type": "entity", "name": "B", "entityType": "t", "observations": [], "createdAt": "2025", "version": 1},
        {"type": "relation", "from": "A", "to": "B", "relationType": "r"},
        {"type": "relation", "from": "B", "to": "A", "relationType": "r", "version": 1},
    ]
    store = JsonlStore(path)
    with store.write():
        store.insert_entities([Entity("A", "t", ("x",)), Entity("B", "t", (), {"createdAt": "2025", "version": 1})])
        store.insert_relations([Relation("A", "B", "r"), Relation("B", "A", "r", {"version": 1})])
    assert path.read_bytes() == _official(records)
    store.close()


def test_projects_survive_reopening_as_fields_not_extra_keys(tmp_path: Path):
    path = tmp_path / "memory.jsonl"
    _write_projects(JsonlStore(path))
    store = JsonlStore(path)
    with store.read():
        alice, readme = store.iter_entities()
        assert (alice.project, alice.extra) == ("", {"createdAt": "2026-01-01T00:00:00.000Z"})
        assert (readme.project, readme.extra) == (API.home, {"version": 2})
        assert [(r.key, r.project, r.extra) for r in store.iter_relations()] == [
            (("Alice", "README", "wrote"), API.home, None),
            (("Alice", "Alice", "is"), "", None),
        ]
    with store.read(TOOL):
        assert [entity.name for entity in store.iter_entities()] == ["Alice"]
    store.close()


def test_a_change_to_a_project_s_entity_keeps_it_in_its_project(tmp_path: Path):
    path = tmp_path / "memory.jsonl"
    store = JsonlStore(path)
    _write_projects(store)
    with store.write(API):
        store.append_observations("README", ["lists the commands"])
        store.update_entity("README", Entity("README.md", "file", (), {"version": 3}))
    line = path.read_text(encoding="utf-8").splitlines()[1]
    assert json.loads(line) == {
        "type": "entity",
        "name": "README.md",
        "entityType": "file",
        "observations": ["explains the api", "lists the commands"],
        "project": API.home,
        "version": 3,
    }
    store.close()


def test_a_move_rewrites_the_lines_and_one_to_where_it_is_leaves_the_file(tmp_path: Path):
    path = tmp_path / "memory.jsonl"
    store = JsonlStore(path)
    _write_projects(store)
    before = path.stat()
    with store.write(API):
        assert store.move_entities(["Alice"], "", "") == 0
        assert store.move_relations([("Alice", "Alice", "is")], "", "") == 0
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    with store.write(API):
        assert store.move_entities(["README"], API.home, "") == 1
        assert store.move_relations([("Alice", "README", "wrote")], API.home, "") == 1
    assert '"project"' not in path.read_text(encoding="utf-8")
    store.close()


def _placed(store: JsonlStore) -> object:
    """Every entity and relation with its project (no part of their equality)."""
    with store.read():
        return (
            [(entity, entity.project) for entity in store.iter_entities()],
            [(relation, relation.project) for relation in store.iter_relations()],
        )


def test_a_rolled_back_move_leaves_memory_and_file_as_they_were(tmp_path: Path):
    path = tmp_path / "memory.jsonl"
    store = JsonlStore(path)
    _write_projects(store)
    before, placed = path.read_bytes(), _placed(store)
    with pytest.raises(KeyError), store.write():
        store.move_entities(["README"], API.home, TOOL.home)
        store.move_relations([("Alice", "README", "wrote"), ("Alice", "Alice", "is")], API.home, TOOL.home)
        raise KeyError
    assert (path.read_bytes(), _placed(store)) == (before, placed)
    with store.read(API):
        assert [entity.name for entity in store.get_entities(["README"])] == ["README"]
        assert len(store.relations_touching(["README"])) == 1
    store.close()


def test_a_file_written_by_the_official_server_opens_with_everything_shared(tmp_path: Path):
    # What the official server writes back, having read a file with projects: its own keys only.
    path = tmp_path / "memory.jsonl"
    path.write_text(
        '{"type":"entity","name":"Alice","entityType":"person","observations":["reviews code"]}\n'
        '{"type":"entity","name":"README","entityType":"file","observations":["explains the api"]}\n'
        '{"type":"relation","from":"Alice","to":"README","relationType":"wrote"}\n',
        encoding="utf-8",
    )
    store = JsonlStore(path)
    with store.read(TOOL):
        assert [(entity.name, entity.project) for entity in store.iter_entities()] == [
            ("Alice", ""),
            ("README", ""),
        ]
        assert [relation.project for relation in store.iter_relations()] == [""]
    with store.read():
        assert [(c.project, c.entities, c.relations) for c in store.project_counts()] == [("", 2, 1)]
    store.close()


def test_the_official_server_reads_a_project_s_line_as_an_official_record(tmp_path: Path):
    path = tmp_path / "memory.jsonl"
    _write_projects(JsonlStore(path))
    # The official loader keeps `name`, `entityType` and `observations` (`from`, `to`,
    # `relationType`) of every line, whatever else the line holds.
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [(record["type"], record.get("name", record.get("from"))) for record in records] == [
        ("entity", "Alice"),
        ("entity", "README"),
        ("relation", "Alice"),
        ("relation", "Alice"),
    ]
    assert records[1]["observations"] == ["explains the api"]


@pytest.mark.parametrize("project", ["5", "null", '["api"]', '{"id":"api"}', "true"])
def test_a_project_that_is_not_a_string_makes_its_line_unreadable_as_a_bad_name_does(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, project: str
):
    path = tmp_path / "memory.jsonl"
    original = (
        '{"type":"entity","name":"A","entityType":"t","observations":[]}\n'
        f'{{"type":"entity","name":"B","entityType":"t","observations":[],"project":{project}}}\n'
        f'{{"type":"relation","from":"A","to":"B","relationType":"r","project":{project}}}\n'
    ).encode()
    path.write_bytes(original)
    caplog.set_level(logging.WARNING, logger="graphmem.storage.jsonl")
    store = JsonlStore(path)
    with store.read():
        assert [entity.name for entity in store.iter_entities()] == ["A"]
        assert list(store.iter_relations()) == []
    assert store.integrity_problems() == [
        "line 2 cannot be read and is left out",
        "line 3 cannot be read and is left out",
    ]
    assert all("'project' must be a string" in record.getMessage() for record in caplog.records)
    assert path.read_bytes() == original
    # The first rewrite keeps the file as it was beside it, as for any unreadable line.
    with store.write():
        store.insert_entities([Entity("C", "t")])
    (backup,) = tmp_path.glob("memory.jsonl.bak-*")
    assert backup.read_bytes() == original
    store.close()


def test_an_empty_project_is_the_shared_space_and_is_written_without_the_key(tmp_path: Path):
    path = tmp_path / "memory.jsonl"
    path.write_text(
        '{"type":"entity","name":"A","entityType":"t","observations":[],"project":""}\n'
        '{"type":"relation","from":"A","to":"A","relationType":"r","project":"","version":1}\n',
        encoding="utf-8",
    )
    store = JsonlStore(path)
    with store.write():
        (entity,) = store.iter_entities()
        (relation,) = store.iter_relations()
        assert (entity.project, entity.extra, relation.project, relation.extra) == ("", None, "", {"version": 1})
        store.insert_entities([Entity("B", "t")])
    assert path.read_text(encoding="utf-8") == (
        '{"type":"entity","name":"A","entityType":"t","observations":[]}\n'
        '{"type":"entity","name":"B","entityType":"t","observations":[]}\n'
        '{"type":"relation","from":"A","to":"A","relationType":"r","version":1}\n'
    )
    store.close()


def test_an_extra_project_key_is_never_written_as_the_project(tmp_path: Path):
    # Only the field says where a record lives: an extra `project` (no reader puts one
    # there) must not move the record when the file is read again.
    path = tmp_path / "memory.jsonl"
    store = JsonlStore(path)
    with store.write():
        store.insert_entities([Entity("A", "t", (), {"project": "elsewhere", "version": 1})])
        store.insert_relations([Relation("A", "A", "r", {"project": "elsewhere"}, project=TOOL.home)])
    assert path.read_text(encoding="utf-8") == (
        '{"type":"entity","name":"A","entityType":"t","observations":[],"version":1}\n'
        '{"type":"relation","from":"A","to":"A","relationType":"r","project":"tool"}\n'
    )
    store.close()


def test_threads_each_read_in_their_own_scope(tmp_path: Path):
    # The scope is the running transaction's: another thread's transaction waits for it to
    # end and then runs in its own scope, never joining it.
    store = JsonlStore(tmp_path / "memory.jsonl")
    _write_projects(store)
    seen: dict[str, set[str]] = {}
    failures: list[BaseException] = []

    def read_many(scope: Scope) -> None:
        try:
            for _ in range(200):
                with store.read(scope):
                    names = {entity.name for entity in store.iter_entities()}
                    assert seen.setdefault(str(scope.project), names) == names
        except BaseException as exc:  # handed to the main thread, which fails the test
            failures.append(exc)

    threads = [threading.Thread(target=read_many, args=(scope,)) for scope in (API, TOOL, API, TOOL)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert failures == []
    assert seen == {API.home: {"Alice", "README"}, TOOL.home: {"Alice"}}
    store.close()


def _fill_like_sqlite(store: JsonlStore | SQLiteStore) -> None:
    """Projects with aliases, times, importance, threads and relations, dangling ones too."""

    def meta(updated: str, importance: float, **more: object) -> dict[str, object]:
        return {"updatedAt": updated, "importance": importance, "threadId": "t1", **more}

    with store.write():
        store.insert_entities(
            [
                Entity("Alice", "person", ("reviews code",), meta("2026-01-02T00:00:00.000Z", 0.5, aliases=["Al"])),
                Entity("README", "file", ("the api",), meta("2026-03-01T10:00:00+02:00", 0.9), API.home),
                Entity("README", "file", ("the tool",), meta("2026-02-01T00:00:00Z", 0.1), TOOL.home),
                Entity("api-server", "service", ("serves",), meta("2026-01-05", 0.7, aliases=["Al"]), API.home),
                Entity("cli", "service", ("runs",), {"aliases": ["Al", "c"]}, TOOL.home),
            ]
        )
        store.insert_relations(
            [
                Relation("Alice", "README", "wrote", project=API.home),
                Relation("Alice", "README", "wrote", project=TOOL.home),
                Relation("README", "api-server", "describes", project=API.home),
                Relation("cli", "Ghost", "haunts", project=TOOL.home),
                Relation("Alice", "Ghost", "fears"),
            ]
        )


def _answers(store: JsonlStore | SQLiteStore, scope: Scope) -> list[object]:
    names = ["Alice", "README", "api-server", "cli", "Ghost"]
    with store.read(scope):
        # Not a needle of both READMEs: across every project, SQLite gives one name's hits
        # from one of them and JSONL adds up both (as for the duplicate names of a file).
        hits = store.find_text("s")
        return [
            store.existing_names(names),
            store.resolve_names(["Al", "c", "README", "nobody"]),
            [(entity, entity.project, entity.extra) for entity in store.get_entities(names)],
            [(entity, entity.project) for entity in store.iter_entities()],
            [(relation, relation.project) for relation in store.iter_relations()],
            store.official_graph(100),
            store.page_entities("service", 0, None),
            store.query_entities(EntityQuery(has_relation=True, sort="updatedAt", descending=True)),
            store.relations_touching(["README", "Ghost"]),
            store.relations_among(names, 10),
            store.relation_keys_touching(["Alice"]),
            store.existing_relations([("Alice", "README", "wrote"), ("cli", "Ghost", "haunts")]),
            [store.observations_of(name) for name in names],
            sorted((name, hit.in_name, hit.in_type, hit.observation_hits) for name, hit in hits.items()),
            store.counts(),
            store.entity_type_counts(),
            store.relation_type_counts(),
            store.find_relations("Alice", None, None, 0, None),
            store.find_relations(None, None, "wrote", 1, 5),
            store.analytics(None, 10),
            store.analytics("t1", 2),
            store.most_connected(None, 0, 10),
            store.most_connected("service", 0, 10),
            store.project_counts(),
        ]


@pytest.mark.parametrize("scope", [EVERY, API, TOOL, Scope("")], ids=["every", "api", "tool", "shared"])
def test_every_read_in_a_scope_answers_as_sqlite_does(tmp_path: Path, scope: Scope):
    answers = []
    for store in (SQLiteStore(tmp_path / "m.db"), JsonlStore(tmp_path / "m.jsonl")):
        _fill_like_sqlite(store)
        answers.append(_answers(store, scope))
        store.close()
    for sqlite_answer, jsonl_answer in zip(*answers, strict=True):
        assert jsonl_answer == sqlite_answer


def _write_in_scopes(store: JsonlStore | SQLiteStore) -> list[object]:
    """Writes by name and key in a project's scope and across every project; what each returned."""
    returned: list[object] = []
    with store.write(TOOL):
        store.append_observations("README", ["lists the commands"])
        store.update_extras([Entity("README", "file", (), {"version": 2})])
        store.update_entity("cli", Entity("cli2", "tool", (), {"aliases": ["c"]}))
        returned.append(store.remove_observations("README", ["the tool", "the api"]))
        returned.append(store.delete_relations([("Alice", "README", "wrote"), ("README", "api-server", "describes")]))
        returned.append(store.move_entities(["cli2", "api-server"], TOOL.home, ""))
        returned.append(store.move_relations([("cli", "Ghost", "haunts")], TOOL.home, ""))
    with store.write(API):
        returned.append(store.delete_entities(["README"]))
    with store.write():
        returned.append(store.delete_entities(["Alice"]))
        returned.append(store.delete_project(TOOL.home))
    return returned


def test_writes_in_a_scope_change_what_sqlite_s_change(tmp_path: Path):
    answers = []
    for store in (SQLiteStore(tmp_path / "m.db"), JsonlStore(tmp_path / "m.jsonl")):
        _fill_like_sqlite(store)
        returned = _write_in_scopes(store)
        answers.append([returned, *_answers(store, EVERY)])
        store.close()
    for sqlite_answer, jsonl_answer in zip(*answers, strict=True):
        assert jsonl_answer == sqlite_answer


def test_deleting_a_name_no_entity_holds_takes_the_relations_naming_it_that_the_scope_sees(tmp_path: Path):
    # As the official server deletes dangling relations by name, and as graphmem did before projects.
    store = JsonlStore(tmp_path / "memory.jsonl")
    _fill_like_sqlite(store)
    with store.write(API):
        assert store.delete_entities(["Ghost"]) == 0
    with store.read():
        assert [r.key for r in store.iter_relations() if "Ghost" in r.key] == [("cli", "Ghost", "haunts")]
    store.close()


_HOMES = st.sampled_from(["", "p", "q"])
"""The shared space and two projects, for the properties below."""
_WORDS = st.lists(st.sampled_from("tea green berlin moved moving café bob bobby acme the".split()), max_size=4)


@settings(max_examples=30, deadline=None)
@given(
    entities=st.lists(
        st.tuples(_WORDS.map(" ".join), st.sampled_from(["person", "city"]), _WORDS.map(" ".join), _HOMES),
        max_size=10,
        unique_by=lambda entity: entity[0],
    ),
    query=_WORDS.map(" ".join),
    project=st.sampled_from(["p", "q"]),
    limit=st.sampled_from([None, 2]),
)
def test_a_search_in_a_project_ranks_as_sqlite_ranks_it(
    entities: list[tuple[str, str, str, str]], query: str, project: str, limit: int | None
):
    # Both rank as a memory of what the project sees (its entities and the shared space's) alone would.
    plan = word_search([query], limit=limit)
    memory = [Entity(name, entity_type, (fact,), project=home) for name, entity_type, fact, home in entities]
    answers = []
    with tempfile.TemporaryDirectory() as folder:
        for store in (SQLiteStore(Path(folder) / "m.db"), JsonlStore(Path(folder) / "m.jsonl")):
            with store.write():
                store.insert_entities(memory)
            with store.read(Scope(project)):
                answers.append(store.search_entities(plan))
            store.close()
    assert answers[0] == answers[1]


# -- round trips (hypothesis) ------------------------------------------------------------------

_CHARS = st.one_of(
    st.characters(exclude_categories=["Cs"]),
    st.sampled_from(["\u2028", "\u2029", "\x00", "\n", "\r", '"', "\\", "é", "😀", "İ", "\ufeff"]),
)
_TEXT = st.text(_CHARS, max_size=8)
_JSON: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | _TEXT,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(_TEXT, children, max_size=3),
    max_leaves=6,
)
_ENTITY_LINE = st.builds(
    lambda name, entity_type, observations, extra: {
        "type": "entity",
        "name": name,
        "entityType": entity_type,
        "observations": observations,
        **extra,
    },
    _TEXT,
    _TEXT,
    st.lists(_TEXT, max_size=3),
    # `project` is a field, not an extra key: lines of a project are made by `_in_project`.
    st.dictionaries(
        _TEXT.filter(lambda key: key not in ("type", "name", "entityType", "observations", "project")),
        _JSON,
        max_size=2,
    ),
)
_RELATION_LINE = st.builds(
    lambda from_, to, relation_type, extra: {
        "type": "relation",
        "from": from_,
        "to": to,
        "relationType": relation_type,
        **extra,
    },
    _TEXT,
    _TEXT,
    _TEXT,
    st.dictionaries(
        _TEXT.filter(lambda key: key not in ("type", "from", "to", "relationType", "project")), _JSON, max_size=2
    ),
)


def _in_project(record: dict[str, Any], project: str) -> dict[str, Any]:
    """The record as a line of `project` is written: its key right after the four official ones
    (none for the shared space)."""
    if not project:
        return record
    items = list(record.items())
    return dict([*items[:4], ("project", project), *items[4:]])


_PROJECTS = st.sampled_from(["", "github.com/acme/api", "/home/a/tool"]) | _TEXT
_PROJECT_ENTITY_LINE = st.builds(_in_project, _ENTITY_LINE, _PROJECTS)
_PROJECT_RELATION_LINE = st.builds(_in_project, _RELATION_LINE, _PROJECTS)
_OTHER_LINE = st.builds(
    lambda kind, payload: {"type": kind, "payload": payload}, st.sampled_from(["_aim", "observation"]), _JSON
)


def _official(records: list[dict[str, Any]]) -> bytes:
    """The file as JSON.stringify writes it (the reference doc verified these bytes)."""
    return "".join(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n" for record in records).encode()


@settings(max_examples=80, deadline=None)
@given(
    head=st.lists(st.one_of(_ENTITY_LINE, _PROJECT_ENTITY_LINE, _OTHER_LINE), max_size=6),
    relations=st.lists(st.one_of(_RELATION_LINE, _PROJECT_RELATION_LINE), max_size=6),
)
def test_any_file_loaded_and_written_again_is_identical(head: list[dict[str, Any]], relations: list[dict[str, Any]]):
    original = _official(head + relations)
    names = {str(record.get(key)) for record in head + relations for key in ("name", "from", "to")}
    probe = next(f"probe-{n}" for n in range(len(names) + 1) if f"probe-{n}" not in names)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "memory.jsonl"
        path.write_bytes(original)
        store = JsonlStore(path)
        with store.write():  # a change and its undo, so the file is rewritten from memory
            store.insert_entities([Entity(probe, "t")])
            store.delete_entities([probe])
        store.close()
        assert path.read_bytes() == original


@settings(max_examples=60, deadline=None)
@given(
    entities=st.lists(_ENTITY_LINE, max_size=6, unique_by=lambda record: record["name"]).map(
        lambda records: [{**record, "observations": list(dict.fromkeys(record["observations"]))} for record in records]
    ),
    relations=st.lists(
        _RELATION_LINE, max_size=6, unique_by=lambda record: (record["from"], record["to"], record["relationType"])
    ),
)
def test_a_file_imported_into_sqlite_exports_the_same_bytes(
    entities: list[dict[str, Any]], relations: list[dict[str, Any]]
):
    original = _official(entities + relations)
    records = [decode_line(line, number) for number, line in enumerate(original.decode().split("\n"), start=1)]
    store = SQLiteStore(":memory:")
    KnowledgeGraph(store).import_graph(
        [record.entity for record in records if record is not None and hasattr(record, "entity")],
        [record.relation for record in records if record is not None and hasattr(record, "relation")],
    )
    with store.read():
        exported = "".join(encode_graph(store.iter_entities(), store.iter_relations())).encode()
    store.close()
    assert exported == original


_NAMES = st.sampled_from(["a", "b", "c"])
_OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("insert_entity"), _NAMES, st.lists(st.sampled_from("xyz"), max_size=2), _HOMES),
        st.tuples(st.just("insert_relation"), _NAMES, _NAMES, _HOMES),
        st.tuples(st.just("append"), _NAMES, st.lists(st.sampled_from("xyz"), min_size=1, max_size=2)),
        st.tuples(st.just("remove"), _NAMES, st.lists(st.sampled_from("xyz"), max_size=2)),
        st.tuples(st.just("delete_entities"), st.lists(_NAMES, max_size=2)),
        st.tuples(st.just("delete_relation"), _NAMES, _NAMES),
        st.tuples(st.just("move_entity"), _NAMES, _HOMES),
        st.tuples(st.just("move_relation"), _NAMES, _NAMES, _HOMES),
    ),
    max_size=12,
)
_SCOPES = [EVERY, Scope("p")]


def _apply(store: JsonlStore, operation: tuple[Any, ...]) -> None:
    match operation:
        case ("insert_entity", name, observations, project):
            store.insert_entities([Entity(name, "t", tuple(observations), project=project)])
        case ("insert_relation", from_, to, project):
            store.insert_relations([Relation(from_, to, "r", project=project)])
        # A move takes what is in the other project of the two the operations use.
        case ("move_entity", name, project):
            store.move_entities([name], "p" if project == "" else "", project)
        case ("move_relation", from_, to, project):
            store.move_relations([(from_, to, "r")], "p" if project == "" else "", project)
        case ("append", name, contents):
            store.append_observations(name, contents)
        case ("remove", name, contents):
            store.remove_observations(name, contents)
        case ("delete_entities", names):
            store.delete_entities(names)
        case ("delete_relation", from_, to):
            store.delete_relations([(from_, to, "r")])


def _everything(store: JsonlStore) -> object:
    """What every query answers, in every project and in one, so indexes that drift from the rows would show."""
    return [_everything_in(store, scope) for scope in _SCOPES]


def _everything_in(store: JsonlStore, scope: Scope) -> object:
    names = ["a", "b", "c"]
    with store.read(scope):
        hits = store.find_text("x")
        return (
            # `project` is no part of equality: compared on its own.
            [(entity, entity.project) for entity in store.iter_entities()],
            [(relation, relation.project) for relation in store.iter_relations()],
            store.project_counts(),
            store.existing_names(names),
            store.get_entities(names),
            [store.observations_of(name) for name in names],
            [store.relations_touching([name]) for name in names],
            store.existing_relations([(f, t, "r") for f in names for t in names]),
            store.counts(),
            # `order` is any increasing number, so only the order it gives is compared.
            [
                (name, h.in_name, h.in_type, h.observation_hits)
                for name, h in sorted(hits.items(), key=lambda i: i[1].order)
            ],
        )


@settings(max_examples=80, deadline=None)
@given(first=_OPERATIONS, second=_OPERATIONS, fail=st.booleans(), scope=st.sampled_from(_SCOPES))
def test_memory_always_matches_the_file_after_commits_and_rollbacks(
    first: list[tuple[Any, ...]], second: list[tuple[Any, ...]], fail: bool, scope: Scope
):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "memory.jsonl"
        store = JsonlStore(path)
        with store.write():
            for operation in first:
                _apply(store, operation)
        before = _everything(store)
        try:
            with store.write(scope):
                for operation in second:
                    _apply(store, operation)
                if fail:
                    raise RuntimeError("abort")
        except RuntimeError:
            assert _everything(store) == before
        fresh = JsonlStore(path)
        assert _everything(store) == _everything(fresh)
        store.close()
        fresh.close()
