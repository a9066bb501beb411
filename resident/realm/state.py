"""Realm's durable state: accepted records, verdicts, the invalidation feed and enrolled homes.

Verdicts, accepted records, record owners and invalidations are write-once: never updated or
deleted, so an answer Realm gave once is the answer it gives after any restart or crash. Every
write transaction is committed with `sync=True` before its caller sees the result, so an accepted
record survives `kill -9` the moment its response exists.

What Realm stores it checks first: each record's digest is recomputed from its content (the
limits on ids and text are checked as the request is decoded). A record id belongs to the home
that first pushed it; a push naming an id another home owns is refused whole, storing nothing.
A home's token is stored as its SHA-256 only; enrolling a home again needs `rotate`.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType

import lmdb
import msgspec

from resident.errors import InvalidInput, RecordNotFound, SchemaMismatch, StoreClosed, StoreFailed
from resident.messages.digest import content_digest
from resident.messages.realm import (
    ADMIN,
    PROTOCOL_VERSION,
    AcceptedRecord,
    Health,
    HomeEntry,
    Invalidation,
    InvalidationPage,
    RealmRecord,
    RecordPage,
    RecordSummary,
    ReplicateResult,
    Verdict,
)
from resident.realm.governance import Precedent, content_key, judge, next_cursor
from resident.realm.tokens import new_token, token_digest

__all__ = ["SCHEMA_VERSION", "IdsOwnedElsewhere", "RealmState", "make_private_dirs"]

SCHEMA_VERSION = 1
# Address space, not disk: LMDB files grow as data is written.
DEFAULT_MAP_SIZE = 4 * 1024**3

_SCHEMA_KEY = b"schema"
_encode = msgspec.msgpack.Encoder().encode
_decode_verdict = msgspec.msgpack.Decoder(Verdict).decode
_decode_invalidation = msgspec.msgpack.Decoder(Invalidation).decode
_decode_accepted = msgspec.msgpack.Decoder(AcceptedRecord).decode
_decode_home = msgspec.msgpack.Decoder(HomeEntry).decode
_HOME_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
# How many feed entries one page request may look at while it filters a home's own.
_SCAN_LIMIT = 5_000


class IdsOwnedElsewhere(Exception):
    """A push named record ids that belong to another home; nothing of it was stored."""

    def __init__(self, ids: tuple[str, ...]) -> None:
        super().__init__(f"{len(ids)} record ids belong to another home")
        self.ids = ids


def make_private_dirs(path: Path) -> None:
    """Create `path` and any missing parents, each 0700 whatever the umask."""
    missing: list[Path] = []
    current = path
    while not current.exists():
        missing.append(current)
        current = current.parent
    for directory in reversed(missing):
        directory.mkdir(mode=0o700, exist_ok=True)
        directory.chmod(0o700)
    path.chmod(0o700)


def _seq_key(seq: int) -> bytes:
    # Big-endian so that LMDB's byte order is sequence order.
    return seq.to_bytes(8, "big")


def _check_digest(record: RealmRecord) -> None:
    expected = content_digest(
        record_id=record.id, summary=record.summary, body=record.body, kind=record.kind, bank=record.bank,
        canonical=record.canonical, delegated=record.delegated, supersedes=record.supersedes,
    )
    if record.digest != expected:
        raise InvalidInput(
            f"record {record.id}: its digest does not match its content; send the digest of what it says"
        )


def _verdict_key(record_id: str, digest: str) -> bytes:
    # Ids are printable ASCII (no NUL), so the separator cannot be forged.
    return f"{record_id}\x00{digest}".encode()


class RealmState:
    """Realm's store, opened on a data directory (created 0700, its files 0600); thread-safe."""

    def __init__(self, env: lmdb.Environment, path: Path, clock: Callable[[], float]) -> None:
        self._env = env
        self._path = path
        self._clock = clock
        self._records = env.open_db(b"records")
        self._verdicts = env.open_db(b"verdicts")
        self._invalidations = env.open_db(b"invalidations")
        self._invalidated = env.open_db(b"invalidated")
        self._invalidated_content = env.open_db(b"invalidated_content")
        self._owners = env.open_db(b"owners")
        self._homes = env.open_db(b"homes")
        self._meta = env.open_db(b"meta")
        self._closed = False
        self._close_lock = threading.Lock()

    @classmethod
    def open(
        cls,
        data_dir: Path,
        *,
        map_size: int = DEFAULT_MAP_SIZE,
        clock: Callable[[], float] = time.time,
    ) -> RealmState:
        """Open (or create) the store in `data_dir`; refuses a store of another schema version."""
        try:
            make_private_dirs(data_dir)
            env = lmdb.open(str(data_dir), map_size=map_size, max_dbs=16, mode=0o600, sync=True, metasync=True)
        except (OSError, lmdb.Error) as exc:
            raise StoreFailed(f"cannot open the Realm store in {data_dir}: {exc}") from exc
        try:
            state = cls(env, data_dir, clock)
            state._check_schema()
            state._reindex_invalidated_content()
        except lmdb.Error as exc:
            env.close()
            raise StoreFailed(f"cannot open the Realm store in {data_dir}: {exc}") from exc
        except BaseException:
            env.close()
            raise
        return state

    def _check_schema(self) -> None:
        with self._txn(write=True) as txn:
            found = txn.get(_SCHEMA_KEY, db=self._meta)
            if found is None:
                txn.put(_SCHEMA_KEY, str(SCHEMA_VERSION).encode(), db=self._meta)
                return
        if found != str(SCHEMA_VERSION).encode():
            raise SchemaMismatch(
                f"the Realm store in {self._path} has schema {found.decode(errors='replace')}, "
                f"this Realm reads schema {SCHEMA_VERSION}; use a Realm of the matching version"
            )

    def _reindex_invalidated_content(self) -> None:
        """Rebuild the index of invalidated content from the invalidations and their records.

        The index is derived, and keyed by `content_key`: rebuilding it at every open keeps it right when
        what counts as the same content changes (as it did when content came to be normalized) and costs one
        read per invalidation.
        """
        with self._txn(write=True) as txn:
            txn.drop(self._invalidated_content, delete=False)
            cursor = txn.cursor(db=self._invalidations)
            for _, raw in cursor:
                item = _decode_invalidation(raw)
                accepted = txn.get(item.id.encode(), db=self._records)
                if accepted is not None:
                    content = content_key(_decode_accepted(accepted).record).encode()
                    txn.put(content, item.id.encode(), db=self._invalidated_content, overwrite=False)

    @contextmanager
    def _txn(self, *, write: bool) -> Iterator[lmdb.Transaction[bytes]]:
        if self._closed:
            raise StoreClosed(f"the Realm store in {self._path} is closed")
        try:
            # Leaving the block commits (and, for writes, syncs) or aborts on an exception.
            with self._env.begin(write=write) as txn:
                yield txn
        except lmdb.Error as exc:
            raise StoreFailed(f"the Realm store in {self._path} failed: {exc}") from exc

    def replicate(self, home: str, records: Sequence[RealmRecord]) -> list[ReplicateResult]:
        """Judge each record of `home`'s push in order; store new verdicts, owners and accepted records in one commit.

        Refused whole, with nothing stored: a record whose digest does not match its content
        (`InvalidInput`), or ids that another home pushed first (`IdsOwnedElsewhere`).
        """
        for record in records:
            _check_digest(record)
        now = self._clock()
        with self._txn(write=True) as txn:
            taken = tuple(dict.fromkeys(r.id for r in records if self._owner(txn, r.id) not in (None, home)))
            if taken:
                raise IdsOwnedElsewhere(taken)
            return [self._judge(txn, home, record, now) for record in records]

    def _judge(self, txn: lmdb.Transaction[bytes], home: str, record: RealmRecord, now: float) -> ReplicateResult:
        # The transaction sees its own writes, so a later duplicate in the same batch is judged
        # against an earlier one.
        txn.put(record.id.encode(), home.encode(), db=self._owners, overwrite=False)
        key = _verdict_key(record.id, record.digest)
        prior_raw = txn.get(key, db=self._verdicts)
        invalidated = txn.get(content_key(record).encode(), db=self._invalidated_content)
        precedent = Precedent(
            prior=None if prior_raw is None else _decode_verdict(prior_raw),
            accepted_digest=self._accepted_digest(txn, record.id),
            invalidated_with_content=None if invalidated is None else bytes(invalidated).decode(),
            invalidated_because=self._invalidation_reason(txn, record.id),
        )
        verdict = judge(record, precedent, at=now)
        if precedent.prior is None and precedent.invalidated_because is None:
            txn.put(key, _encode(verdict), db=self._verdicts)
            if verdict.status == "accepted":
                stored = AcceptedRecord(record=record, accepted_at=now, home=home)
                txn.put(record.id.encode(), _encode(stored), db=self._records)
        return ReplicateResult(id=record.id, status=verdict.status, reason=verdict.reason, rule=verdict.rule)

    def _invalidation_reason(self, txn: lmdb.Transaction[bytes], record_id: str) -> str | None:
        seq_key = txn.get(record_id.encode(), db=self._invalidated)
        entry = None if seq_key is None else txn.get(seq_key, db=self._invalidations)
        return None if entry is None else _decode_invalidation(entry).reason

    def _owner(self, txn: lmdb.Transaction[bytes], record_id: str) -> str | None:
        raw = txn.get(record_id.encode(), db=self._owners)
        return None if raw is None else bytes(raw).decode()

    def _accepted_digest(self, txn: lmdb.Transaction[bytes], record_id: str) -> str | None:
        raw = txn.get(record_id.encode(), db=self._records)
        if raw is None:
            return None
        return _decode_accepted(raw).record.digest

    def invalidate(self, record_id: str, reason: str) -> Invalidation:
        """Append an invalidation of an accepted record; a second call returns the first entry.

        Its content is remembered too: a later record with the same body is refused.
        """
        with self._txn(write=True) as txn:
            raw = txn.get(record_id.encode(), db=self._records)
            if raw is None:
                raise RecordNotFound(f"Realm has no accepted record {record_id}; nothing to invalidate")
            seq_key = txn.get(record_id.encode(), db=self._invalidated)
            existing = None if seq_key is None else txn.get(seq_key, db=self._invalidations)
            if existing is not None:
                return _decode_invalidation(existing)
            cursor = txn.cursor(db=self._invalidations)
            seq = int.from_bytes(cursor.key(), "big") + 1 if cursor.last() else 1
            item = Invalidation(seq=seq, id=record_id, reason=reason, at=self._clock())
            txn.put(_seq_key(seq), _encode(item), db=self._invalidations, append=True)
            txn.put(record_id.encode(), _seq_key(seq), db=self._invalidated)
            content = content_key(_decode_accepted(raw).record).encode()
            txn.put(content, record_id.encode(), db=self._invalidated_content, overwrite=False)
        return item

    def invalidations(self, since: int, limit: int, *, home: str | None = None) -> InvalidationPage:
        """At most `limit` invalidations with a sequence number above `since`, oldest first.

        With `home`, only invalidations of records that home owns; a page then stops after looking
        at `_SCAN_LIMIT` entries, with `more` set, so no request walks the whole feed.
        """
        items: list[Invalidation] = []
        cursor_at = since
        more = False
        with self._txn(write=False) as txn:
            cursor = txn.cursor(db=self._invalidations)
            scanned = 0
            if cursor.set_range(_seq_key(since + 1)):
                for _, raw in cursor:
                    if len(items) >= limit or scanned >= _SCAN_LIMIT:
                        more = True
                        break
                    scanned += 1
                    item = _decode_invalidation(raw)
                    cursor_at = item.seq
                    if home is None or self._owner(txn, item.id) == home:
                        items.append(item)
        return InvalidationPage(
            items=tuple(items), cursor=next_cursor(since, [cursor_at, *(item.seq for item in items)]), more=more
        )

    def records(self, after: str, limit: int) -> RecordPage:
        """At most `limit` accepted records with ids after `after`, by id (a governance listing)."""
        items: list[RecordSummary] = []
        last: str | None = None
        with self._txn(write=False) as txn:
            cursor = txn.cursor(db=self._records)
            found = cursor.set_range(after.encode()) if after else cursor.first()
            while found:
                record_id = bytes(cursor.key()).decode()
                if record_id != after:
                    if len(items) >= limit:
                        return RecordPage(items=tuple(items), next=last)
                    accepted = _decode_accepted(cursor.value())
                    invalidated = txn.get(record_id.encode(), db=self._invalidated) is not None
                    items.append(
                        RecordSummary(
                            id=record_id, home=accepted.home, digest=accepted.record.digest,
                            accepted_at=accepted.accepted_at, invalidated=invalidated,
                        )
                    )
                    last = record_id
                found = cursor.next()
        return RecordPage(items=tuple(items))

    def enroll(self, name: str, *, rotate: bool = False) -> str:
        """Issue the token of home `name` (shown once; only its hash is kept).

        Enrolling a home that already has a token needs `rotate`, which makes the old token stop working.
        """
        if not _HOME_NAME.match(name) or name == ADMIN:
            raise InvalidInput(
                f"home name {name!r} is not valid: use 1-32 lower-case letters, digits, '-' or '_', "
                f"starting with a letter (and not {ADMIN!r})"
            )
        token = new_token(name)
        entry = HomeEntry(name=name, token_sha256=token_digest(token), enrolled_at=self._clock())
        with self._txn(write=True) as txn:
            if txn.get(name.encode(), db=self._homes) is not None and not rotate:
                raise InvalidInput(
                    f"home {name} is already enrolled; pass --rotate to issue a new token (the old one stops working)"
                )
            txn.put(name.encode(), _encode(entry), db=self._homes)
        return token

    def home_token_digest(self, name: str) -> str | None:
        """The SHA-256 of home `name`'s token, or None if no such home is enrolled."""
        with self._txn(write=False) as txn:
            raw = txn.get(name.encode(), db=self._homes)
        return None if raw is None else _decode_home(raw).token_sha256

    def health(self) -> Health:
        """How many records Realm accepted and how many it invalidated."""
        with self._txn(write=False) as txn:
            records = txn.stat(self._records)["entries"]
            invalidations = txn.stat(self._invalidations)["entries"]
        return Health(status="ok", records=records, invalidations=invalidations, version=PROTOCOL_VERSION)

    def close(self) -> None:
        """Close the environment; later calls raise `StoreClosed`. Closing twice is harmless."""
        with self._close_lock:
            if not self._closed:
                self._closed = True
                self._env.close()

    def __enter__(self) -> RealmState:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
