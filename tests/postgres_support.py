"""A real PostgreSQL for Realm's tests: `$RESIDENT_TEST_POSTGRES`, else a `pgserver` started once per session.

Each test gets a database of its own (`fresh_database`), migrated by `resident realm migrate`'s own code, so
no test sees another's rows. Where neither a server nor pgserver is available the PostgreSQL cases are
skipped with the reason; the LMDB cases run all the same.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

SERVER_ENV = "RESIDENT_TEST_POSTGRES"
BACKENDS = ["lmdb", "postgres"]


class PostgresServer:
    """A PostgreSQL server tests may create databases on."""

    def __init__(self, url: str, stop: object | None = None) -> None:
        self.url = url
        self._stop = stop

    def database_url(self, name: str) -> str:
        parts = urllib.parse.urlsplit(self.url)
        return urllib.parse.urlunsplit(parts._replace(path=f"/{name}"))

    def fresh_database(self) -> str:
        """The URL of a new, empty database on this server."""
        import psycopg  # noqa: PLC0415 - only where PostgreSQL is used

        name = f"realm_{secrets.token_hex(6)}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}".encode())
        return self.database_url(name)


def _start_pgserver(directory: Path) -> PostgresServer:
    try:
        from pgserver.postgres_server import get_server  # noqa: PLC0415 - optional: the dev extra installs it
    except ImportError:
        pytest.skip(f"no PostgreSQL: set ${SERVER_ENV} to a postgresql:// URL, or install pgserver (the dev extra)")
    server = get_server(directory, cleanup_mode="delete")
    return PostgresServer(server.get_uri(), stop=server)


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    named = os.environ.get(SERVER_ENV)
    if named:
        yield PostgresServer(named)
        return
    # Not under pytest's basetemp: several pytest runs as one user prune each other's old basetemps, and the
    # server's directory must outlive the session that started it until it stops.
    directory = Path(tempfile.mkdtemp(prefix="resident-pg-"))
    server = _start_pgserver(directory / "pgdata")
    yield server
    cleanup = getattr(server._stop, "cleanup", None)
    if cleanup is not None:
        cleanup()
    shutil.rmtree(directory, ignore_errors=True)


def migrated_database(server: PostgresServer, token_dir: Path) -> str:
    """A new database at Realm's schema, its admin token written to `token_dir/admin.token`."""
    from resident.realm.pg_setup import migrate_database  # noqa: PLC0415 - psycopg only here

    url = server.fresh_database()
    migrate_database(url, token_dir)
    return url


def database_for(request: pytest.FixtureRequest, backend: str, data_dir: Path) -> str | None:
    """None for LMDB, else a migrated database whose admin token is in `data_dir` (as an LMDB Realm's is)."""
    if backend == "lmdb":
        return None
    server: PostgresServer = request.getfixturevalue("postgres")
    return migrated_database(server, data_dir)
