"""Choosing the PostgreSQL backend: the URL in any of its three places, and its password never shown."""

from __future__ import annotations

import sys
from urllib.parse import urlsplit, urlunsplit

import pytest
from click.testing import CliRunner

from graphmem.cli import cli
from graphmem.config import Settings, redact_url
from graphmem.core.errors import ConfigError, MemoryOpenError
from graphmem.storage import open_checked_store

URL = "postgresql://alice:s3cret@db.example/team"


@pytest.mark.parametrize(
    ("environ", "flag"),
    [
        ({}, URL),
        ({"MEMORY_FILE_PATH": URL}, None),
        ({"GRAPHMEM_DATABASE_URL": URL}, None),
        ({}, "postgres://alice:s3cret@db.example/team"),
    ],
)
def test_a_postgresql_url_selects_the_postgres_backend_wherever_it_is_given(environ, flag):
    settings = Settings.from_env(environ, memory_file=flag)
    assert settings.backend == "postgres"
    assert settings.database_url is not None and "s3cret" in settings.database_url
    assert settings.location.startswith(("postgresql://alice@db.example/team", "postgres://alice@db.example/team"))


def test_the_location_shows_the_url_without_any_password():
    assert redact_url(URL) == "postgresql://alice@db.example/team"
    assert redact_url("postgresql://db.example:5433/team?sslmode=require&password=pw") == (
        "postgresql://db.example:5433/team?sslmode=require"
    )
    assert "s3cret" not in repr(Settings.from_env({}, memory_file=URL))


def test_graphmem_database_url_that_is_not_a_url_is_refused_saying_what_to_give():
    with pytest.raises(ConfigError) as caught:
        Settings.from_env({"GRAPHMEM_DATABASE_URL": "/tmp/memory.db"})
    assert "postgresql://" in str(caught.value)


def test_a_missing_psycopg_gives_one_error_saying_what_to_install(monkeypatch):
    # None in sys.modules makes `import graphmem.storage.postgres` fail as a missing package does.
    monkeypatch.setitem(sys.modules, "graphmem.storage.postgres", None)
    with pytest.raises(MemoryOpenError) as caught:
        open_checked_store(Settings(database_url=URL))
    message = str(caught.value)
    assert "graphmem[postgres]" in message
    assert "s3cret" not in message and "postgresql://alice@db.example/team" in message


def test_info_on_an_unreachable_database_names_it_without_the_password(unused_tcp_port_url):
    result = CliRunner().invoke(cli, ["info", "--memory-file", unused_tcp_port_url], env={})
    assert result.exit_code == 1
    assert "s3cret" not in result.output
    assert "memory database: postgresql://alice@127.0.0.1" in result.output
    assert "cannot be reached" in result.output


@pytest.fixture
def unused_tcp_port_url() -> str:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"postgresql://alice:s3cret@127.0.0.1:{port}/team"


def test_info_on_a_new_empty_database_opens_it_and_shows_it_without_the_password(postgres_url):
    # The test server trusts loopback: any password passes, and must never be shown.
    parts = urlsplit(postgres_url)
    user = parts.username or "postgres"
    url = urlunsplit(parts._replace(netloc=f"{user}:s3cret@{parts.hostname}:{parts.port}"))
    result = CliRunner().invoke(cli, ["info", "--memory-file", url], env={})
    assert result.exit_code == 0, result.output
    assert "backend: postgres" in result.output
    assert "opens: yes (0 entities, 0 relations)" in result.output
    assert "s3cret" not in result.output


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://alice:pw@[::1/team", "postgresql://alice@[::1/team"),  # unparsable: scrubbed as text
        ("postgresql://a:pw@[::1/x?password=zz&sslmode=require", "postgresql://a@[::1/x?sslmode=require"),
        ("postgresql:///team?host=/var/run/postgresql", "postgresql:///team?host=/var/run/postgresql"),
    ],
)
def test_any_url_is_shown_without_its_password_and_never_raises(url: str, shown: str):
    assert redact_url(url) == shown


def test_a_memory_named_both_in_memory_file_path_and_graphmem_database_url_is_refused():
    with pytest.raises(ConfigError) as caught:
        Settings.from_env({"GRAPHMEM_DATABASE_URL": URL, "MEMORY_FILE_PATH": "/tmp/m.db"})
    assert "keep one of the two" in str(caught.value)
    assert "s3cret" not in str(caught.value)


def test_the_memory_file_flag_wins_over_both_variables():
    settings = Settings.from_env({"GRAPHMEM_DATABASE_URL": URL, "MEMORY_FILE_PATH": "/tmp/m.db"}, memory_file=URL)
    assert settings.backend == "postgres"


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://alice:Tr0ub4dor%zz3@127.0.0.1:1/team",  # libpq quotes the bad percent-escape
        "postgresql://alice:Tr0ub4dor3@[::1/team",  # an unclosed IPv6 bracket
    ],
)
def test_a_malformed_url_is_refused_without_showing_its_password(url: str):
    result = CliRunner().invoke(cli, ["info", "--memory-file", url], env={})
    assert result.exit_code == 1
    assert "Tr0ub4dor" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
