"""Realm's PostgreSQL schema as numbered migrations, and the check that a database is at the version we know.

Each migration runs in its own transaction with the version row updated in the same one, so a database is
always at exactly one version; `migrate` holds a transaction-level advisory lock while it works, so two
`resident realm migrate` on one database apply each step once. Ids are `COLLATE "C"`: Realm lists records
in byte order, as the LMDB store does.
"""

from __future__ import annotations

import psycopg

from resident.errors import SchemaMismatch

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "applied_version", "check_schema", "migrate"]

# The version -> its statements. Append a new version; never edit one that was released.
MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (
        "CREATE TABLE realm_schema (one boolean PRIMARY KEY DEFAULT true CHECK (one), version integer NOT NULL)",
        "INSERT INTO realm_schema (version) VALUES (0)",
        "CREATE TABLE realm_meta (key text PRIMARY KEY, value text NOT NULL)",
        # First home wins an id: the primary key refuses a second owner.
        'CREATE TABLE realm_owners (id text COLLATE "C" PRIMARY KEY, home text NOT NULL)',
        # One verdict per (id, digest), never replaced: what makes a push idempotent.
        'CREATE TABLE realm_verdicts (id text COLLATE "C" NOT NULL, digest text NOT NULL, verdict bytea NOT NULL, '
        "PRIMARY KEY (id, digest))",
        'CREATE TABLE realm_records (id text COLLATE "C" PRIMARY KEY REFERENCES realm_owners (id), '
        "home text NOT NULL, content_key text NOT NULL, record bytea NOT NULL)",
        "CREATE INDEX realm_records_by_content ON realm_records (content_key)",
        # The feed: one entry per invalidated id, at a position taken from the one-row head below.
        'CREATE TABLE realm_invalidations (seq bigint PRIMARY KEY, id text COLLATE "C" NOT NULL UNIQUE '
        "REFERENCES realm_records (id), entry bytea NOT NULL)",
        "CREATE TABLE realm_feed_head (one boolean PRIMARY KEY DEFAULT true CHECK (one), seq bigint NOT NULL)",
        "INSERT INTO realm_feed_head (seq) VALUES (0)",
        "CREATE TABLE realm_homes (name text PRIMARY KEY, entry bytea NOT NULL)",
    ),
}
SCHEMA_VERSION = max(MIGRATIONS)
# Any constant: the advisory lock `migrate` holds so that two of them apply each step once.
_MIGRATE_LOCK = 0x5245414C4D  # "REALM"


def applied_version(conn: psycopg.Connection[tuple[object, ...]]) -> int:
    """The schema version of the database `conn` is on; 0 for one never migrated."""
    with conn.transaction():
        return _read_version(conn)


def check_schema(conn: psycopg.Connection[tuple[object, ...]], where: str) -> None:
    """Refuse a database whose schema is older or newer than this Realm's, saying what to do."""
    found = applied_version(conn)
    if found == SCHEMA_VERSION:
        return
    if found < SCHEMA_VERSION:
        raise SchemaMismatch(
            f"{where} has Realm schema {found}, this Realm needs {SCHEMA_VERSION}; "
            "run `resident realm migrate --database URL` first"
        )
    raise SchemaMismatch(
        f"{where} has Realm schema {found}, newer than this Realm's {SCHEMA_VERSION}; use a newer resident"
    )


def migrate(conn: psycopg.Connection[tuple[object, ...]], where: str) -> tuple[int, int]:
    """Apply every migration the database lacks; returns (version before, version after)."""
    before = applied_version(conn)
    if before > SCHEMA_VERSION:
        check_schema(conn, where)
    for version in sorted(MIGRATIONS):
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATE_LOCK,))
            # Read again under the lock: another `migrate` may have applied this step meanwhile.
            if _read_version(conn) >= version:
                continue
            for statement in MIGRATIONS[version]:
                conn.execute(statement.encode())
            conn.execute("UPDATE realm_schema SET version = %s", (version,))
    return before, SCHEMA_VERSION


def _read_version(conn: psycopg.Connection[tuple[object, ...]]) -> int:
    exists = conn.execute("SELECT to_regclass('realm_schema') IS NOT NULL").fetchone()
    if not exists or not exists[0]:
        return 0
    row = conn.execute("SELECT version FROM realm_schema").fetchone()
    return 0 if row is None else int(str(row[0]))
