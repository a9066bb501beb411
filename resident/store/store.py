"""The LMDB environment of one home: schema check, reads, the batched commit, the event log.

Only the store-writer actor calls `commit()`; everything else reads through `reader()`, a short
read transaction used inside one call in the calling thread. `commit()` writes a whole batch of
writes in one durable transaction (`sync=True`): for each write, its events are checked and
projected into state and appended to the event log together, or that one write is refused with
a typed error while the rest of the batch goes on.

When the transaction itself fails, nothing in it is committed and every write in it gets the
same error, named for its cause (see `resident.store.faults`):

* a full map grows (doubling, up to `max_map_size`) and the batch is retried; at the limit the
  batch is refused with `MapFull`;
* a full disk refuses the batch with `DiskFull`; the store stays open, so a later batch that fits
  commits (the writer decides when to try again);
* a damaged page fails the store closed with `StoreCorrupted`, any other LMDB error with
  `StoreFailed`, until it is reopened.

Opening checks the data file before the runtime relies on it: its length against its metadata,
then one read of every page of every table (damage is `StoreCorrupted`, named with the way out).
A store opened `readonly` (a home this process may not write) serves reads and refuses every
commit with `HomeReadOnly`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import lmdb
import msgspec

from resident.errors import (
    HomeReadOnly,
    InvalidInput,
    MapFull,
    ResidentError,
    SchemaMismatch,
    StoreBusy,
    StoreClosed,
    StoreCorrupted,
    StoreFailed,
    TextInvalid,
    WriteFailed,
)
from resident.messages.events import AnyEvent, encode_event
from resident.messages.store import Commit, Committed
from resident.store.checked import forget_checked, mark_checked
from resident.store.environment import open_environment
from resident.store.faults import (
    CORRUPTION_ERRORS,
    DATA_FILE,
    check_data_file,
    corrupted,
    disk_full,
    format_bytes,
    free_space,
    is_disk_full,
    space_needed,
)
from resident.store.gate import DEFAULT_DEADLINE, MapGate
from resident.store.home import CURRENT_FILE, current_store_dir, finish_restore, private_file
from resident.store.projection_table import project
from resident.store.reader import Buffer, Reader, event_key
from resident.store.replay import replay_rows
from resident.store.tables import EVENTS, META, RECORDS, SCHEMA_VERSION, STATE_TABLES, TABLES, TERMS, USAGE, VECTORS
from resident.store.usage import count_usage
from resident.store.view import TxnView

__all__ = [
    "DEFAULT_MAP_SIZE",
    "MAX_MAP_SIZE",
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

DEFAULT_MAP_SIZE = 1 << 30
# The map is only address space (LMDB writes through the file, not the mapping), so the limit is
# far above any disk: in practice the disk fills first, and `MapFull` is the rarer fault.
MAX_MAP_SIZE = 1 << 40
Outcome = tuple[Committed | None, BaseException | None, tuple[AnyEvent, ...]]


class Store:
    """One home's LMDB environment. Open with `Store.open(home)`; the caller holds the home lock."""

    def __init__(
        self,
        path: Path,
        env: lmdb.Environment,
        dbs: dict[str, Any],
        map_size: int,
        *,
        readonly: bool = False,
        max_map_size: int = MAX_MAP_SIZE,
        deadline: float = DEFAULT_DEADLINE,
    ) -> None:
        self.path = path
        self.readonly = readonly
        self._env = env
        self._dbs = dbs
        self._map_size = map_size
        self._max_map_size = max(max_map_size, map_size)
        self._page_size = int(env.stat()["psize"])
        self._next_seq = self._last_seq() + 1
        self._failure = ""
        self._corruption = ""
        self.failed_transactions = 0
        # Growing the map needs no open transaction in this process; readers share, resizes exclude.
        self._gate = MapGate(deadline)

    # -- opening and closing ----------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        home: Path,
        *,
        map_size: int = DEFAULT_MAP_SIZE,
        max_map_size: int = MAX_MAP_SIZE,
        deadline: float = DEFAULT_DEADLINE,
        readonly: bool = False,
    ) -> Store:
        """Open (creating if new) the store of `home`; refuse another schema version or a damaged file.

        With `readonly`, nothing in the home is created or changed: the store must exist.
        """
        if readonly:
            return cls._open_readonly(home, map_size, deadline)
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
        data = path / "data.mdb"
        if data.exists() and data.stat().st_size:
            # An empty file is a first open that was cut short: LMDB initializes it below.
            check_data_file(path, map_size)
        try:
            env = open_environment(path, map_size=map_size)
        except CORRUPTION_ERRORS as error:
            raise corrupted(path, str(error)) from None
        try:
            for name in ("data.mdb", "lock.mdb"):
                private_file(path / name)
            # Check before creating any table, so a home of another version is left as it was.
            check_schema(env, initialize=True, where=home)
            dbs = {table.name: env.open_db(table.name.encode("ascii")) for table in TABLES}
            store = cls(
                path, env, dbs, max(map_size, env.info()["map_size"]), max_map_size=max_map_size, deadline=deadline
            )
        except CORRUPTION_ERRORS as error:
            env.close()
            raise corrupted(path, str(error)) from None
        except BaseException:
            env.close()
            raise
        return store

    @classmethod
    def _open_readonly(cls, home: Path, map_size: int, deadline: float) -> Store:
        path = current_store_dir(home)
        if not (path / "data.mdb").exists():
            raise HomeReadOnly(f"home {home} holds no store yet and this process may not create one there")
        check_data_file(path, map_size)
        try:
            env = open_environment(path, map_size=map_size, readonly=True)
        except CORRUPTION_ERRORS as error:
            raise corrupted(path, str(error)) from None
        except lmdb.Error:
            # LMDB writes its reader table in lock.mdb even for a read-only open, unless the file
            # system is read-only; a lock file this process may not write means opening without it.
            env = open_environment(path, map_size=map_size, readonly=True, lock=False)
        try:
            check_schema(env, initialize=False, where=home)
            dbs = {table.name: env.open_db(table.name.encode("ascii"), create=False) for table in TABLES}
        except CORRUPTION_ERRORS as error:
            env.close()
            raise corrupted(path, str(error)) from None
        except BaseException:
            env.close()
            raise
        return cls(path, env, dbs, max(map_size, env.info()["map_size"]), readonly=True, deadline=deadline)

    def close(self) -> None:
        if self._gate.closed:
            return
        if not self._gate.close():
            # Closing the environment would pull the map from under those reads; the process is
            # going away, so the environment is left to it.
            logger.error(
                "store %s: reads still running %g s after close; leaving it open", self.path, self._gate.deadline
            )
            return
        if not self.readonly:
            self._env.sync(True)
        self._env.close()
        # Damage seen while open must be walked for again; a clean file need not be (`checked.py`).
        if self._corruption:
            forget_checked(self.path / DATA_FILE)
        elif not self.readonly:
            mark_checked(self.path / DATA_FILE)

    @property
    def failure(self) -> str:
        """Why the store refuses writes (empty while healthy)."""
        return self._failure

    def damage(self) -> StoreCorrupted | None:
        """The error for the damage a read found in the data file (None while none was seen)."""
        return corrupted(self.path, self._corruption) if self._corruption else None

    @property
    def map_size(self) -> int:
        return self._map_size

    # -- reads ------------------------------------------------------------------------------------

    @contextmanager
    def reader(self, *, zero_copy: bool = False) -> Iterator[Reader]:
        """A short read transaction for use inside one call, in this thread only.

        With `zero_copy`, the values `raw_columns` returns are memoryviews into the map, valid only
        inside this block: a bulk read then copies nothing it does not keep (every other read
        returns copies either way). LMDB's corruption errors and values that do not decode, raised
        anywhere in the block, come out as `StoreCorrupted`.
        """
        with self._gate.shared():
            try:
                txn = self._env.begin(write=False, buffers=True) if zero_copy else self._env.begin(write=False)
                with txn:
                    yield Reader(txn, self._dbs, self._damaged)
            except CORRUPTION_ERRORS as error:
                raise self._damaged(str(error)) from None
            except msgspec.DecodeError as error:
                raise self._damaged(f"a stored value does not decode: {error}") from None

    def _damaged(self, detail: str) -> StoreCorrupted:
        """The error for damage found in this store; remembered, so an open that fails can say why."""
        if not self._corruption:
            self._corruption = detail
            logger.info("store %s is damaged: %s", self.path, detail)
        return corrupted(self.path, detail)

    def _last_seq(self) -> int:
        with self._env.begin(write=False) as txn, txn.cursor(db=self._dbs[EVENTS.name]) as cursor:
            return int.from_bytes(cursor.key(), "big") if cursor.last() else 0

    # -- the write path ---------------------------------------------------------------------------

    def commit(self, writes: Sequence[Commit]) -> list[Outcome]:
        """Commit every write in one durable transaction; one outcome per write, in order.

        An outcome is (Committed, None, applied events) or (None, error, ()). When the transaction
        itself fails, every write gets the same error and nothing is committed.
        """
        if self._gate.closed:
            return self._fail_all(writes, StoreClosed("the store is closed; open the runtime again"))
        if self.readonly:
            return self._fail_all(
                writes,
                HomeReadOnly(
                    f"home {self.path.parent} is open for reading only (this process may not write it); "
                    "nothing was written — make it writable and open it again to write"
                ),
            )
        if self._failure:
            return self._fail_all(writes, self._refusal())
        while True:
            try:
                return self._commit_once(writes)
            except lmdb.MapFullError:
                try:
                    grown = self._grow()
                except StoreBusy as error:
                    return self._fail_all(writes, error)
                if not grown:
                    return self._fail_all(writes, self._map_full(writes))
            except CORRUPTION_ERRORS as error:
                return self._fail_closed(writes, self._damaged(str(error)), f"{type(error).__name__}: {error}")
            except lmdb.Error as error:
                needed = space_needed(writes, self._page_size)
                if is_disk_full(error, self.path, needed):
                    # Info, not a warning: every refused caller hears it as `DiskFull` anyway.
                    logger.info("store %s: the disk is full (%s); %d writes refused", self.path, error, len(writes))
                    return self._fail_all(writes, disk_full(self.path, needed))
                return self._fail_closed(writes, None, f"{type(error).__name__}: {error}")
            except Exception as error:
                logger.exception("a write transaction failed; none of its %d writes committed", len(writes))
                return self._fail_all(
                    writes,
                    WriteFailed(f"the write transaction failed and nothing in it was committed: {error}"),
                )

    def _fail_all(self, writes: Sequence[Commit], error: BaseException) -> list[Outcome]:
        self.failed_transactions += 1
        return [(None, error, ()) for _ in writes]

    def _fail_closed(self, writes: Sequence[Commit], error: BaseException | None, failure: str) -> list[Outcome]:
        """Refuse every write from now on (until the store is reopened); `error` answers this batch."""
        self._failure = failure
        logger.error("store %s failed and now refuses writes: %s", self.path, failure)
        return self._fail_all(writes, error or self._refusal())

    def _refusal(self) -> BaseException:
        return self.damage() or StoreFailed(
            f"the store refuses writes after an LMDB error ({self._failure}); close and reopen the runtime"
        )

    def _map_full(self, writes: Sequence[Commit]) -> MapFull:
        needed = space_needed(writes, self._page_size)
        return MapFull(
            f"the store's map is full at its limit of {format_bytes(self._max_map_size)}: a write of about "
            f"{format_bytes(needed)} does not fit; back up the home and restore the backup (the copy is "
            "compacted) or open it with a larger map limit — writes that fit resume by themselves",
            needed=needed,
        )

    def has_room(self, needed: int) -> bool:
        """Whether a write of about `needed` bytes would fit on the disk and in the map now."""
        used = (self._env.info()["last_pgno"] + 1) * self._page_size
        return free_space(self.path) >= needed and used + needed <= self._max_map_size

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

    def _grow(self) -> bool:
        """Double the map (up to its limit); False when it is at the limit already."""
        if self._map_size >= self._max_map_size:
            return False
        with self._gate.exclusive():
            self._map_size = min(self._map_size * 2, self._max_map_size)
            self._env.set_mapsize(self._map_size)
        logger.info("store map grown to %s", format_bytes(self._map_size))
        return True

    # -- maintenance ------------------------------------------------------------------------------

    def copy_to(self, directory: Path) -> None:
        """A consistent, compacted copy of the environment into an empty `directory`."""
        # The copy runs in a read transaction of its own, which a concurrent map resize would break.
        with self.reader():
            self._env.copy(str(directory), compact=True)

    def state_tables(self) -> dict[str, list[tuple[bytes, bytes]]]:
        """Every state table's raw contents (for comparing live state with a replay)."""
        with self.reader() as reader:
            return {table.name: list(reader.raw_items(table)) for table in STATE_TABLES}

    def replay(self) -> dict[str, list[tuple[bytes, bytes]]]:
        """State rebuilt from the event log alone, in the same shape as `state_tables()`."""
        with self.reader() as reader:
            view, problems = replay_rows(reader.raw_items(EVENTS))
        if problems:
            raise self._damaged(f"the event log does not replay: {'; '.join(problems[:3])}")
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
    if write.usage:
        count_usage(txn, dbs[RECORDS.name], dbs[USAGE.name], write.usage)
    return (Committed(last_seq=seq - 1 if applied else None, applied=len(applied)), None, tuple(applied)), seq


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
