"""`resident realm migrate`: bring a PostgreSQL database to this Realm's schema, and give it an admin token.

Every `realm serve` on one database checks governance calls against the admin token's digest kept in the
database, so the processes share one admin token without sharing a file. The first `migrate` stores the
digest of the token in `token_dir/admin.token` (created 0600 if missing); a later one leaves the stored digest
alone and says whether the file holds that token.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from resident.realm.lmdb_storage import make_private_dirs
from resident.realm.pg_schema import migrate
from resident.realm.pg_storage import ADMIN_DIGEST_KEY, connect_once, describe_database
from resident.realm.tokens import ADMIN_TOKEN_FILE, ensure_admin_token, token_digest

__all__ = ["Migrated", "migrate_database"]


@dataclass(frozen=True, slots=True)
class Migrated:
    """What `migrate_database` did."""

    where: str
    before: int
    after: int
    admin_token_file: Path
    # Whether the file holds the admin token the database checks governance calls against.
    token_matches: bool


def migrate_database(url: str, token_dir: Path) -> Migrated:
    """Apply the migrations `url` lacks, and store the admin token's digest if the database has none."""
    where = describe_database(url)
    with connect_once(url) as conn:
        before, after = migrate(conn, f"the {where}")
        make_private_dirs(token_dir)
        digest = token_digest(ensure_admin_token(token_dir))
        with conn.transaction():
            conn.execute(
                b"INSERT INTO realm_meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO NOTHING",
                (ADMIN_DIGEST_KEY, digest),
            )
            row = conn.execute(b"SELECT value FROM realm_meta WHERE key = %s", (ADMIN_DIGEST_KEY,)).fetchone()
    stored = None if row is None else str(row[0])
    return Migrated(where, before, after, token_dir / ADMIN_TOKEN_FILE, token_matches=stored == digest)
