"""Realm's PostgreSQL backend: any number of `realm serve` processes on one database.

Nothing here locks inside a process. Write transactions run at READ COMMITTED, where every statement reads
what was committed when it began: the primary keys refuse a second owner of an id, a second verdict of an
(id, digest) pair, a second accepted record of an id and a second feed entry of an id; a push and an
invalidation of the same content are kept apart by advisory locks on the content key (`lock_content`); the
one-row feed head orders feed positions. A transaction refused for having raced another (a unique violation,
a deadlock) is run again from the start (`_RETRIES` times at most). Reads run at REPEATABLE READ, READ ONLY:
one snapshot per page. Which rule relies on which of these is written in docs/realm.md. (SERIALIZABLE was
measured first: with 16 homes pushing at once its page-level predicate locks refused most pushes as
conflicting with pushes of other ids, and retries did not drain them.)

A transaction is committed (PostgreSQL's `synchronous_commit`, on by default, flushes its WAL) before its
caller sees the result, so an acknowledged push survives `kill -9` of the Realm process and of PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import msgspec
import psycopg
import psycopg_pool
from psycopg import IsolationLevel, errors
from psycopg.conninfo import conninfo_to_dict
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_random_exponential

from resident.errors import InvalidInput, RealmUnavailable, StoreClosed, StoreFailed
from resident.messages.realm import AcceptedRecord, HomeEntry, Invalidation, Verdict
from resident.realm.pg_schema import check_schema
from resident.realm.storage import StorageTxn

__all__ = [
    "ADMIN_DIGEST_KEY", "CONNECT_TIMEOUT", "Connection", "PgStorage", "check_database_url", "connect_once",
    "describe_database",
]

T = TypeVar("T")
CONNECT_TIMEOUT = 5
# A transaction refused for a race is run again; this many times in all before the request fails (503).
_RETRIES = 12
_RACES = (errors.SerializationFailure, errors.DeadlockDetected, errors.UniqueViolation)
_encode = msgspec.msgpack.Encoder().encode
_decode_verdict = msgspec.msgpack.Decoder(Verdict).decode
_decode_invalidation = msgspec.msgpack.Decoder(Invalidation).decode
_decode_accepted = msgspec.msgpack.Decoder(AcceptedRecord).decode
_decode_home = msgspec.msgpack.Decoder(HomeEntry).decode
ADMIN_DIGEST_KEY = "admin_token_sha256"

Connection = psycopg.Connection[tuple[object, ...]]


def check_database_url(url: str) -> dict[str, object]:
    """The parts of a `postgresql://` URL, or `InvalidInput` saying what a good one looks like."""
    if not url.startswith(("postgresql://", "postgres://")):
        raise InvalidInput(f"--database must be a postgresql:// URL (postgresql://USER@HOST:PORT/DB), not {url[:40]!r}")
    try:
        return dict(conninfo_to_dict(url))
    except psycopg.ProgrammingError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InvalidInput(f"--database URL is malformed ({first}); use postgresql://USER@HOST:PORT/DB") from None


def describe_database(url: str) -> str:
    """How messages name the database: host, port and name, never the password."""
    parts = check_database_url(url)
    name = parts.get("dbname") or parts.get("user") or "postgres"
    return f"PostgreSQL database {name} on {parts.get('host') or 'localhost'}:{parts.get('port') or 5432}"


def connect_once(url: str) -> Connection:
    """One connection to `url`, with the failure to reach it said in one line."""
    where = describe_database(url)
    try:
        return psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT, autocommit=True)
    except psycopg.OperationalError as exc:
        first = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        raise RealmUnavailable(f"cannot reach the {where}: {first}; check the URL and that PostgreSQL runs") from None


def _bytes(value: object) -> bytes:
    if isinstance(value, memoryview):
        return value.tobytes()
    if isinstance(value, bytes):
        return value
    raise StoreFailed(f"Realm's PostgreSQL tables hold an unexpected value ({type(value).__name__})")


class _PgTxn:
    """`StorageTxn` over one PostgreSQL transaction."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def _one(self, query: str, params: tuple[object, ...]) -> object | None:
        row = self._conn.execute(query.encode(), params).fetchone()
        return None if row is None else row[0]

    def _all(self, query: str, params: tuple[object, ...]) -> list[object]:
        return [row[0] for row in self._conn.execute(query.encode(), params).fetchall()]

    def _rows(self, query: str, params: tuple[object, ...]) -> list[tuple[object, ...]]:
        return self._conn.execute(query.encode(), params).fetchall()

    def lock_content(self, content_keys: Sequence[str], *, exclusive: bool) -> None:
        # Transaction-level advisory locks on a 64-bit hash of each key (a collision only makes two unrelated
        # contents wait for each other), taken in one order so that two pushes never wait on each other.
        function = b"pg_advisory_xact_lock" if exclusive else b"pg_advisory_xact_lock_shared"
        self._conn.execute(
            b"SELECT " + function + b"(hashtextextended(key, 0)) FROM unnest(%s::text[]) AS k (key) ORDER BY key",
            (sorted(set(content_keys)),),
        )

    def owners(self, record_ids: Sequence[str]) -> dict[str, str]:
        rows = self._rows("SELECT id, home FROM realm_owners WHERE id = ANY(%s)", (list(record_ids),))
        return {str(record_id): str(home) for record_id, home in rows}

    def claim(self, record_ids: Sequence[str], home: str) -> None:
        self._conn.execute(
            b"INSERT INTO realm_owners (id, home) SELECT unnest(%s::text[]), %s ON CONFLICT (id) DO NOTHING",
            (list(record_ids), home),
        )

    def verdicts(self, pairs: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Verdict]:
        rows = self._rows(
            "SELECT v.id, v.digest, v.verdict FROM realm_verdicts v "
            "JOIN unnest(%s::text[], %s::text[]) AS p (id, digest) ON v.id = p.id AND v.digest = p.digest",
            ([pair[0] for pair in pairs], [pair[1] for pair in pairs]),
        )
        return {(str(record_id), str(digest)): _decode_verdict(_bytes(raw)) for record_id, digest, raw in rows}

    def put_verdicts(self, verdicts: Sequence[tuple[str, str, Verdict]]) -> None:
        if verdicts:
            self._conn.execute(
                b"INSERT INTO realm_verdicts (id, digest, verdict) "
                b"SELECT * FROM unnest(%s::text[], %s::text[], %s::bytea[])",
                ([v[0] for v in verdicts], [v[1] for v in verdicts], [_encode(v[2]) for v in verdicts]),
            )

    def accepted(self, record_id: str) -> AcceptedRecord | None:
        rows = self._rows("SELECT record FROM realm_records WHERE id = %s", (record_id,))
        return None if not rows else _decode_accepted(_bytes(rows[0][0]))

    def accepted_digests(self, record_ids: Sequence[str]) -> dict[str, str]:
        rows = self._rows("SELECT id, record FROM realm_records WHERE id = ANY(%s)", (list(record_ids),))
        return {str(record_id): _decode_accepted(_bytes(raw)).record.digest for record_id, raw in rows}

    def put_accepted(self, accepted: Sequence[tuple[AcceptedRecord, str]]) -> None:
        if accepted:
            self._conn.execute(
                b"INSERT INTO realm_records (id, home, content_key, record) "
                b"SELECT * FROM unnest(%s::text[], %s::text[], %s::text[], %s::bytea[])",
                (
                    [stored.record.id for stored, _ in accepted], [stored.home for stored, _ in accepted],
                    [key for _, key in accepted], [_encode(stored) for stored, _ in accepted],
                ),
            )

    def accepted_with_content(self, content_key: str) -> list[str]:
        rows = self._rows("SELECT id FROM realm_records WHERE content_key = %s", (content_key,))
        return [str(row[0]) for row in rows]

    def invalidated_with_content(self, content_keys: Sequence[str]) -> dict[str, str]:
        rows = self._rows(
            "SELECT DISTINCT ON (r.content_key) r.content_key, i.id FROM realm_invalidations i "
            "JOIN realm_records r ON r.id = i.id WHERE r.content_key = ANY(%s) ORDER BY r.content_key, i.seq",
            (list(content_keys),),
        )
        return {str(key): str(record_id) for key, record_id in rows}

    def invalidations_of(self, record_ids: Sequence[str]) -> dict[str, Invalidation]:
        rows = self._rows("SELECT id, entry FROM realm_invalidations WHERE id = ANY(%s)", (list(record_ids),))
        return {str(record_id): _decode_invalidation(_bytes(raw)) for record_id, raw in rows}

    def append_invalidation(self, record_id: str, reason: str, at: float) -> Invalidation:
        # The head row is updated in this transaction, and its row lock makes a second invalidation wait until
        # this one commits: positions become visible in order, so a poller that has read position N never later
        # meets an entry below N.
        seq = self._one("UPDATE realm_feed_head SET seq = seq + 1 RETURNING seq", ())
        item = Invalidation(seq=int(str(seq)), id=record_id, reason=reason, at=at)
        self._conn.execute(
            b"INSERT INTO realm_invalidations (seq, id, entry) VALUES (%s, %s, %s)",
            (item.seq, record_id, _encode(item)),
        )
        return item

    def feed(self, since: int, count: int) -> list[Invalidation]:
        found = self._all("SELECT entry FROM realm_invalidations WHERE seq > %s ORDER BY seq LIMIT %s", (since, count))
        return [_decode_invalidation(_bytes(raw)) for raw in found]

    def accepted_after(self, after: str, count: int) -> list[AcceptedRecord]:
        found = self._all("SELECT record FROM realm_records WHERE id > %s ORDER BY id LIMIT %s", (after, count))
        return [_decode_accepted(_bytes(raw)) for raw in found]

    def home(self, name: str) -> HomeEntry | None:
        found = self._one("SELECT entry FROM realm_homes WHERE name = %s", (name,))
        return None if found is None else _decode_home(_bytes(found))

    def put_home(self, entry: HomeEntry) -> None:
        self._conn.execute(
            b"INSERT INTO realm_homes (name, entry) VALUES (%s, %s) "
            b"ON CONFLICT (name) DO UPDATE SET entry = EXCLUDED.entry",
            (entry.name, _encode(entry)),
        )

    def counts(self) -> tuple[int, int]:
        row = self._conn.execute(
            b"SELECT (SELECT count(*) FROM realm_records), (SELECT count(*) FROM realm_invalidations)"
        ).fetchone()
        return (0, 0) if row is None else (int(str(row[0])), int(str(row[1])))

    def admin_digest(self) -> str | None:
        found = self._one("SELECT value FROM realm_meta WHERE key = %s", (ADMIN_DIGEST_KEY,))
        return None if found is None else str(found)


