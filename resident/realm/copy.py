"""`resident realm copy`: move an LMDB Realm into a PostgreSQL one, verifiably.

The copy is one transaction on the target: its tables are locked, must be empty, receive every row the
LMDB store holds (the bytes as stored, so verdicts and feed entries are exactly the ones given), and are
read back and compared, table by table, by row count and SHA-256 before anything commits. A mismatch rolls
the whole copy back. The admin token of the LMDB Realm (`admin.token` in its directory) keeps working: its
digest is copied too.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import msgspec

from resident.errors import InvalidInput, StoreFailed
from resident.messages.realm import AcceptedRecord, Invalidation
from resident.realm.governance import content_key
from resident.realm.lmdb_storage import LmdbStorage
from resident.realm.pg_schema import check_schema
from resident.realm.pg_storage import ADMIN_DIGEST_KEY, Connection, connect_once, describe_database
from resident.realm.tokens import ADMIN_TOKEN_FILE, read_token_file, token_digest

__all__ = ["TableCopy", "copy_realm", "table_digest"]

_decode_accepted = msgspec.msgpack.Decoder(AcceptedRecord).decode
_decode_invalidation = msgspec.msgpack.Decoder(Invalidation).decode
Row = tuple[bytes, ...]

# Each table a copy carries, and how to read it back as the same bytes the LMDB export gives.
_READ_BACK = {
    "owners": "SELECT convert_to(id, 'UTF8'), convert_to(home, 'UTF8') FROM realm_owners",
    "verdicts": "SELECT convert_to(id, 'UTF8'), convert_to(digest, 'UTF8'), verdict FROM realm_verdicts",
    "records": "SELECT convert_to(id, 'UTF8'), record FROM realm_records",
    "invalidations": "SELECT convert_to(seq::text, 'UTF8'), entry FROM realm_invalidations",
    "homes": "SELECT convert_to(name, 'UTF8'), entry FROM realm_homes",
}
_TABLES = "realm_owners, realm_verdicts, realm_records, realm_invalidations, realm_homes, realm_feed_head, realm_meta"


@dataclass(frozen=True, slots=True)
class TableCopy:
    """One table of a copy: rows and digest on each side."""

    table: str
    source_rows: int
    target_rows: int
    source_digest: str
    target_digest: str

    @property
    def matches(self) -> bool:
        return (self.source_rows, self.source_digest) == (self.target_rows, self.target_digest)


def table_digest(rows: list[Row]) -> str:
    """SHA-256 of a table's rows in sorted order, each field length-prefixed (so fields cannot run together)."""
    digest = hashlib.sha256()
    for row in sorted(rows):
        for field in row:
            digest.update(len(field).to_bytes(8, "big"))
            digest.update(field)
    return digest.hexdigest()


def copy_realm(data_dir: Path, url: str) -> list[TableCopy]:
    """Copy the LMDB Realm in `data_dir` into the empty, migrated database at `url`; all or nothing."""
    if not (data_dir / "data.mdb").is_file():
        raise InvalidInput(f"{data_dir} holds no Realm store (no data.mdb); name the --data directory of a Realm")
    source = LmdbStorage.open(data_dir)
    try:
        tables = source.export_tables()
    finally:
        source.close()
    admin_file = data_dir / ADMIN_TOKEN_FILE
    admin = token_digest(read_token_file(admin_file)) if admin_file.exists() else None
    where = describe_database(url)
    with connect_once(url) as conn:
        check_schema(conn, f"the {where}")
        with conn.transaction():
            # Nobody writes the tables while they are filled and compared; a Realm serving meanwhile waits.
            conn.execute(f"LOCK TABLE {_TABLES} IN ACCESS EXCLUSIVE MODE".encode())
            _require_empty(conn, where)
            _write(conn, tables, admin)
            report = [_compare(conn, name, rows) for name, rows in tables.items()]
            if not all(item.matches for item in report):
                wrong = ", ".join(item.table for item in report if not item.matches)
                raise StoreFailed(f"the copy into the {where} differs from {data_dir} in {wrong}; nothing was kept")
    return report


def _require_empty(conn: Connection, where: str) -> None:
    row = conn.execute(b"SELECT (SELECT count(*) FROM realm_owners) + (SELECT count(*) FROM realm_homes)").fetchone()
    if row is not None and int(str(row[0])) > 0:
        raise InvalidInput(f"the {where} already holds Realm data; copy into a newly migrated, empty database")


def _write(conn: Connection, tables: dict[str, list[Row]], admin: str | None) -> None:
    with conn.cursor() as cursor:
        with cursor.copy(b"COPY realm_owners (id, home) FROM STDIN") as copy:
            for record_id, home in tables["owners"]:
                copy.write_row((record_id.decode(), home.decode()))
        with cursor.copy(b"COPY realm_verdicts (id, digest, verdict) FROM STDIN") as copy:
            for record_id, digest, verdict in tables["verdicts"]:
                copy.write_row((record_id.decode(), digest.decode(), verdict))
        with cursor.copy(b"COPY realm_records (id, home, content_key, record) FROM STDIN") as copy:
            for record_id, raw in tables["records"]:
                accepted = _decode_accepted(raw)
                copy.write_row((record_id.decode(), accepted.home, content_key(accepted.record), raw))
        with cursor.copy(b"COPY realm_invalidations (seq, id, entry) FROM STDIN") as copy:
            for seq, entry in tables["invalidations"]:
                copy.write_row((int(seq), _invalidated_id(entry), entry))
        with cursor.copy(b"COPY realm_homes (name, entry) FROM STDIN") as copy:
            for name, entry in tables["homes"]:
                copy.write_row((name.decode(), entry))
    head = max((int(seq) for seq, _ in tables["invalidations"]), default=0)
    conn.execute(b"UPDATE realm_feed_head SET seq = %s", (head,))
    if admin is not None:
        conn.execute(b"INSERT INTO realm_meta (key, value) VALUES (%s, %s)", (ADMIN_DIGEST_KEY, admin))


def _invalidated_id(entry: bytes) -> str:
    return _decode_invalidation(entry).id


def _compare(conn: Connection, table: str, source: list[Row]) -> TableCopy:
    target: list[Row] = [
        tuple(bytes(field) if isinstance(field, memoryview | bytes) else str(field).encode() for field in row)
        for row in conn.execute(_READ_BACK[table].encode()).fetchall()
    ]
    return TableCopy(
        table=table, source_rows=len(source), target_rows=len(target),
        source_digest=table_digest(source), target_digest=table_digest(target),
    )
