"""PostgreSQL over TLS, as a managed service offers it: the URL's `sslmode` and `sslrootcert` do it all.

One server per module offers TLS with a certificate for `localhost` signed by a certificate
authority made for the test (tests/helpers_postgres.py); a second authority signs nothing the
server shows. The embedded wheel's PostgreSQL is built without TLS, so the server is the
system's PostgreSQL (Debian's 15) where the wheel cannot do it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, urlsplit

import anyio
import psycopg
import pytest

from graphmem.config import Settings
from graphmem.core.errors import MemoryOpenError
from graphmem.core.models import Entity
from graphmem.domain.graph import KnowledgeGraph
from graphmem.storage import open_checked_store
from tests.helpers_postgres import (
    EXTERNAL_URL_VARIABLE,
    PostgresServer,
    TlsFiles,
    make_certificates,
    running_tls_postgres,
    tls_postgres_unavailable,
)
from tests.helpers_stdio import create_entities, entity, is_tool_success, raw_server, server_log

PASSWORD = "s3cret-pw"


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_certificates(tmp_path_factory.mktemp("tls"), hosts=("localhost",))


@pytest.fixture(scope="module")
def stranger_ca(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A certificate authority that did not sign the server's certificate."""
    return make_certificates(tmp_path_factory.mktemp("stranger"), authority="another CA").ca_certificate


@pytest.fixture(scope="module")
def tls_server(certificates: TlsFiles) -> Iterator[PostgresServer]:
    reason = tls_postgres_unavailable()
    if reason is not None:
        pytest.skip(f"no PostgreSQL server with TLS can be had here: {reason}")
    with running_tls_postgres(certificates) as server:
        yield server


@pytest.fixture(scope="module")
def database(tls_server: PostgresServer) -> Iterator[str]:
    """The name of a database on the TLS server, shared by the module's tests."""
    url = tls_server.create_database("tls")
    yield urlsplit(url).path.lstrip("/")
    tls_server.drop_database(url)


def _url(server: PostgresServer, database: str, host: str = "localhost", **query: str | Path) -> str:
    """A URL as a user writes one for a managed service: user, password, host name, TLS parameters."""
    port = urlsplit(server.url).port
    parameters = "&".join(f"{name}={quote(str(value), safe='/')}" for name, value in query.items())
    return f"postgresql://postgres:{PASSWORD}@{host}:{port}/{database}?{parameters}"


def _open_error(url: str) -> str:
    with pytest.raises(MemoryOpenError) as caught:
        open_checked_store(Settings(database_url=url))
    message = str(caught.value)
    assert PASSWORD not in message
    return message


# -- what works ------------------------------------------------------------------------


def test_verify_full_with_the_services_ca_opens_a_memory_that_works_and_is_encrypted(
    tls_server: PostgresServer, database: str, certificates: TlsFiles
) -> None:
    url = _url(tls_server, database, sslmode="verify-full", sslrootcert=certificates.ca_certificate)
    store = open_checked_store(Settings(database_url=url))
    try:
        memory = KnowledgeGraph(store)
        memory.create_entities([Entity("Vault", "service", ("reached over TLS only",))])
        found = memory.search_nodes("over tls")
        assert [item.name for item in found.entities] == ["Vault"]
        with psycopg.connect(tls_server.url) as admin:
            # Every session graphmem holds on this database (its pool), not only a new one.
            sessions = admin.execute(
                "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.datname = %s",
                (database,),
            ).fetchall()
    finally:
        store.close()
    assert sessions and all(ssl for (ssl,) in sessions)
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").fetchone() == (True,)


def test_sslmode_require_encrypts_without_checking_the_certificate(tls_server: PostgresServer, database: str) -> None:
    url = _url(tls_server, database, sslmode="require")
    store = open_checked_store(Settings(database_url=url))
    try:
        KnowledgeGraph(store).create_entities([Entity("Required", "thing")])
    finally:
        store.close()
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").fetchone() == (True,)


@pytest.mark.anyio
async def test_a_stdio_server_on_a_tls_database_answers_a_tool_call(
    tls_server: PostgresServer, database: str, certificates: TlsFiles, tmp_path: Path
) -> None:
    url = _url(tls_server, database, sslmode="verify-full", sslrootcert=certificates.ca_certificate)
    log_file = tmp_path / "server"
    with anyio.fail_after(30):
        async with raw_server(log_file, "--no-semantic", database=url) as server:
            await server.initialize()
            answer = await server.call(create_entities(entity("Over stdio", "written through TLS")))
    assert is_tool_success(answer), (answer, server_log(log_file))
    assert PASSWORD not in server_log(log_file)


# -- what fails, and says why ------------------------------------------------------------


def test_a_certificate_from_another_ca_is_refused_saying_the_tls_connection_failed(
    tls_server: PostgresServer, database: str, stranger_ca: Path
) -> None:
    message = _open_error(_url(tls_server, database, sslmode="verify-full", sslrootcert=stranger_ca))
    assert "TLS connection failed" in message
    assert "not signed by" in message and "sslrootcert" in message


def test_a_host_the_certificate_does_not_name_is_refused_saying_which_names_it_has(
    tls_server: PostgresServer, database: str, certificates: TlsFiles
) -> None:
    # The same server, dialled by its address: the certificate names only "localhost".
    url = _url(tls_server, database, host="127.0.0.1", sslmode="verify-full", sslrootcert=certificates.ca_certificate)
    message = _open_error(url)
    assert "TLS connection failed" in message
    assert '"localhost"' in message and "host name" in message


def test_verify_full_without_sslrootcert_says_to_give_the_ca_or_the_systems(
    tls_server: PostgresServer, database: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # libpq then looks for ~/.postgresql/root.crt, not the system's authorities.
    monkeypatch.setenv("HOME", str(tmp_path))
    message = _open_error(_url(tls_server, database, sslmode="verify-full"))
    assert "TLS connection failed" in message
    assert "sslrootcert=" in message and "sslrootcert=system" in message


def test_a_missing_ca_file_is_not_mistaken_for_a_missing_database(
    tls_server: PostgresServer, database: str, tmp_path: Path
) -> None:
    missing = tmp_path / "database-certificates" / "ca.pem"
    message = _open_error(_url(tls_server, database, sslmode="verify-full", sslrootcert=missing))
    assert "TLS connection failed" in message
    assert "no such database" not in message
    assert str(missing) in message


def test_sslmode_require_on_a_server_without_tls_says_the_server_offers_none(
    postgres_server: PostgresServer,
) -> None:
    if os.environ.get(EXTERNAL_URL_VARIABLE):
        pytest.skip("an external server is in use; whether it offers TLS is its owner's choice")
    message = _open_error(_url(postgres_server, "postgres", sslmode="require"))
    assert "TLS connection failed" in message
    assert "does not offer TLS" in message


def test_an_unknown_sslmode_says_which_values_there_are(tls_server: PostgresServer, database: str) -> None:
    message = _open_error(_url(tls_server, database, sslmode="requir"))
    assert "verify-full" in message and "require" in message


@pytest.mark.parametrize("host", ["db.invalid", "ssl-db.invalid"])
def test_a_host_name_that_does_not_resolve_says_the_server_cannot_be_reached(host: str) -> None:
    # psycopg resolves host names itself ("failed to resolve host"); a name with "ssl" in it
    # is no TLS failure.
    message = _open_error(f"postgresql://alice:{PASSWORD}@{host}:5432/team?sslmode=verify-full")
    assert "cannot be reached" in message
    assert "TLS" not in message
