"""The LMDB environment of one home: schema check, reads, the batched commit, the event log.

Only the store-writer actor calls `commit()`; everything else reads through `reader()`, a short
read transaction used inside one call in the calling thread. `commit()` writes a whole batch of
writes in one durable transaction (`sync=True`): for each write, its events are checked and
projected into state and appended to the event log together, or that one write is refused with
a typed error while the rest of the batch goes on. A full map grows and the batch is retried
once; any other LMDB error closes the store for writing (fail-closed) until it is reopened.
"""

from __future__ import annotations

import bisect
import itertools
import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import lmdb
import msgspec

from resident.errors import (
    InvalidInput,
    ResidentError,
    SchemaMismatch,
    StoreClosed,
    StoreFailed,
    TextInvalid,
    WriteFailed,
)
from resident.messages.events import AnyEvent, decode_event, encode_event
from resident.messages.store import Commit, Committed
from resident.store.home import CURRENT_FILE, current_store_dir, finish_restore, private_file
from resident.store.projections import project
from resident.store.tables import EVENTS, META, SCHEMA_VERSION, STATE_TABLES, TABLES, TERMS, VECTORS, Table
from resident.store.view import DictView, TxnView

__all__ = [
    "DEFAULT_MAP_SIZE",
    "Buffer",
    "Outcome",
    "Reader",
    "Store",
    "check_schema",
    "event_key",
    "open_environment",
    "stored_schema_version",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")
# A stored value: bytes, or a memoryview into the map in a zero-copy read.
Buffer = bytes | memoryview
DEFAULT_MAP_SIZE = 1 << 30
Outcome = tuple[Committed | None, BaseException | None, tuple[AnyEvent, ...]]


def _successor(prefix: bytes) -> bytes:
    """The least key above every key that starts with `prefix` (which must not end in 0xff)."""
    return prefix[:-1] + bytes([prefix[-1] + 1])


def event_key(seq: int) -> bytes:
    """Event keys are big-endian so LMDB's byte order is sequence order."""
    return seq.to_bytes(8, "big")


class Reader:
    """Typed reads inside one LMDB read transaction."""

    def __init__(self, txn: lmdb.Transaction, dbs: dict[str, Any]) -> None:
        self._txn = txn
        self._dbs = dbs

    def get(self, table: Table[T], key: str) -> T | None:
        raw = self._txn.get(key.encode("utf-8"), db=self._dbs[table.name])
        return None if raw is None else table.decode(bytes(raw))

    def raw(self, table: Table[Any], key: str) -> bytes | None:
        value = self._txn.get(key.encode("utf-8"), db=self._dbs[table.name])
        return None if value is None else bytes(value)

    def items(self, table: Table[T], prefix: str = "") -> Iterator[tuple[str, T]]:
        """Every (key, value) whose key starts with `prefix`, in key order."""
        start = prefix.encode("utf-8")
        with self._txn.cursor(db=self._dbs[table.name]) as cursor:
            if not cursor.set_range(start):
                return
            for key, value in cursor:
                key_bytes = bytes(key)
                if not key_bytes.startswith(start):
                    return
                yield key_bytes.decode("utf-8"), table.decode(bytes(value))

    def raw_columns(self, table: Table[Any], prefix: bytes = b"") -> tuple[list[bytes], list[Buffer]]:
        """Every key and every encoded value of `table`, as two lists in key order.

        The bulk read of a rebuild: each list comes from one cursor pass driven by LMDB's binding
        in C, about three times faster at 100k rows than iterating items in Python. The values
        are memoryviews in a `zero_copy` reader (see `Store.reader`), bytes otherwise. With a
        `prefix`, only the keys that start with it, returned without it.
        """
        db = self._dbs[table.name]
        with self._txn.cursor(db=db) as cursor:
            if not cursor.set_range(prefix):
                return [], []
            keys = list(map(bytes, cursor.iternext(keys=True, values=False)))
        if prefix:
            # Keys are sorted: those with the prefix run up to the first key at or past its successor.
            keys = keys[: bisect.bisect_left(keys, _successor(prefix))]
        with self._txn.cursor(db=db) as cursor:
            cursor.set_range(prefix)
            values: list[Buffer] = list(itertools.islice(cursor.iternext(keys=False, values=True), len(keys)))
        if prefix:
            keys = [key[len(prefix) :] for key in keys]
        return keys, values

    def raw_items(self, table: Table[Any]) -> Iterator[tuple[bytes, bytes]]:
        """Every (key, encoded value) of `table`, in key order."""
        with self._txn.cursor(db=self._dbs[table.name]) as cursor:
            for key, value in cursor:
                yield bytes(key), bytes(value)

    def count(self, table: Table[Any]) -> int:
        return int(self._txn.stat(self._dbs[table.name])["entries"])

    def events(self, since: int = 0) -> Iterator[tuple[int, AnyEvent]]:
        """Events with sequence number >= `since`, in order."""
        with self._txn.cursor(db=self._dbs[EVENTS.name]) as cursor:
            if not cursor.set_range(event_key(since)):
                return
            for key, value in cursor:
                yield int.from_bytes(key, "big"), decode_event(bytes(value))


class Store:
    """One home's LMDB environment. Open with `Store.open(home)`; the caller holds the home lock."""

    def __init__(self, path: Path, env: lmdb.Environment, dbs: dict[str, Any], map_size: int) -> None:
        self.path = path
        self._env = env
        self._dbs = dbs
        self._map_size = map_size
        self._next_seq = self._last_seq() + 1
        self._failure = ""
        self._closed = False
        self.failed_transactions = 0
        # Growing the map needs no open transaction in this process; readers share, resizes exclude.
        self._gate = threading.Condition()
        self._readers = 0
        self._resizing = False

    # -- opening and closing ----------------------------------------------------------------------

    @classmethod
    def open(cls, home: Path, *, map_size: int = DEFAULT_MAP_SIZE) -> Store:
        """Open (creating if new) the store of `home`; refuse another schema version."""
        finish_restore(home)
        path = current_store_dir(home)
        if (home / CURRENT_FILE).exists() and not (path / "data.mdb").exists():
            # CURRENT is only ever switched to a complete store; opening an empty one here would
            # silently hide the home's data.
            raise InvalidInput(
                f"{home / CURRENT_FILE} names {path.name}, which holds no store; restore the home from a backup"
            )
        path.mkdir(mode=0o700, exist_ok=True)
        path.chmod(0o700)
        env = open_environment(path, map_size=map_size)
        try:
            for name in ("data.mdb", "lock.mdb"):
                private_file(path / name)
            # Check before creating any table, so a home of another version is left as it was.
            check_schema(env, initialize=True, where=home)
            dbs = {table.name: env.open_db(table.name.encode("ascii")) for table in TABLES}
        except BaseException:
            env.close()
            raise
        return cls(path, env, dbs, max(map_size, env.info()["map_size"]))

    def close(self) -> None:
        with self._gate:
            if self._closed:
                return
            self._closed = True
            while self._readers:
                self._gate.wait(timeout=5.0)
        self._env.sync(True)
        self._env.close()

    @property
    def failure(self) -> str:
        """Why the store refuses writes (empty while healthy)."""
        return self._failure

    @property
    def map_size(self) -> int:
        return self._map_size

    # -- reads ------------------------------------------------------------------------------------

    @contextmanager
    def reader(self, *, zero_copy: bool = False) -> Iterator[Reader]:
        """A short read transaction for use inside one call, in this thread only.

        With `zero_copy`, the values `raw_columns` returns are memoryviews into the map, valid only
        inside this block: a bulk read then copies nothing it does not keep (every other read
        returns copies either way).
        """
        with self._reading():
            txn = self._env.begin(write=False, buffers=True) if zero_copy else self._env.begin(write=False)
            with txn:
                yield Reader(txn, self._dbs)

    @contextmanager
    def _reading(self) -> Iterator[None]:
        """Count a read (or copy) in progress: the map cannot grow, nor the store close, meanwhile."""
        with self._gate:
            while self._resizing:
                self._gate.wait(timeout=5.0)
            if self._closed:
                raise StoreClosed("the store is closed; open the runtime again")
            self._readers += 1
        try:
            yield
        finally:
            with self._gate:
                self._readers -= 1
                if not self._readers:
                    self._gate.notify_all()

    def _last_seq(self) -> int:
        with self._env.begin(write=False) as txn, txn.cursor(db=self._dbs[EVENTS.name]) as cursor:
            return int.from_bytes(cursor.key(), "big") if cursor.last() else 0

    # -- the write path ---------------------------------------------------------------------------

    def commit(self, writes: Sequence[Commit]) -> list[Outcome]:
        """Commit every write in one durable transaction; one outcome per write, in order.

        An outcome is (Committed, None, applied events) or (None, error, ()). When the transaction
        itself fails, every write gets the same error and nothing is committed.
        """
        if self._closed:
            return self._fail_all(writes, StoreClosed("the store is closed; open the runtime again"))
        if self._failure:
            return self._fail_all(writes, StoreFailed(self._refusal()))
        for attempt in (1, 2):
            try:
                return self._commit_once(writes)
            except lmdb.MapFullError:
                if attempt == 2:
                    return self._fail_all(
                        writes,
                        WriteFailed(
                            f"the store is full even after growing to {self._map_size >> 20} MiB; "
                            "free disk space or back up and compact the home"
                        ),
                    )
                self._grow()
            except lmdb.Error as error:
                self._failure = f"{type(error).__name__}: {error}"
                logger.error("store %s failed and now refuses writes: %s", self.path, self._failure)
                return self._fail_all(writes, StoreFailed(self._refusal()))
            except Exception as error:
                logger.exception("a write transaction failed; none of its %d writes committed", len(writes))
                return self._fail_all(
                    writes,
                    WriteFailed(f"the write transaction failed and nothing in it was committed: {error}"),
                )
        raise AssertionError("unreachable")  # pragma: no cover

    def _fail_all(self, writes: Sequence[Commit], error: BaseException) -> list[Outcome]:
        self.failed_transactions += 1
        return [(None, error, ()) for _ in writes]

    def _refusal(self) -> str:
        return f"the store refuses writes after an LMDB error ({self._failure}); close and reopen the runtime"

    def _commit_once(self, writes: Sequence[Commit]) -> list[Outcome]:
        outcomes: list[Outcome] = []
        seq = self._next_seq
        with self._env.begin(write=True) as txn:
            view = TxnView(txn, self._dbs)
            for write in writes:
                if len(write.events) > 1:
                    # Later events of one write may depend on earlier ones (a bank, then a record
                    # in it), so a multi-event write runs in a nested transaction it can abandon.
                    child = self._env.begin(write=True, parent=txn)
                    nested = view.nested(child)
                    try:
                        outcome, seq = _apply_write(child, self._dbs, write, seq, nested)
                    except BaseException:
                        child.abort()
                        raise
                    if outcome[1] is None:
                        child.commit()
                        nested.merge()
                    else:
                        child.abort()
                else:
                    outcome, seq = _apply_write(txn, self._dbs, write, seq, view)
                outcomes.append(outcome)
        self._next_seq = seq
        return outcomes

    def _grow(self) -> None:
        with self._gate:
            self._resizing = True
            try:
                while self._readers:
                    self._gate.wait(timeout=5.0)
                self._map_size *= 2
                self._env.set_mapsize(self._map_size)
                logger.info("store map grown to %d MiB", self._map_size >> 20)
            finally:
                self._resizing = False
                self._gate.notify_all()

    # -- maintenance ------------------------------------------------------------------------------

    def copy_to(self, directory: Path) -> None:
        """A consistent, compacted copy of the environment into an empty `directory`."""
        # The copy runs in a read transaction of its own, which a concurrent map resize would break.
        with self._reading():
            self._env.copy(str(directory), compact=True)

    def state_tables(self) -> dict[str, list[tuple[bytes, bytes]]]:
        """Every state table's raw contents (for comparing live state with a replay)."""
        with self.reader() as reader:
            return {table.name: list(reader.raw_items(table)) for table in STATE_TABLES}

    def replay(self) -> dict[str, list[tuple[bytes, bytes]]]:
        """State rebuilt from the event log alone, in the same shape as `state_tables()`."""
        view = DictView()
        with self.reader() as reader:
            for _, event in reader.events():
                project(view, event)
        return {table.name: list(view.items(table)) for table in STATE_TABLES}

    def verify(self) -> list[str]:
        """Structural problems found by walking every table (empty when the store is sound)."""
        problems: list[str] = []
        with self.reader() as reader:
            previous = 0
            for seq, _ in reader.events():
                if seq <= previous:
                    problems.append(f"event {seq} is out of order after {previous}")
                previous = seq
            for table in TABLES:
                if table in (META, EVENTS):
                    continue
                for key, value in reader.raw_items(table):
                    try:
                        table.decode(value)
                    except Exception as error:  # noqa: BLE001 - every decode failure is a finding
                        problems.append(f"{table.name}/{key!r}: {error}")
        return problems


def _apply_write(
    txn: lmdb.Transaction, dbs: dict[str, Any], write: Commit, seq: int, view: TxnView | None = None
) -> tuple[Outcome, int]:
    events_db, vectors_db, terms_db = dbs[EVENTS.name], dbs[VECTORS.name], dbs[TERMS.name]
    if view is None:
        view = TxnView(txn, dbs)
    applied: list[AnyEvent] = []
    start = seq
    try:
        # Encode first: every value of the write is in its events, so a value that cannot be
        # stored (a lone surrogate in a string) refuses this write alone, before any state changes,
        # instead of failing the whole batch it shares a transaction with.
        encoded = [encode_event(event) for event in write.events]
    except (msgspec.EncodeError, UnicodeEncodeError) as error:
        refusal = TextInvalid(f"the write holds text that is not valid UTF-8 ({error}); nothing was written")
        return (None, refusal, ()), start
    try:
        for event, data in zip(write.events, encoded, strict=True):
            if project(view, event):
                if not txn.put(event_key(seq), data, db=events_db, append=True):
                    # LMDB refuses a key that is not past the end of the log without raising; the
                    # state change must not commit without its event, so the transaction fails.
                    raise lmdb.KeyExistsError(
                        f"event {seq} is not past the end of the event log; another writer appended to it"
                    )
                applied.append(event)
                seq += 1
    except ResidentError as refusal:
        return (None, refusal, ()), start
    for key, vector in write.vectors:
        txn.put(key.encode("utf-8"), vector, db=vectors_db)
    for key, term_ids in write.terms:
        txn.put(key.encode("utf-8"), term_ids, db=terms_db)
    return (Committed(last_seq=seq - 1 if applied else None, applied=len(applied)), None, tuple(applied)), seq


def open_environment(path: Path, *, map_size: int, readonly: bool = False) -> lmdb.Environment:
    """Open an LMDB environment the way every home is opened (durable commits, private files)."""
    return lmdb.open(
        str(path),
        map_size=map_size,
        max_dbs=32,
        subdir=True,
        readonly=readonly,
        sync=True,
        metasync=True,
        lock=True,
        mode=0o600,
        max_readers=256,
    )


def stored_schema_version(env: lmdb.Environment) -> str | None:
    """The schema version stamped in `env` (None when unstamped), read without writing anything."""
    with env.begin(write=False) as txn:
        try:
            meta = env.open_db(META.name.encode("ascii"), txn=txn, create=False)
        except lmdb.NotFoundError:
            return None
        stored = txn.get(b"schema_version", db=meta)
    return None if stored is None else bytes(stored).decode("ascii", "replace")


def _is_blank(env: lmdb.Environment) -> bool:
    """True when `env` holds no data: at most empty tables (a first open that was interrupted)."""
    with env.begin(write=False) as txn:
        names = [bytes(key) for key, _ in txn.cursor()]
        for name in names:
            try:
                db = env.open_db(name, txn=txn, create=False)
            except lmdb.Error:
                return False
            if txn.stat(db)["entries"]:
                return False
    return True


def check_schema(env: lmdb.Environment, *, initialize: bool, where: Path) -> None:
    """Refuse a home written by another schema version; with `initialize`, stamp a blank one with ours.

    A refused home is not written to. Stamping creates every table in the same transaction, so a
    store either carries a schema version or holds nothing (and is stamped on its next open).
    """
    found = stored_schema_version(env)
    if found is None:
        if not (initialize and _is_blank(env)):
            raise SchemaMismatch(
                f"home {where} has no schema version (expected {SCHEMA_VERSION}); "
                "it was not written by resident or is damaged"
            )
        with env.begin(write=True) as txn:
            for table in TABLES:
                env.open_db(table.name.encode("ascii"), txn=txn)
            meta = env.open_db(META.name.encode("ascii"), txn=txn)
            txn.put(b"schema_version", str(SCHEMA_VERSION).encode("ascii"), db=meta)
        return
    if found != str(SCHEMA_VERSION):
        raise SchemaMismatch(
            f"home {where} has schema version {found} but this resident reads version {SCHEMA_VERSION}; "
            "nothing is migrated silently — use a resident release that reads version "
            f"{found}, or a backup made by this one"
        )
