"""Settings: where the memory lives and how flags and the environment combine."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphmem.config import Settings, default_memory_path
from graphmem.errors import ConfigError


def test_with_nothing_set_the_memory_is_in_the_user_data_directory(tmp_path: Path):
    settings = Settings.from_env({}, cwd=tmp_path)
    assert settings.memory_path == default_memory_path()
    assert settings.memory_path.is_absolute()
    assert "graphmem" in settings.memory_path.parts
    assert "site-packages" not in settings.memory_path.parts
    assert settings.backend == "sqlite"


def test_a_relative_memory_file_path_resolves_against_the_working_directory(tmp_path: Path):
    settings = Settings.from_env({"MEMORY_FILE_PATH": "data/memory.jsonl"}, cwd=tmp_path)
    assert settings.memory_path == tmp_path / "data" / "memory.jsonl"


def test_an_absolute_memory_file_path_is_used_as_is(tmp_path: Path):
    target = tmp_path / "elsewhere" / "m.db"
    assert Settings.from_env({"MEMORY_FILE_PATH": str(target)}).memory_path == target


def test_the_flag_wins_over_the_environment(tmp_path: Path):
    settings = Settings.from_env({"MEMORY_FILE_PATH": "env.db"}, memory_file="flag.db", cwd=tmp_path)
    assert settings.memory_path == tmp_path / "flag.db"


def test_a_tilde_expands_to_the_home_directory():
    assert Settings.from_env({"MEMORY_FILE_PATH": "~/m.db"}).memory_path == Path.home() / "m.db"


@pytest.mark.parametrize(
    ("name", "backend"),
    [
        ("memory.jsonl", "jsonl"),
        ("memory.json", "jsonl"),
        ("MEMORY.JSONL", "jsonl"),
        ("memory.db", "sqlite"),
        ("memory.sqlite", "sqlite"),
        ("memory", "sqlite"),
    ],
)
def test_the_suffix_chooses_the_backend(tmp_path: Path, name: str, backend: str):
    assert Settings.from_env({"MEMORY_FILE_PATH": name}, cwd=tmp_path).backend == backend


def test_a_directory_is_refused_with_the_key_and_value(tmp_path: Path):
    with pytest.raises(ConfigError) as raised:
        Settings.from_env({"MEMORY_FILE_PATH": str(tmp_path)})
    assert "MEMORY_FILE_PATH" in str(raised.value)
    assert str(tmp_path) in str(raised.value)


def test_strict_is_read_from_the_environment():
    assert Settings.from_env({"GRAPHMEM_STRICT": "true"}).strict is True
    assert Settings.from_env({"GRAPHMEM_STRICT": "0"}).strict is False


def test_an_unreadable_bool_names_the_key_and_the_value():
    with pytest.raises(ConfigError, match="GRAPHMEM_STRICT") as raised:
        Settings.from_env({"GRAPHMEM_STRICT": "maybe"})
    assert "maybe" in str(raised.value)
