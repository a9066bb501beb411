"""Realm's LMDB backend: one environment in a data directory, served by one process.

LMDB has one writer at a time, so every write transaction is serial and the rules need nothing more.
Each write commits with `sync=True` before its caller sees the result. Two indexes are derived and
rebuilt at every open (one read per accepted record): the content key of each accepted record, and of
each invalidated one; rebuilding keeps them right when what counts as the same content changes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import lmdb
import msgspec

from resident.errors import SchemaMismatch, StoreClosed, StoreFailed
from resident.messages.realm import AcceptedRecord, HomeEntry, Invalidation, Verdict
from resident.realm.governance import content_key
from resident.realm.storage import StorageTxn

__all__ = ["DEFAULT_MAP_SIZE", "SCHEMA_VERSION", "LmdbStorage", "make_private_dirs"]

SCHEMA_VERSION = 1
# Address space, not disk: LMDB files grow as data is written.
DEFAULT_MAP_SIZE = 4 * 1024**3

T = TypeVar("T")
_SCHEMA_KEY = b"schema"
_encode = msgspec.msgpack.Encoder().encode
_decode_verdict = msgspec.msgpack.Decoder(Verdict).decode
_decode_invalidation = msgspec.msgpack.Decoder(Invalidation).decode
_decode_accepted = msgspec.msgpack.Decoder(AcceptedRecord).decode
_decode_home = msgspec.msgpack.Decoder(HomeEntry).decode


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


def _verdict_key(record_id: str, digest: str) -> bytes:
    # Ids are printable ASCII (no NUL), so the separator cannot be forged.
    return f"{record_id}\x00{digest}".encode()


class _LmdbTxn:
    """`StorageTxn` over one LMDB transaction."""

    def __init__(self, txn: lmdb.Transaction[bytes], dbs: dict[str, lmdb._Database]) -> None:
        self._txn = txn
        self._db = dbs

    def lock_content(self, content_keys: Sequence[str], *, exclusive: bool) -> None:  # noqa: ARG002 - the interface's
        # LMDB's one writer already keeps every write transaction apart: nothing to lock.
        return

    def owners(self, record_ids: Sequence[str]) -> dict[str, str]:
        found = {record_id: self._txn.get(record_id.encode(), db=self._db["owners"]) for record_id in record_ids}
        return {record_id: bytes(raw).decode() for record_id, raw in found.items() if raw is not None}

    def claim(self, record_ids: Sequence[str], home: str) -> None:
        for record_id in record_ids:
            self._txn.put(record_id.encode(), home.encode(), db=self._db["owners"], overwrite=False)

    def verdicts(self, pairs: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Verdict]:
        found = {pair: self._txn.get(_verdict_key(*pair), db=self._db["verdicts"]) for pair in pairs}
        return {pair: _decode_verdict(raw) for pair, raw in found.items() if raw is not None}

    def put_verdicts(self, verdicts: Sequence[tuple[str, str, Verdict]]) -> None:
        for record_id, digest, verdict in verdicts:
            self._txn.put(_verdict_key(record_id, digest), _encode(verdict), db=self._db["verdicts"], overwrite=False)

    def accepted(self, record_id: str) -> AcceptedRecord | None:
        raw = self._txn.get(record_id.encode(), db=self._db["records"])
        return None if raw is None else _decode_accepted(raw)

    def accepted_digests(self, record_ids: Sequence[str]) -> dict[str, str]:
        found = {record_id: self.accepted(record_id) for record_id in record_ids}
        return {record_id: stored.record.digest for record_id, stored in found.items() if stored is not None}

    def put_accepted(self, accepted: Sequence[tuple[AcceptedRecord, str]]) -> None:
        for stored, key in accepted:
            self._txn.put(stored.record.id.encode(), _encode(stored), db=self._db["records"], overwrite=False)
            self._txn.put(key.encode(), stored.record.id.encode(), db=self._db["accepted_content"])

    def accepted_with_content(self, content_key: str) -> list[str]:
        cursor = self._txn.cursor(db=self._db["accepted_content"])
        if not cursor.set_key(content_key.encode()):
            return []
        return [bytes(value).decode() for value in cursor.iternext_dup()]

    def invalidated_with_content(self, content_keys: Sequence[str]) -> dict[str, str]:
        found = {key: self._txn.get(key.encode(), db=self._db["invalidated_content"]) for key in content_keys}
        return {key: bytes(raw).decode() for key, raw in found.items() if raw is not None}

    def invalidations_of(self, record_ids: Sequence[str]) -> dict[str, Invalidation]:
        found: dict[str, Invalidation] = {}
        for record_id in record_ids:
            seq_key = self._txn.get(record_id.encode(), db=self._db["invalidated"])
            entry = None if seq_key is None else self._txn.get(seq_key, db=self._db["invalidations"])
            if entry is not None:
                found[record_id] = _decode_invalidation(entry)
        return found

    def append_invalidation(self, record_id: str, reason: str, at: float) -> Invalidation:
        cursor = self._txn.cursor(db=self._db["invalidations"])
        seq = int.from_bytes(cursor.key(), "big") + 1 if cursor.last() else 1
        item = Invalidation(seq=seq, id=record_id, reason=reason, at=at)
        self._txn.put(_seq_key(seq), _encode(item), db=self._db["invalidations"], append=True)
        self._txn.put(record_id.encode(), _seq_key(seq), db=self._db["invalidated"])
        accepted = self.accepted(record_id)
        if accepted is not None:
            key = content_key(accepted.record).encode()
            self._txn.put(key, record_id.encode(), db=self._db["invalidated_content"], overwrite=False)
        return item

    def feed(self, since: int, count: int) -> list[Invalidation]:
        items: list[Invalidation] = []
        cursor = self._txn.cursor(db=self._db["invalidations"])
        if cursor.set_range(_seq_key(since + 1)):
            for _, raw in cursor:
                if len(items) >= count:
                    break
                items.append(_decode_invalidation(raw))
        return items

    def accepted_after(self, after: str, count: int) -> list[AcceptedRecord]:
        items: list[AcceptedRecord] = []
        cursor = self._txn.cursor(db=self._db["records"])
        found = cursor.set_range(after.encode()) if after else cursor.first()
        while found and len(items) < count:
            if bytes(cursor.key()).decode() != after:
                items.append(_decode_accepted(cursor.value()))
            found = cursor.next()
        return items

    def home(self, name: str) -> HomeEntry | None:
        raw = self._txn.get(name.encode(), db=self._db["homes"])
        return None if raw is None else _decode_home(raw)

    def put_home(self, entry: HomeEntry) -> None:
        self._txn.put(entry.name.encode(), _encode(entry), db=self._db["homes"])

    def counts(self) -> tuple[int, int]:
        return self._txn.stat(self._db["records"])["entries"], self._txn.stat(self._db["invalidations"])["entries"]


class LmdbStorage:
    """Realm's tables in one LMDB environment (a data directory created 0700, its files 0600); thread-safe."""

    def __init__(self, env: lmdb.Environment, path: Path) -> None:
        self._env = env
        self.path = path
        self.where = f"the Realm store in {path}"
        names = (
            "records", "verdicts", "invalidations", "invalidated", "invalidated_content", "owners", "homes", "meta",
        )
        self._dbs = {name: env.open_db(name.encode()) for name in names}
        self._dbs["accepted_content"] = env.open_db(b"accepted_content", dupsort=True)
        self._closed = False
        self._close_lock = threading.Lock()

    @classmethod
    def open(cls, data_dir: Path, *, map_size: int = DEFAULT_MAP_SIZE) -> LmdbStorage:
        """Open (or create) the store in `data_dir`; refuses a store of another schema version."""
        try:
            make_private_dirs(data_dir)
            env = lmdb.open(str(data_dir), map_size=map_size, max_dbs=16, mode=0o600, sync=True, metasync=True)
        except (OSError, lmdb.Error) as exc:
            raise StoreFailed(f"cannot open the Realm store in {data_dir}: {exc}") from exc
        try:
            storage = cls(env, data_dir)
            storage._check_schema()
            storage._reindex_content()
        except lmdb.Error as exc:
            env.close()
            raise StoreFailed(f"cannot open the Realm store in {data_dir}: {exc}") from exc
        except BaseException:
            env.close()
            raise
        return storage

    def _check_schema(self) -> None:
        with self._txn(write=True) as txn:
            found = txn.get(_SCHEMA_KEY, db=self._dbs["meta"])
            if found is None:
                txn.put(_SCHEMA_KEY, str(SCHEMA_VERSION).encode(), db=self._dbs["meta"])
                return
        if found != str(SCHEMA_VERSION).encode():
            raise SchemaMismatch(
                f"the Realm store in {self.path} has schema {found.decode(errors='replace')}, "
                f"this Realm reads schema {SCHEMA_VERSION}; use a Realm of the matching version"
            )

    def _reindex_content(self) -> None:
        """Rebuild both content indexes from the accepted records and the invalidations (see the docstring)."""
        with self._txn(write=True) as txn:
            txn.drop(self._dbs["accepted_content"], delete=False)
            txn.drop(self._dbs["invalidated_content"], delete=False)
            for record_id, raw in txn.cursor(db=self._dbs["records"]):
                key = content_key(_decode_accepted(raw).record).encode()
                txn.put(key, bytes(record_id), db=self._dbs["accepted_content"])
            for _, raw in txn.cursor(db=self._dbs["invalidations"]):
                item = _decode_invalidation(raw)
                accepted = txn.get(item.id.encode(), db=self._dbs["records"])
                if accepted is not None:
                    key = content_key(_decode_accepted(accepted).record).encode()
                    txn.put(key, item.id.encode(), db=self._dbs["invalidated_content"], overwrite=False)

    @contextmanager
    def _txn(self, *, write: bool) -> Iterator[lmdb.Transaction[bytes]]:
        if self._closed:
            raise StoreClosed(f"the Realm store in {self.path} is closed")
        try:
            # Leaving the block commits (and, for writes, syncs) or aborts on an exception.
            with self._env.begin(write=write) as txn:
                yield txn
        except lmdb.Error as exc:
            raise StoreFailed(f"the Realm store in {self.path} failed: {exc}") from exc

    def run(self, work: Callable[[StorageTxn], T], *, write: bool) -> T:
        """`work` in one LMDB transaction; LMDB's single writer makes every write transaction serial."""
        with self._txn(write=write) as txn:
            return work(_LmdbTxn(txn, self._dbs))

    def export_tables(self) -> dict[str, list[tuple[bytes, ...]]]:
        """Every row of the tables a copy carries, as stored bytes in key order (the derived indexes are not).

        Keys are those of the PostgreSQL tables: a verdict's (id, digest), an invalidation's position.
        """
        tables: dict[str, list[tuple[bytes, ...]]] = {}
        with self._txn(write=False) as txn:
            for name in ("owners", "records", "homes"):
                tables[name] = [(bytes(k), bytes(v)) for k, v in txn.cursor(db=self._dbs[name])]
            tables["verdicts"] = [
                (*bytes(k).split(b"\x00", 1), bytes(v)) for k, v in txn.cursor(db=self._dbs["verdicts"])
            ]
            tables["invalidations"] = [
                (str(int.from_bytes(k, "big")).encode(), bytes(v))
                for k, v in txn.cursor(db=self._dbs["invalidations"])
            ]
        return tables

    def close(self) -> None:
        """Close the environment; later calls raise `StoreClosed`. Closing twice is harmless."""
        with self._close_lock:
            if not self._closed:
                self._closed = True
                self._env.close()


