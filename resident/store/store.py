"""The LMDB environment of one home: schema check, reads, the batched commit, the event log.

Only the store-writer actor calls `commit()`; everything else reads through `reader()`, a short
read transaction used inside one call in the calling thread. `commit()` writes a whole batch of
writes in one durable transaction (`sync=True`): for each write, its events are checked and
projected into state and appended to the event log together, or that one write is refused with
a typed error while the rest of the batch goes on. A full map grows and the batch is retried
once; any other LMDB error closes the store for writing (fail-closed) until it is reopened.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import lmdb

from resident.errors import ResidentError, SchemaMismatch, StoreClosed, StoreFailed, WriteFailed
from resident.messages.events import AnyEvent, decode_event, encode_event
from resident.messages.store import Commit, Committed
from resident.store.home import current_store_dir, private_file
from resident.store.projections import project
from resident.store.tables import EVENTS, META, SCHEMA_VERSION, STATE_TABLES, TABLES, VECTORS, Table
from resident.store.view import DictView, TxnView

__all__ = ["DEFAULT_MAP_SIZE", "Outcome", "Reader", "Store", "event_key"]

logger = logging.getLogger(__name__)

T = TypeVar("T")
DEFAULT_MAP_SIZE = 1 << 30
Outcome = tuple[Committed | None, BaseException | None, tuple[AnyEvent, ...]]


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
        path = current_store_dir(home)
        new = not (path / "data.mdb").exists()
        path.mkdir(mode=0o700, exist_ok=True)
        path.chmod(0o700)
        env = open_environment(path, map_size=map_size)
        try:
            dbs = {table.name: env.open_db(table.name.encode("ascii")) for table in TABLES}
            for name in ("data.mdb", "lock.mdb"):
                private_file(path / name)
            check_schema(env, dbs, initialize=new, where=home)
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
    def reader(self) -> Iterator[Reader]:
        """A short read transaction for use inside one call, in this thread only."""
        with self._gate:
            while self._resizing:
                self._gate.wait(timeout=5.0)
            if self._closed:
                raise StoreClosed("the store is closed; open the runtime again")
            self._readers += 1
        try:
            with self._env.begin(write=False, buffers=False) as txn:
                yield Reader(txn, self._dbs)
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
            for write in writes:
                if len(write.events) > 1:
                    # Later events of one write may depend on earlier ones (a bank, then a record
                    # in it), so a multi-event write runs in a nested transaction it can abandon.
                    child = self._env.begin(write=True, parent=txn)
                    try:
                        outcome, seq = _apply_write(child, self._dbs, write, seq)
                    except BaseException:
                        child.abort()
                        raise
                    if outcome[1] is None:
                        child.commit()
                    else:
                        child.abort()
                else:
                    outcome, seq = _apply_write(txn, self._dbs, write, seq)
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
        with self._gate:
            if self._closed:
                raise StoreClosed("the store is closed; open the runtime again")
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


def _apply_write(txn: lmdb.Transaction, dbs: dict[str, Any], write: Commit, seq: int) -> tuple[Outcome, int]:
    events_db, vectors_db = dbs[EVENTS.name], dbs[VECTORS.name]
    view = TxnView(txn, dbs)
    applied: list[AnyEvent] = []
    start = seq
    try:
        for event in write.events:
            if project(view, event):
                txn.put(event_key(seq), encode_event(event), db=events_db, append=True)
                applied.append(event)
                seq += 1
    except ResidentError as refusal:
        return (None, refusal, ()), start
    for key, vector in write.vectors:
        txn.put(key.encode("utf-8"), vector, db=vectors_db)
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


def check_schema(env: lmdb.Environment, dbs: dict[str, Any], *, initialize: bool, where: Path) -> None:
    """Refuse a home written by another schema version; stamp a new one with ours."""
    with env.begin(write=initialize) as txn:
        stored = txn.get(b"schema_version", db=dbs[META.name])
        if stored is None:
            if not initialize:
                raise SchemaMismatch(
                    f"home {where} has no schema version (expected {SCHEMA_VERSION}); "
                    "it was not written by resident or is damaged"
                )
            txn.put(b"schema_version", str(SCHEMA_VERSION).encode("ascii"), db=dbs[META.name])
            return
    found = stored.decode("ascii", "replace")
    if found != str(SCHEMA_VERSION):
        raise SchemaMismatch(
            f"home {where} has schema version {found} but this resident reads version {SCHEMA_VERSION}; "
            "nothing is migrated silently — use a resident release that reads version "
            f"{found}, or a backup made by this one"
        )
