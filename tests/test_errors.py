"""Errors: one tree, and no driver exception escapes the storage layer."""

from __future__ import annotations

import sqlite3

import pytest

from graphmem.core import errors
from graphmem.core.errors import GraphmemError, StorageBusyError, StorageError
from graphmem.storage.base import map_backend_errors


def test_every_error_derives_from_graphmem_error_and_is_named_error():
    for name in errors.__all__:
        error_class = getattr(errors, name)
        assert issubclass(error_class, GraphmemError)
        assert name.endswith("Error")


@pytest.mark.parametrize(
    ("raised", "expected"),
    [
        (sqlite3.OperationalError("database is locked"), StorageBusyError),
        (sqlite3.OperationalError("disk I/O error"), StorageError),
        (sqlite3.IntegrityError("UNIQUE constraint failed"), StorageError),
        (sqlite3.DatabaseError("file is not a database"), StorageError),
        (PermissionError(13, "Permission denied", "/x/memory.db"), StorageError),
    ],
)
def test_backend_exceptions_become_storage_errors(raised, expected):
    with pytest.raises(expected) as caught, map_backend_errors():
        raise raised
    assert caught.value.__cause__ is raised
    assert "nothing was changed" in str(caught.value)


def test_a_file_that_is_not_a_database_gives_a_storage_error(tmp_path):
    from graphmem.storage.sqlite import SQLiteStore

    path = tmp_path / "memory.db"
    path.write_bytes(b"this is not a database file, just text" * 100)
    with pytest.raises(StorageError):
        SQLiteStore(path)
