"""Realm's durable state: accepted records, verdicts and the invalidation feed, in one LMDB env.

Every table is write-once: a verdict, an accepted record or an invalidation is never updated or
deleted, so an answer Realm gave once is the answer it gives after any restart or crash. Every
write transaction is committed with `sync=True` before its caller sees the result, so an accepted
record survives `kill -9` the moment its response exists.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType

import lmdb
import msgspec

from resident.errors import RecordNotFound, SchemaMismatch, StoreClosed, StoreFailed
from resident.messages.realm import (
    PROTOCOL_VERSION,
    AcceptedRecord,
    Health,
    Invalidation,
    InvalidationPage,
    RealmRecord,
    ReplicateResult,
    Verdict,
)
from resident.realm.governance import judge, next_cursor

__all__ = ["SCHEMA_VERSION", "RealmState"]

SCHEMA_VERSION = 1
# Address space, not disk: LMDB files grow as data is written.
DEFAULT_MAP_SIZE = 4 * 1024**3

_SCHEMA_KEY = b"schema"
_encode = msgspec.msgpack.Encoder().encode
_decode_verdict = msgspec.msgpack.Decoder(Verdict).decode
_decode_invalidation = msgspec.msgpack.Decoder(Invalidation).decode
_decode_accepted = msgspec.msgpack.Decoder(AcceptedRecord).decode


def _seq_key(seq: int) -> bytes:
    # Big-endian so that LMDB's byte order is sequence order.
    return seq.to_bytes(8, "big")


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
            data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            data_dir.chmod(0o700)
            env = lmdb.open(str(data_dir), map_size=map_size, max_dbs=8, mode=0o600, sync=True, metasync=True)
        except (OSError, lmdb.Error) as exc:
            raise StoreFailed(f"cannot open the Realm store in {data_dir}: {exc}") from exc
        try:
            state = cls(env, data_dir, clock)
            state._check_schema()
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

    def replicate(self, records: Sequence[RealmRecord]) -> list[ReplicateResult]:
        """Judge each record in order and store new verdicts and accepted records in one commit."""
        now = self._clock()
        results: list[ReplicateResult] = []
        with self._txn(write=True) as txn:
            for record in records:
                key = _verdict_key(record.id, record.digest)
                prior_raw = txn.get(key, db=self._verdicts)
                prior = None if prior_raw is None else _decode_verdict(prior_raw)
                verdict = judge(record, prior=prior, accepted_digest=self._accepted_digest(txn, record.id), at=now)
                if prior is None:
                    # The transaction sees its own writes, so a later duplicate in the same batch
                    # is judged against this one.
                    txn.put(key, _encode(verdict), db=self._verdicts)
                    if verdict.status == "accepted":
                        stored = AcceptedRecord(record=record, accepted_at=now)
                        txn.put(record.id.encode(), _encode(stored), db=self._records)
                results.append(ReplicateResult(id=record.id, status=verdict.status, reason=verdict.reason))
        return results

    def _accepted_digest(self, txn: lmdb.Transaction[bytes], record_id: str) -> str | None:
        raw = txn.get(record_id.encode(), db=self._records)
        if raw is None:
            return None
        return _decode_accepted(raw).record.digest

    def invalidate(self, record_id: str, reason: str) -> Invalidation:
        """Append an invalidation of an accepted record; a second call returns the first entry."""
        with self._txn(write=True) as txn:
            if txn.get(record_id.encode(), db=self._records) is None:
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
        return item

    def invalidations(self, since: int, limit: int) -> InvalidationPage:
        """At most `limit` invalidations with a sequence number above `since`, oldest first."""
        items: list[Invalidation] = []
        with self._txn(write=False) as txn:
            cursor = txn.cursor(db=self._invalidations)
            if cursor.set_range(_seq_key(since + 1)):
                for _, raw in cursor:
                    if len(items) >= limit:
                        break
                    items.append(_decode_invalidation(raw))
        return InvalidationPage(items=tuple(items), cursor=next_cursor(since, [item.seq for item in items]))

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