class PgStorage:
    """Realm's tables in one PostgreSQL database, through a pool of connections; thread-safe."""

    def __init__(self, pool: psycopg_pool.ConnectionPool[Connection], where: str) -> None:
        self._pool = pool
        self.where = f"the Realm {where}"
        self._closed = False

    @classmethod
    def connect(cls, url: str, *, pool_size: int = 8) -> PgStorage:
        """A pool on `url` once the database is reached and its schema is the one this Realm knows."""
        where = describe_database(url)
        with connect_once(url) as conn:
            check_schema(conn, f"the {where}")
        pool: psycopg_pool.ConnectionPool[Connection] = psycopg_pool.ConnectionPool(
            url, min_size=1, max_size=pool_size, open=False, timeout=CONNECT_TIMEOUT * 2,
            kwargs={"connect_timeout": CONNECT_TIMEOUT},
            # A connection PostgreSQL dropped (a restart) is found at checkout and replaced, not handed out.
            check=psycopg_pool.ConnectionPool.check_connection,
        )
        try:
            pool.open(wait=True, timeout=CONNECT_TIMEOUT * 2)
        except psycopg_pool.PoolTimeout:
            pool.close()
            raise RealmUnavailable(f"cannot open connections to the {where}; check that PostgreSQL runs") from None
        return cls(pool, where)

    def run(self, work: Callable[[StorageTxn], T], *, write: bool) -> T:
        """`work` in one transaction: READ COMMITTED for a write (run again if it raced), else a read-only snapshot."""
        retrying = Retrying(
            retry=retry_if_exception_type(_RACES), stop=stop_after_attempt(_RETRIES),
            wait=wait_random_exponential(multiplier=0.002, max=0.1), reraise=True,
        )
        try:
            for attempt in retrying:
                with attempt:
                    return self._once(work, write=write)
        except _RACES as exc:
            raise StoreFailed(f"{self.where} kept refusing a transaction as racing others ({exc.sqlstate})") from exc
        raise StoreFailed(f"{self.where} did not run the transaction")  # tenacity either returns or raises

    def _once(self, work: Callable[[StorageTxn], T], *, write: bool) -> T:
        if self._closed:
            raise StoreClosed(f"{self.where} is closed")
        try:
            with self._pool.connection() as conn:
                conn.isolation_level = IsolationLevel.READ_COMMITTED if write else IsolationLevel.REPEATABLE_READ
                conn.read_only = not write
                # Leaving the block commits, or rolls back on an exception.
                with conn.transaction():
                    return work(_PgTxn(conn))
        except _RACES:
            raise
        except (psycopg.OperationalError, psycopg_pool.PoolTimeout) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise StoreFailed(f"{self.where} failed: {first}") from exc

    def admin_digest(self) -> str | None:
        """The SHA-256 of the admin token `resident realm migrate` issued for this database."""
        return self.run(lambda txn: txn.admin_digest() if isinstance(txn, _PgTxn) else None, write=False)

    def close(self) -> None:
        """Close the pool; later calls raise `StoreClosed`. Closing twice is harmless."""
        if not self._closed:
            self._closed = True
            self._pool.close()
