"""The command line on a PostgreSQL memory: import, export, migrate and embed, on a real server."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from click.testing import CliRunner, Result

from graphmem.cli import cli
from tests.helpers_postgres import PostgresServer
from tests.test_migrate import everything, fill

OFFICIAL = Path(__file__).resolve().parents[1] / "fixtures" / "cli" / "official.jsonl"


def run(*args: object) -> Result:
    result = CliRunner().invoke(cli, [str(arg) for arg in args], env={})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def with_password(url: str) -> str:
    """The URL with a password in it (the test server trusts loopback, so any will do)."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=f"{parts.username}:s3cret@{parts.hostname}:{parts.port}"))


def test_the_official_file_imported_into_a_database_exports_byte_for_byte(postgres_url: str, tmp_path: Path) -> None:
    url = with_password(postgres_url)

    imported = run("--no-semantic", "import", OFFICIAL, "--memory-file", url)
    exported = run("export", "--memory-file", url, "-o", tmp_path / "back.jsonl")

    assert imported.exit_code == 0, imported.output
    assert "(postgres)" in imported.output and "s3cret" not in imported.output
    assert exported.exit_code == 0, exported.output
    assert (tmp_path / "back.jsonl").read_bytes() == OFFICIAL.read_bytes()


def test_a_memory_migrated_into_a_database_and_back_holds_everything_it_held(postgres_url: str, tmp_path: Path) -> None:
    source, back = tmp_path / "m.db", tmp_path / "back.db"
    fill(source)

    there = run("--no-semantic", "migrate", "--from", source, "--to", with_password(postgres_url))
    again = run("--no-semantic", "migrate", "--from", postgres_url, "--to", back)

    assert there.exit_code == 0, there.output
    assert "1 earlier fact versions" in there.output and "s3cret" not in there.output
    assert again.exit_code == 0, again.output
    assert everything(back) == everything(source)


def test_a_migration_into_a_database_that_holds_a_memory_is_refused(postgres_url: str, tmp_path: Path) -> None:
    fill(tmp_path / "m.db")
    assert run("--no-semantic", "migrate", "--from", tmp_path / "m.db", "--to", postgres_url).exit_code == 0

    again = run("--no-semantic", "migrate", "--from", tmp_path / "m.db", "--to", postgres_url)

    assert again.exit_code == 1
    assert "already holds 3 entities and 2 relations" in again.output


@pytest.mark.slow
def test_embed_on_a_database_embeds_every_text_with_the_real_model(postgres_url: str, tmp_path: Path) -> None:
    fill(tmp_path / "m.db")
    run("--no-semantic", "migrate", "--from", tmp_path / "m.db", "--to", postgres_url)

    result = run("embed", "--memory-file", postgres_url, "--no-progress")

    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1] == "6 texts have vectors; 0 wait."


def test_embed_on_a_server_without_pgvector_says_why_and_what_to_do(oldest_postgres_server: PostgresServer) -> None:
    url = oldest_postgres_server.create_database()
    try:
        result = run("embed", "--memory-file", url)
    finally:
        oldest_postgres_server.drop_database(url)

    assert result.exit_code == 1
    assert "pgvector" in result.output
